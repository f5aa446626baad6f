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
from typing import Any, Callable, Dict, List, Optional

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
        return self[0]._done

    def result(self, timeout: Optional[float] = None) -> Any:
        batch, i = self
        values = batch.values
        if values is None:
            return batch.result_of(i, timeout)
        return values[i]

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        batch, i = self
        return batch.exception_of(i, timeout)


class _Batch:
    """Pipelined gets sent together as one get_many; its answer is shared out to each get's answer.

    `values` is set once the answer is decoded and holds no error; until then (or when some get
    failed) a get's answer asks result_of, which waits, decodes once for the whole batch and says
    which gets failed.
    """

    __slots__ = ("transport", "branch", "ids", "raw", "values", "_done", "_all", "_errors", "_split")

    def __init__(self, transport: "EmbeddedTransport", branch: Optional[str]) -> None:
        self.transport = transport
        self.branch = branch
        self.ids: List[str] = []
        self.raw: Optional[bytes] = None  # the answer line, until decode()
        self.values: Optional[List[Any]] = None
        self._done = False
        self._all: Optional[List[Any]] = None  # every value, errors or not
        self._errors: Optional[Dict[int, BaseException]] = None
        self._split: Optional[List[_Answer]] = None  # the gets resent one by one

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
        self.settle([None] * len(self.ids), dict.fromkeys(range(len(self.ids)), error))

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

    def result_of(self, i: int, timeout: Optional[float]) -> Any:
        self._ready(timeout)
        if self._split is not None:
            return self._split[i].result(timeout)
        error = self._errors.get(i) if self._errors else None
        if error is not None:
            raise error
        return self._all[i]  # type: ignore[index]

    def exception_of(self, i: int, timeout: Optional[float]) -> Optional[BaseException]:
        self._ready(timeout)
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
            if isinstance(result, list) and len(result) == len(self.ids):
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
        """A pipelined get (Pipeline.get's fast path): the id joins the get_many being gathered.

        `waits` is what a pipeline waits on when it ends: the first get of each batch goes in (waiting
        for it waits for its whole batch), so ending a pipeline costs a call per batch, not per get.
        """
        with self._lock:
            if self._closed or self._eof:
                raise self._gone()
            batch = self._batch
            if batch is None or batch.branch != branch:
                self._send_batch()
                batch = self._batch = _Batch(self, branch)
                if waits is not None:
                    waits.append(_Got((batch, 0)))
            ids = batch.ids
            ids.append(id)
            got = _Got((batch, len(ids) - 1))
            if len(ids) < _BATCH:
                return got
            self._send_batch()
        # The child answers this slice while later gets are gathered, instead of after the last one.
        self._push()
        return got

    def getter(self, waits: List[Any]) -> Callable[..., _Got]:
        """Pipeline.get for one pipeline: submit_get with the common case (the id joins the batch being
        gathered, which has room) done in a few bytecodes, since it runs once per get of a read pipeline.

        Everything else (a first get, another branch, a full batch, a closed connection, which leaves
        no batch gathering) takes submit_get.
        """
        lock = self._lock
        submit_get = self.submit_get
        last = _BATCH - 1

        def get(id: str, branch: Optional[str] = None) -> _Got:
            with lock:
                batch = self._batch
                if batch is not None and batch.branch == branch:
                    ids = batch.ids
                    n = len(ids)
                    if n < last:
                        ids.append(id)
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
                self._take(rest)
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
            while not self._eof:
                try:
                    data = os.read(self._rout, 1 << 20)
                except BlockingIOError:
                    break
                if not data:
                    self._eof = True
                    break
                self._take(data)
        finally:
            self._io.release()

    def _queue(self, op: str, params: Dict[str, Any], answer: Any) -> bool:
        """Queues one request line (lock held); True when enough is queued to send a slice."""
        rid = next(self._ids)
        self._pending[rid] = answer
        # Operation names are plain identifiers, so only the parameters need the encoder.
        line = ('{"id":%d,"op":"%s","params":%s}\n' % (rid, op, _encode(params))).encode()
        self._out.append(line)
        self._queued += len(line)
        return self._queued >= _SEND_AT

    def _send_batch(self) -> bool:
        """Queues the gets gathered so far (lock held)."""
        batch, self._batch = self._batch, None
        if batch is None:
            return False
        params: Dict[str, Any] = {"ids": batch.ids}
        if batch.branch is not None:
            params["branch"] = batch.branch
        return self._queue("get_many", params, batch)

    def flush(self) -> None:
        self.wait(None, None)

    def wait(self, answer: Optional[_Answer], timeout: Optional[float]) -> None:
        """Sends queued requests and reads answers until `answer` is settled (or, for None, until all are sent)."""
        with self._io:
            self._pump(answer, timeout)

    def _pump(self, answer: Optional[_Answer], timeout: Optional[float]) -> None:
        if self._rest:
            rest, self._rest = self._rest, b""
            self._take(rest)
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
                    try:
                        data = os.read(self._rout, 1 << 20)
                    except BlockingIOError:
                        continue
                    if data:
                        self._take(data)
                    else:
                        self._eof = True

    def _take_queued(self) -> bytes:
        with self._lock:
            self._send_batch()
            outgoing = b"".join(self._out)
            self._out = []
            self._queued = 0
        return outgoing

    def _take(self, data: bytes) -> None:
        if self._partial:
            data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        replies = []
        lazy = []
        for raw in lines:
            # A batch's answer of plain results ({"id":N,"result":[...) is matched by its id and
            # left undecoded; anything else (an error, item errors) is decoded now.
            if raw.startswith(b'{"id":'):
                comma = raw.find(b",", 6)
                if comma > 6 and raw.startswith(_LAZY_RESULT, comma + 1) and raw[6:comma].isdigit():
                    lazy.append((int(raw[6:comma]), raw))
                    continue
            try:
                replies.append(_decode(raw.decode("utf-8")))
            except ValueError:
                continue
        with self._lock:
            pending = self._pending
            for rid, raw in lazy:
                item = pending.get(rid)
                if isinstance(item, _Batch):
                    del pending[rid]
                    item.settle_lazily(raw)
                else:
                    try:
                        replies.append(_decode(raw.decode("utf-8")))
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
        if not err and isinstance(result, list) and len(result) == len(batch.ids):
            # A damaged document fails its own get only (docs/svc-embed-protocol.md, get_many).
            failed: Dict[int, BaseException] = {}
            for item in errors if isinstance(errors, list) else []:
                index = item.get("index") if isinstance(item, dict) else None
                if isinstance(index, int) and 0 <= index < len(batch.ids):
                    failed[index] = SvcError(item.get("code", "internal"), item.get("message", ""))
            batch.settle(result, failed)
            return
        # One bad id fails a get_many whole; sent one by one, each get gets its own answer or error.
        answers = [_Answer(self) for _ in batch.ids]
        with self._lock:
            for answer, id in zip(answers, batch.ids):
                params: Dict[str, Any] = {"id": id}
                if batch.branch is not None:
                    params["branch"] = batch.branch
                self._queue("get", params, answer)
        batch.split(answers)

    def _gone(self) -> SvcError:
        return SvcError("closed", "this svc connection is closed") if self._closed else SvcError("unavailable", self._exit_message())

    _partial = b""

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
