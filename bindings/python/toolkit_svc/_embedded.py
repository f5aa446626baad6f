from __future__ import annotations

import itertools
import json
import os
import select
import shlex
import subprocess
import threading

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]
from typing import Any, Dict, List, Optional

from ._client import Client, Transport
from ._errors import SvcError

# One encoder for every request: json.dumps with options builds a new encoder per call.
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_decode = json.JSONDecoder().decode
_SEND_AT = 256 * 1024
# Consecutive pipelined gets travel as one get_many of at most this many ids.
_BATCH = 512
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

    __slots__ = ("_transport", "_done", "_value", "_error", "_lazy")

    def __init__(self, transport: "EmbeddedTransport") -> None:
        self._transport = transport
        self._done = False
        self._value: Any = None
        self._error: Optional[BaseException] = None
        # The batch whose answer line is not decoded yet (it holds no error: see _take).
        self._lazy: Optional[_Batch] = None

    def done(self) -> bool:
        return self._done

    def result(self, timeout: Optional[float] = None) -> Any:
        if not self._done:
            self._transport.wait(self, timeout)
        if self._lazy is not None:
            self._lazy.decode()
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        if not self._done:
            self._transport.wait(self, timeout)
        return self._error


class _Batch:
    """Pipelined gets sent together as one get_many; its answer is shared out to each get's answer."""

    __slots__ = ("branch", "answers", "ids", "raw")

    def __init__(self, branch: Optional[str]) -> None:
        self.branch = branch
        self.answers: List[_Answer] = []
        self.ids: List[str] = []
        self.raw: Optional[bytes] = None  # the answer line, until decode()

    def settle_lazily(self, raw: bytes) -> None:
        self.raw = raw
        for answer in self.answers:
            answer._lazy = self
            answer._done = True

    def decode(self) -> None:
        """Decodes the answer line once (one json.loads for the whole batch) and shares out the documents."""
        with _decoding:
            raw, self.raw = self.raw, None
            if raw is None:
                return  # another thread decoded it while this one waited
            try:
                result = _decode(raw.decode("utf-8")).get("result")
            except (ValueError, AttributeError):
                result = None
            if isinstance(result, list) and len(result) == len(self.answers):
                for answer, value in zip(self.answers, result):
                    answer._value = value
                    answer._lazy = None
            else:
                for answer in self.answers:
                    answer._error = SvcError("internal", "the svc child process sent a malformed get_many answer")
                    answer._lazy = None


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
        # stderr is drained so a chatty child never blocks on a full pipe.
        threading.Thread(target=self._proc.stderr.read, daemon=True).start()

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

    def submit(self, op: str, params: Dict[str, Any], flush: bool = True) -> _Answer:
        # A pipeline passes flush=False: its requests leave together when an answer is first asked for,
        # and a run of its gets leaves as one get_many (one line, one answer to decode).
        answer = _Answer(self)
        with self._lock:
            if self._closed or self._eof:
                raise SvcError("closed" if self._closed else "unavailable", "this svc connection is closed" if self._closed else "the svc child process has exited")
            if not flush and op == "get" and isinstance(params.get("id"), str) and len(params) <= 2:
                branch = params.get("branch")
                batch = self._batch
                if batch is None or batch.branch != branch:
                    self._send_batch()
                    batch = self._batch = _Batch(branch)
                batch.answers.append(answer)
                batch.ids.append(params["id"])
                full = len(batch.ids) >= _BATCH and self._send_batch()
            else:
                self._send_batch()
                full = self._queue(op, params, answer)
        if full:
            # A long pipeline goes out in slices so the child works while later requests are encoded.
            self.flush()
        return answer

    def submit_get(self, id: str, branch: Optional[str]) -> _Answer:
        """A pipelined get (Pipeline.get's fast path): the id joins the get_many being gathered."""
        answer = _Answer(self)
        with self._lock:
            if self._closed or self._eof:
                raise SvcError("closed" if self._closed else "unavailable", "this svc connection is closed" if self._closed else "the svc child process has exited")
            batch = self._batch
            if batch is None or batch.branch != branch:
                self._send_batch()
                batch = self._batch = _Batch(branch)
            batch.answers.append(answer)
            ids = batch.ids
            ids.append(id)
            full = len(ids) >= _BATCH
            if full:
                self._send_batch()
        if full:
            # The child answers this slice while later gets are gathered, instead of after the last one.
            self._push()
        return answer

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
        if len(batch.ids) == 1:
            params: Dict[str, Any] = {"id": batch.ids[0]}
            if batch.branch is not None:
                params["branch"] = batch.branch
            return self._queue("get", params, batch.answers[0])
        params = {"ids": batch.ids}
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
            if isinstance(answer, _Batch):
                self._settle_batch(answer, reply.get("result"), err, reply.get("errors"))
            elif err:
                answer._error = SvcError(err.get("code", "internal"), err.get("message", ""))
                answer._done = True
            else:
                answer._value = reply.get("result")
                answer._done = True

    def _settle_batch(self, batch: _Batch, result: Any, err: Any, errors: Any = None) -> None:
        if not err and isinstance(result, list) and len(result) == len(batch.answers):
            for answer, value in zip(batch.answers, result):
                answer._value = value
                answer._done = True
            # A damaged document fails its own get only (docs/svc-embed-protocol.md, get_many).
            for item in errors if isinstance(errors, list) else []:
                index = item.get("index") if isinstance(item, dict) else None
                if isinstance(index, int) and 0 <= index < len(batch.answers):
                    batch.answers[index]._error = SvcError(item.get("code", "internal"), item.get("message", ""))
            return
        # One bad id fails a get_many whole; sent one by one, each get gets its own answer or error.
        with self._lock:
            for answer, id in zip(batch.answers, batch.ids):
                params: Dict[str, Any] = {"id": id}
                if batch.branch is not None:
                    params["branch"] = batch.branch
                self._queue("get", params, answer)

    _partial = b""

    def _fail_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        for item in pending.values():
            for answer in item.answers if isinstance(item, _Batch) else [item]:
                answer._error = SvcError("unavailable", "the svc child process has exited")
                answer._done = True

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
                    self._pump(last.answers[-1] if isinstance(last, _Batch) else last, None)
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
