from __future__ import annotations

import itertools
import json
import os
import shlex
import subprocess
import threading
from concurrent.futures import Future
from typing import Any, Dict, List, Optional

from ._client import Client, Transport
from ._errors import SvcError


def _command() -> List[str]:
    # TOOLKIT_BIN names the toolkit executable (a path, or a command line such as "node /x/bin/run.js").
    return shlex.split(os.environ.get("TOOLKIT_BIN", "toolkit"))


class EmbeddedTransport(Transport):
    """`toolkit svc embed` as a child process, spoken to one JSON line per request (docs/svc-embed-protocol.md)."""

    def __init__(self, data_dir: str, command: Optional[List[str]] = None) -> None:
        argv = (command or _command()) + ["svc", "embed", "--data-dir", os.fspath(data_dir)]
        try:
            self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except FileNotFoundError as e:
            raise SvcError("unavailable", f"cannot start {argv[0]!r}: install toolkit or set TOOLKIT_BIN") from e
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        self._stdin = self._proc.stdin
        self._stdout = self._proc.stdout
        first = self._stdout.readline()
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
        self._pending: Dict[int, "Future[Any]"] = {}
        self._lock = threading.Lock()
        self._closed = False
        # stderr is drained so a chatty child never blocks on a full pipe.
        threading.Thread(target=self._proc.stderr.read, daemon=True).start()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def submit(self, op: str, params: Dict[str, Any]) -> "Future[Any]":
        future: "Future[Any]" = Future()
        line = None
        with self._lock:
            if self._closed:
                raise SvcError("closed", "this svc connection is closed")
            rid = next(self._ids)
            self._pending[rid] = future
            line = json.dumps({"id": rid, "op": op, "params": params}, separators=(",", ":")).encode() + b"\n"
            try:
                self._stdin.write(line)
                self._stdin.flush()
            except (BrokenPipeError, OSError) as e:
                self._pending.pop(rid, None)
                raise SvcError("unavailable", "the svc child process has exited") from e
        return future

    def _read(self) -> None:
        for raw in self._stdout:
            try:
                reply = json.loads(raw)
            except ValueError:
                continue
            with self._lock:
                future = self._pending.pop(reply.get("id"), None)
            if future is None:
                continue
            err = reply.get("error")
            if err:
                future.set_exception(SvcError(err.get("code", "internal"), err.get("message", "")))
            else:
                future.set_result(reply.get("result"))
        with self._lock:
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_exception(SvcError("unavailable", "the svc child process has exited"))

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._stdin.close()
            except OSError:
                pass
        # The child flushes its write-ahead log into Git before it exits.
        self._proc.wait(timeout=120)
        self._reader.join(timeout=10)


def open(data_dir: str, *, command: Optional[List[str]] = None) -> Client:
    """Opens a data directory in a `toolkit svc embed` child process (no ports are opened)."""
    return Client(EmbeddedTransport(data_dir, command))
