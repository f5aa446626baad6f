from __future__ import annotations

import gc
import itertools
import json
import os
import select
import shlex
import signal
import subprocess
import threading

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from ._client import Client, Transport
from ._errors import SvcError

# One encoder for every request: json.dumps with options builds a new encoder per call.
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_decode = json.JSONDecoder().decode
_SEND_AT = 256 * 1024
# Consecutive pipelined gets travel as one get_many of at most this many ids.
_BATCH = 2048
_PIPE_BYTES = 1024 * 1024
# A get_many answer that is all results ({"id":N,"result":[...]} with nothing after the result) is
# kept as bytes until one of its gets is asked for its value (docs/svc-embed-protocol.md).
_LAZY_RESULT = b'"result":['
_ID = b'{"id":'
_READ_BYTES = 1 << 20
_decoding = threading.Lock()


class _Answer:
    """A pending answer (the subset of concurrent.futures.Future the API promises: result, exception, done).

    Asking for it sends whatever requests are still buffered and reads answers in the asking thread,
    so a pipeline of thousands of calls costs no thread switches.
    """

    __slots__ = ("_transport", "_done", "_value", "_error")

    def __init__(self, transport: "EmbeddedTransport") -> None:
        self._transport = transport
        self._done = False
        self._value: Any = None
        self._error: Optional[BaseException] = None

    def done(self) -> bool:
        return self._done

    def result(self, timeout: Optional[float] = None) -> Any:
        if not self._done:
            self._transport.wait(self, timeout)
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        if not self._done:
            self._transport.wait(self, timeout)
        return self._error


class _Got(tuple):
    """A pipelined get's answer: the pair (its batch, its place in the batch), made without a Python
    __init__ and settled with its batch, so a get costs no object of its own to create or settle.
    Same API as _Answer: result, exception, done."""

    __slots__ = ()

    def done(self) -> bool:
        batch, i = self
        return batch.done_of(i)

    def result(self, timeout: Optional[float] = None) -> Any:
        batch, i = self
        try:
            # None until the batch is decoded without errors (TypeError); a get gathered after its
            # batch left (another thread sent it meanwhile) lies past the end (IndexError).
            return batch.values[i]  # type: ignore[index]
        except (TypeError, IndexError):
            return batch.result_of(i, timeout)

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        batch, i = self
        return batch.exception_of(i, timeout)


class _Batch:
    """Pipelined gets sent together as one get_many; its answer is shared out to each get's answer.

    Gets take their place with `claim` (one atomic step, so gets gathered by several threads never
    share a place) and store their id there, without the transport's lock. `seal` (lock held)
    fixes which ids leave: those claimed and stored by then. A get that claims its place after that,
    or had not stored its id yet (both only when another thread sends the batch meanwhile), is
    sent on its own when it is asked for.

    `values` is set once the answer is decoded and holds no error; until then (or when some get
    failed) a get's answer asks result_of, which waits, decodes once for the whole batch and says
    which gets failed.
    """

    __slots__ = ("transport", "branch", "owner", "claim", "ids", "sent", "sent_ids", "raw", "values", "_done", "_all", "_errors", "_split", "_late")

    def __init__(self, transport: "EmbeddedTransport", branch: Optional[str], owner: Optional[List[Any]] = None) -> None:
        self.transport = transport
        self.branch = branch
        self.owner = owner  # the pipeline (its list of waits) whose gets gather here without the lock
        self.claim: Callable[[], int] = itertools.count().__next__
        self.ids: List[Optional[str]] = [None] * _BATCH
        self.sent = 0  # how many of the ids left, once sealed
        self.sent_ids: List[str] = []
        self.raw: Optional[bytes] = None  # the answer line, until decode()
        self.values: Optional[List[Any]] = None
        self._done = False
        self._all: Optional[List[Any]] = None  # every value, errors or not
        self._errors: Optional[Dict[int, BaseException]] = None
        self._split: Optional[List[_Answer]] = None  # the gets resent one by one
        self._late: Optional[Dict[int, _Answer]] = None  # gets that missed the batch, sent alone

    def seal(self) -> List[str]:
        """The ids that leave in the get_many (transport lock held): every place claimed so far, up
        to the first whose id is not stored yet (a thread between its claim and its store)."""
        claimed = self.claim()
        # The pipeline's waits hold this batch's first get: holding the pipeline any longer would make
        # a cycle, left for the garbage collector with every document of the batch.
        self.owner = None
        # A full batch sends its list of places itself (no later get can store into it: every place is taken).
        ids = self.ids if claimed >= _BATCH else self.ids[:claimed]
        if None in ids:
            ids = ids[: ids.index(None)]
        self.sent = len(ids)
        self.sent_ids = ids  # type: ignore[assignment]
        return ids  # type: ignore[return-value]

    def settle_lazily(self, raw: bytes) -> None:
        self.raw = raw
        self._done = True

    def settle(self, values: Any, errors: Optional[Dict[int, BaseException]] = None) -> None:
        self._all = values
        self._errors = errors or None
        if not errors:
            self.values = values
        self._done = True

    def fail(self, error: BaseException) -> None:
        self.settle([None] * self.sent, dict.fromkeys(range(self.sent), error))

    def split(self, answers: List[_Answer]) -> None:
        self._split = answers
        self._done = True

    def _ready(self, timeout: Optional[float]) -> None:
        if not self._done:
            self.transport.wait(self, timeout)
        if self.raw is not None:
            self.decode()
        for answer in self._split or ():
            if not answer._done:
                self.transport.wait(answer, timeout)

    def _late_answer(self, i: int) -> _Answer:
        """The answer of a get that missed the get_many (see the class): asked for on its own, once."""
        late = self._late
        if late is None:
            late = self._late = {}
        answer = late.get(i)
        if answer is None:
            params: Dict[str, Any] = {"id": self.ids[i]}
            if self.branch is not None:
                params["branch"] = self.branch
            answer = late[i] = self.transport.submit("get", params)
        return answer

    def done_of(self, i: int) -> bool:
        if not self._done:
            return False
        return i < self.sent or self._late_answer(i).done()

    def result_of(self, i: int, timeout: Optional[float]) -> Any:
        self._ready(timeout)
        if i >= self.sent:
            return self._late_answer(i).result(timeout)
        if self._split is not None:
            return self._split[i].result(timeout)
        error = self._errors.get(i) if self._errors else None
        if error is not None:
            raise error
        return self._all[i]  # type: ignore[index]

    def exception_of(self, i: int, timeout: Optional[float]) -> Optional[BaseException]:
        self._ready(timeout)
        if i >= self.sent:
            return self._late_answer(i).exception(timeout)
        if self._split is not None:
            return self._split[i].exception(timeout)
        return self._errors.get(i) if self._errors else None

    def decode(self) -> None:
        """Decodes the answer line once (one json.loads for the whole batch)."""
        with _decoding:
            raw, self.raw = self.raw, None
            if raw is None:
                return  # another thread decoded it while this one waited
            # Decoding a batch makes thousands of dicts at once, each allocation counting towards a
            # collection that would walk them (and the earlier batches' documents): none of them can
            # form a cycle, so the collector waits until the batch is decoded (about 10% of a pass).
            paused = gc.isenabled()
            if paused:
                gc.disable()
            try:
                result = _decode(raw.decode("utf-8")).get("result")
            except (ValueError, AttributeError):
                result = None
            finally:
                if paused:
                    gc.enable()
            if isinstance(result, list) and len(result) == self.sent:
                self.settle(result)
            else:
                self.fail(SvcError("internal", "the svc child process sent a malformed get_many answer"))


def _widen(fd: int) -> None:
    # Larger pipes let a long pipeline flow with fewer switches between this process and the child
    # (Linux only; elsewhere, and above the system's limit, the default size stays).
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if setsize is None:
        return
    try:
        fcntl.fcntl(fd, setsize, _PIPE_BYTES)
    except OSError:
        pass


def _command() -> List[str]:
    # TOOLKIT_BIN names the toolkit executable (a path, or a command line such as "node /x/bin/run.js").
    return shlex.split(os.environ.get("TOOLKIT_BIN", "toolkit"))


class EmbeddedTransport(Transport):
    """`toolkit svc embed` as a child process, spoken to one JSON line per request (docs/svc-embed-protocol.md).

    Requests are queued as bytes and answers read by whichever thread waits for one (under one
    lock), both through non-blocking pipes: a big pipeline is written while its answers are read,
    so neither side's pipe buffer can fill up and stall the other.
    """

    def __init__(self, data_dir: str, command: Optional[List[str]] = None) -> None:
        argv = (command or _command()) + ["svc", "embed", "--data-dir", os.fspath(data_dir)]
        try:
            self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        except FileNotFoundError as e:
            raise SvcError("unavailable", f"cannot start {argv[0]!r}: install toolkit or set TOOLKIT_BIN") from e
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        first = self._read_first_line()
        ready: Dict[str, Any] = {}
        try:
            ready = json.loads(first) if first else {}
        except ValueError:
            pass
        if not ready.get("ready"):
            err = ready.get("error") or {}
            stderr = self._proc.stderr.read().decode("utf-8", "replace").strip()
            self._proc.wait()
            raise SvcError(err.get("code", "unavailable"), err.get("message") or stderr or "svc embed did not start")
        self.pid: int = ready["pid"]
        self._ids = itertools.count(1)
        self._pending: Dict[int, Any] = {}  # an _Answer, or a _Batch for a get_many
        self._out: List[bytes] = []
        self._queued = 0
        self._batch: Optional[_Batch] = None
        self._lock = threading.Lock()  # guards _pending, _out, _closed
        self._io = threading.Lock()  # one thread at a time pumps the pipes
        self._closed = False
        self._eof = False
        self._partial: List[bytes] = []  # the start of a line whose end has not arrived yet
        self._win = self._proc.stdin.fileno()
        self._rout = self._proc.stdout.fileno()
        os.set_blocking(self._win, False)
        os.set_blocking(self._rout, False)
        _widen(self._win)
        _widen(self._rout)
        # stderr is drained so a chatty child never blocks on a full pipe; its last lines say why it died.
        self._stderr_tail = b""
        self._stderr_done = threading.Event()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        stream = self._proc.stderr
        assert stream
        try:
            while True:
                chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
                if not chunk:
                    break
                self._stderr_tail = (self._stderr_tail + chunk)[-4096:]
        except (OSError, ValueError):
            pass
        finally:
            self._stderr_done.set()

    def _exit_message(self) -> str:
        """Says how the child ended: its exit status or the signal that killed it, and its last stderr line."""
        try:
            code = self._proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            code = None
        self._stderr_done.wait(1)
        if code is None:
            why = ""
        elif code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            why = f" (killed by {name})"
        else:
            why = f" (exit status {code})"
        lines = [line.strip() for line in self._stderr_tail.decode("utf-8", "replace").splitlines() if line.strip()]
        return f"the svc child process has exited{why}" + (f": {lines[-1]}" if lines else "")

    def _read_first_line(self) -> bytes:
        assert self._proc.stdout
        self._rest = b""
        chunks: List[bytes] = []
        while True:
            chunk = self._proc.stdout.read(65536)
            if not chunk:
                return b"".join(chunks)
            nl = chunk.find(b"\n")
            if nl >= 0:
                chunks.append(chunk[:nl])
                self._rest = chunk[nl + 1 :]
                return b"".join(chunks)
            chunks.append(chunk)

    def submit(self, op: str, params: Dict[str, Any], flush: bool = True) -> Any:
        # A pipeline passes flush=False: its requests leave together when an answer is first asked for,
        # and a run of its gets leaves as one get_many (one line, one answer to decode).
        if not flush and op == "get" and isinstance(params.get("id"), str) and len(params) <= 2 and isinstance(params.get("branch", ""), str):
            return self.submit_get(params["id"], params.get("branch"))
        answer = _Answer(self)
        with self._lock:
            if self._closed or self._eof:
                raise self._gone()
            self._send_batch()
            full = self._queue(op, params, answer)
        if full:
            # A long pipeline goes out in slices so the child works while later requests are encoded.
            self.flush()
        return answer

    def submit_get(self, id: str, branch: Optional[str] = None, waits: Optional[List[Any]] = None) -> _Got:
        """A pipelined get (Pipeline.get's way when its batch is full or gone): the id joins the
        get_many being gathered for `waits` (the pipeline's list of what it waits on), or a new one.

        The first get of each batch goes into `waits` (waiting for it waits for its whole batch),
        so ending a pipeline costs a call per batch, not per get.
        """
        with self._lock:
            if self._closed or self._eof:
                raise self._gone()
            batch = self._batch
            n = _BATCH
            if batch is not None and batch.owner is waits and batch.branch == branch:
                n = batch.claim()
            if n >= _BATCH:
                self._send_batch()
                batch = self._batch = _Batch(self, branch, waits)
                if waits is not None:
                    waits.append(_Got((batch, 0)))
                n = batch.claim()
            batch.ids[n] = id
            got = _Got((batch, n))
            if n < _BATCH - 1:
                return got
            self._send_batch()
        # The child answers this slice while later gets are gathered, instead of after the last one.
        self._push()
        return got

    def _send_full(self, batch: _Batch) -> None:
        with self._lock:
            if self._batch is batch:
                self._send_batch()
        self._push()

    def getter(self, waits: List[Any]) -> Callable[..., _Got]:
        """Pipeline.get for one pipeline: the common case (the pipeline's batch is the one being
        gathered and has room) in a few bytecodes and without the lock, since it runs once per get
        of a read pipeline; everything else takes submit_get.

        Without the lock another thread may send the batch between the check and the claim: the
        get then lies past what was sent and is asked for on its own (_Batch.seal).
        """
        transport = self
        submit_get = self.submit_get
        send_full = self._send_full
        last = _BATCH - 1

        def get(id: str, branch: Optional[str] = None) -> _Got:
            batch = transport._batch
            if batch is not None and batch.owner is waits and batch.branch == branch:
                n = batch.claim()
                if n < last:
                    batch.ids[n] = id
                    return _Got((batch, n))
                if n == last:
                    batch.ids[n] = id
                    send_full(batch)
                    return _Got((batch, n))
            return submit_get(id, branch, waits)

        return get

    def _push(self) -> None:
        """Writes what the pipe takes now and reads the answers already there, without waiting for either."""
        if not self._io.acquire(blocking=False):
            return  # another thread is pumping the pipes and will send what is queued
        try:
            if self._rest:
                rest, self._rest = self._rest, b""
                self._take(rest, len(rest))
            outgoing = self._take_queued()
            if outgoing:
                try:
                    n = os.write(self._win, outgoing)
                except BlockingIOError:
                    n = 0
                except OSError:
                    self._eof = True
                    n = len(outgoing)
                if n < len(outgoing):
                    with self._lock:
                        self._out.insert(0, outgoing[n:])
                        self._queued += len(outgoing) - n
            while not self._eof and self._read():
                pass
        finally:
            self._io.release()

    def _queue(self, op: str, params: Dict[str, Any], answer: Any) -> bool:
        """Queues one request line (lock held); True when enough is queued to send a slice."""
        # Operation names are plain identifiers, so only the parameters need the encoder.
        line = ('{"id":%d,"op":"%s","params":%s}\n' % (rid := next(self._ids), op, _encode(params))).encode()
        self._pending[rid] = answer
        self._out.append(line)
        self._queued += len(line)
        return self._queued >= _SEND_AT

    def _send_batch(self) -> bool:
        """Queues the gets gathered so far (lock held)."""
        batch, self._batch = self._batch, None
        if batch is None:
            return False
        ids = batch.seal()
        try:
            text = "".join(ids)
        except TypeError:  # an id that is not text: the encoder writes it, the child refuses it
            text = '"'
        if batch.branch is None and '"' not in text and "\\" not in text and text.isprintable():
            # Ids that JSON writes as they are (the common case) need no encoder: 50 ns less per get.
            rid = next(self._ids)
            self._pending[rid] = batch
            line = ('{"id":%d,"op":"get_many","params":{"ids":["%s"]}}\n' % (rid, '","'.join(ids))).encode()
            self._out.append(line)
            self._queued += len(line)
            return self._queued >= _SEND_AT
        params: Dict[str, Any] = {"ids": ids}
        if batch.branch is not None:
            params["branch"] = batch.branch
        try:
            return self._queue("get_many", params, batch)
        except (TypeError, ValueError) as e:  # not JSON at all: nothing leaves, each get raises
            batch.fail(SvcError("invalid_argument", f"a get's id must be text: {e}"))
            return False

    def flush(self) -> None:
        self.wait(None, None)

    def wait(self, answer: Optional[_Answer], timeout: Optional[float]) -> None:
        """Sends queued requests and reads answers until `answer` is settled (or, for None, until all are sent)."""
        with self._io:
            self._pump(answer, timeout)

    def _pump(self, answer: Optional[_Answer], timeout: Optional[float]) -> None:
        if self._rest:
            rest, self._rest = self._rest, b""
            self._take(rest, len(rest))
        outgoing = self._take_queued()
        poller = select.poll()
        poller.register(self._rout, select.POLLIN)
        writing = False
        wait_ms = None if timeout is None else int(timeout * 1000)
        while outgoing or (answer is not None and not answer._done):
            if not outgoing:
                # Requests queued while answers were read (a batch answered with an error is resent get by get).
                outgoing = self._take_queued()
            if self._eof:
                self._fail_pending()
                return
            if bool(outgoing) != writing:
                if outgoing:
                    poller.register(self._win, select.POLLOUT)
                else:
                    poller.unregister(self._win)
                writing = bool(outgoing)
            events = poller.poll(wait_ms)
            if not events:
                raise SvcError("timeout", "no answer from the svc child process in time")
            for fd, _ in events:
                if fd == self._win:
                    try:
                        n = os.write(self._win, outgoing[: 1 << 20])
                    except BlockingIOError:
                        continue
                    except OSError:
                        self._eof = True
                        continue
                    outgoing = outgoing[n:]
                else:
                    self._read()

    def _take_queued(self) -> bytes:
        with self._lock:
            self._send_batch()
            outgoing = b"".join(self._out)
            self._out = []
            self._queued = 0
        return outgoing

    def _read(self) -> bool:
        """Reads what the child has written and takes its answers; False when nothing was there (or
        at the end of the child's output).

        A fresh bytes object per read, not one reused buffer: reading into a reused bytearray made
        decoding 15% slower (larger allocations then came from fresh pages)."""
        try:
            data = os.read(self._rout, _READ_BYTES)
        except BlockingIOError:
            return False
        if not data:
            self._eof = True
            return False
        self._take(data, len(data))
        return True

    def _take(self, data: bytes, end: int) -> None:
        """Takes the answer lines in data[:end]."""
        view = memoryview(data)
        start = 0
        nl = data.find(b"\n", 0, end)
        if nl < 0:
            self._partial.append(bytes(view[:end]))
            view.release()
            return
        replies = []
        lazy: List[Tuple[int, bytes]] = []
        while nl >= 0:
            if self._partial:
                self._partial.append(bytes(view[start:nl]))
                line: Union[bytes, memoryview] = b"".join(self._partial)
                self._partial = []
            else:
                line = view[start:nl]
            start = nl + 1
            nl = data.find(b"\n", start, end)
            # A batch's answer of plain results ({"id":N,"result":[...) is matched by its id and
            # kept as bytes until asked for (text made just before json reads it is still in the
            # processor's cache); anything else (an error, item errors) is decoded now.
            if line[:6] == _ID:
                head = bytes(line[6:32])
                comma = head.find(b",")
                if comma > 0 and head.startswith(_LAZY_RESULT, comma + 1) and head[:comma].isdigit():
                    lazy.append((int(head[:comma]), bytes(line)))
                    continue
            try:
                replies.append(_decode(str(line, "utf-8")))
            except ValueError:
                continue
        if start < end:
            self._partial.append(bytes(view[start:end]))
        view.release()
        with self._lock:
            pending = self._pending
            for rid, text in lazy:
                item = pending.get(rid)
                if isinstance(item, _Batch):
                    del pending[rid]
                    item.settle_lazily(text)
                else:
                    try:
                        replies.append(_decode(str(text, "utf-8")))
                    except ValueError:
                        pass
            answers = [(pending.pop(reply.get("id"), None), reply) for reply in replies]
        for answer, reply in answers:
            if answer is None:
                continue
            err = reply.get("error")
            if type(answer) is _Batch:
                self._settle_batch(answer, reply.get("result"), err, reply.get("errors"))
            elif err:
                answer._error = SvcError(err.get("code", "internal"), err.get("message", ""))
                answer._done = True
            else:
                answer._value = reply.get("result")
                answer._done = True

    def _settle_batch(self, batch: _Batch, result: Any, err: Any, errors: Any = None) -> None:
        if not err and isinstance(result, list) and len(result) == len(batch.sent_ids):
            # A damaged document fails its own get only (docs/svc-embed-protocol.md, get_many).
            failed: Dict[int, BaseException] = {}
            for item in errors if isinstance(errors, list) else []:
                index = item.get("index") if isinstance(item, dict) else None
                if isinstance(index, int) and 0 <= index < len(batch.sent_ids):
                    failed[index] = SvcError(item.get("code", "internal"), item.get("message", ""))
            batch.settle(result, failed)
            return
        # One bad id fails a get_many whole; sent one by one, each get gets its own answer or error.
        answers = [_Answer(self) for _ in batch.sent_ids]
        with self._lock:
            for answer, id in zip(answers, batch.sent_ids):
                params: Dict[str, Any] = {"id": id}
                if batch.branch is not None:
                    params["branch"] = batch.branch
                self._queue("get", params, answer)
        batch.split(answers)

    def _gone(self) -> SvcError:
        return SvcError("closed", "this svc connection is closed") if self._closed else SvcError("unavailable", self._exit_message())

    def _fail_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        message = self._exit_message()
        for item in pending.values():
            if type(item) is _Batch:
                item.fail(SvcError("unavailable", message))
            else:
                item._error = SvcError("unavailable", message)
                item._done = True

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
        # Answers still owed are read first, so nothing queued is lost.
        with self._io:
            while not self._eof:
                with self._lock:
                    self._send_batch()
                    last = self._pending[max(self._pending)] if self._pending else None
                if last is None:
                    break
                try:
                    self._pump(last, None)
                except SvcError:
                    break
            with self._lock:
                self._closed = True
            try:
                self._proc.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass
        # The child flushes its write-ahead log into Git before it exits.
        self._proc.wait(timeout=120)
        self._proc.stdout.close()  # type: ignore[union-attr]


def open(data_dir: str, *, command: Optional[List[str]] = None) -> Client:
    """Opens a data directory in a `toolkit svc embed` child process (no ports are opened)."""
    return Client(EmbeddedTransport(data_dir, command))
