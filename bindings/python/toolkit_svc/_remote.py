from __future__ import annotations

import json
import os
import uuid
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Dict, Optional, Tuple

from ._client import Client, Transport
from ._errors import SvcError

Route = Tuple[str, str, Dict[str, Any], Optional[Any]]


def _q(params: Dict[str, Any], *names: str, rename: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    rename = rename or {}
    return {rename.get(n, n): params[n] for n in names if params.get(n) is not None}


def _doc_path(params: Dict[str, Any], suffix: str = "") -> str:
    return "/api/v1/documents/" + urllib.parse.quote(params["id"], safe=":") + suffix


# Each operation of the embedded protocol as a REST request: (method, path, query, body).
ROUTES: Dict[str, Callable[[Dict[str, Any]], Route]] = {
    "put": lambda p: ("PUT", _doc_path(p), _q(p, "branch"), p["doc"]),
    "get": lambda p: ("GET", _doc_path(p), _q(p, "branch"), None),
    "delete": lambda p: ("DELETE", _doc_path(p), _q(p, "branch"), None),
    "get_as_of": lambda p: ("GET", _doc_path(p, "/as-of"), _q(p, "commit", "time", "branch"), None),
    "history": lambda p: ("GET", _doc_path(p, "/history"), _q(p, "limit", "cursor", "branch"), None),
    "diff": lambda p: ("GET", _doc_path(p, "/diff"), _q(p, "from", "to", "branch"), None),
    "list": lambda p: ("GET", "/api/v1/documents", _q(p, "prefix", "table", "limit", "cursor", "branch"), None),
    "search": lambda p: ("GET", "/api/v1/search", _q(p, "query", "limit", "offset", "table", "branch", rename={"query": "q"}), None),
    "query": lambda p: ("POST", "/api/v1/query", {}, p),
    "branches": lambda p: ("GET", "/api/v1/branches", {}, None),
    "create_branch": lambda p: ("POST", "/api/v1/branches", {}, p),
    "remove_branch": lambda p: ("DELETE", "/api/v1/branches/" + urllib.parse.quote(p["name"], safe=""), {}, None),
    "create_backup": lambda p: ("POST", "/api/v1/backup", {}, p),
    "export_snapshot": lambda p: ("POST", "/api/v1/export", {}, p),
    # The file is uploaded; a running server imports a snapshot, and refuses a restore (it would
    # replace the database under its clients) with a "conflict" error saying how to restore.
    "import_snapshot": lambda p: ("POST", "/api/v1/import", {}, _Upload(p["input"], {"verify": "true" if p.get("verify") else "false"})),
    "restore_backup": lambda p: ("POST", "/api/v1/restore", {}, _Upload(p["input"], {"format": p["format"]} if p.get("format") else {})),
}


class _Upload:
    """A local file sent as multipart/form-data (`file`, plus plain fields)."""

    def __init__(self, path: str, fields: Dict[str, str]) -> None:
        self.path = path
        self.fields = fields

    def encode(self) -> Tuple[bytes, str]:
        boundary = "toolkit-svc-" + uuid.uuid4().hex
        try:
            with open(self.path, "rb") as f:
                content = f.read()
        except OSError as e:
            raise SvcError("invalid_argument", f"cannot read {self.path}: {e.strerror}") from None
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in self.fields.items()
        ]
        name = os.path.basename(self.path).replace('"', "")
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode())
        return b"".join(parts) + content + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"

# REST wraps some answers; the embedded protocol gives the engine's value itself.
UNWRAP = {"branches": "branches", "diff": "changes"}


class RemoteTransport(Transport):
    """The same operations over a running server's REST API."""

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 60.0, workers: int = 8) -> None:
        self._base = url.rstrip("/")
        self._headers = {"Content-Type": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._timeout = timeout
        self._pool = ThreadPoolExecutor(max_workers=workers)

    def submit(self, op: str, params: Dict[str, Any], flush: bool = True) -> "Future[Any]":
        route = ROUTES.get(op)
        if route is None:
            future: "Future[Any]" = Future()
            future.set_exception(SvcError("invalid_argument", f"{op} is not available over REST; open the data directory with toolkit_svc.open()"))
            return future
        return self._pool.submit(self._request, op, *route(params))

    def _request(self, op: str, method: str, path: str, query: Dict[str, Any], body: Optional[Any]) -> Any:
        url = self._base + path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = self._headers
        if isinstance(body, _Upload):
            data, content_type = body.encode()
            headers = {**headers, "Content-Type": content_type}
        else:
            data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as res:
                answer = json.loads(res.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                err = json.loads(e.read()).get("error", {})
            except ValueError:
                err = {}
            # SQL errors carry PostgreSQL's SQLSTATE, as they do embedded.
            code = err.get("sqlstate") or err.get("code", "internal")
            if e.code == 404 and code == "not_found" and op in ("get", "get_as_of"):
                return None
            if e.code == 404 and code == "not_found" and op == "delete":
                return {"id": path.rsplit("/", 1)[-1], "existed": False}
            raise SvcError(code, err.get("message", f"HTTP {e.code}")) from None
        except (urllib.error.URLError, OSError) as e:
            raise SvcError("unavailable", f"cannot reach svc at {self._base}: {getattr(e, 'reason', e)}") from None
        key = UNWRAP.get(op)
        return answer[key] if key else answer

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def connect(url: str, token: Optional[str] = None, *, timeout: float = 60.0) -> Client:
    """Reaches a running `toolkit svc server` over its REST API."""
    return Client(RemoteTransport(url, token, timeout))
