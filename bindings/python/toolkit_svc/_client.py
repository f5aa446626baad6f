from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Dict, List, Optional, Union

Json = Any
Doc = Dict[str, Json]


class Transport:
    """How a client reaches svc: `submit` sends one operation and returns a future of its result."""

    def submit(self, op: str, params: Dict[str, Json], flush: bool = True) -> "Future[Json]":
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


def _drop_none(params: Dict[str, Json]) -> Dict[str, Json]:
    return {k: v for k, v in params.items() if v is not None}


class _Operations:
    """The API, shared by Client (waits for each answer) and Pipeline (returns futures)."""

    def _call(self, op: str, params: Dict[str, Json]) -> Any:
        raise NotImplementedError

    def put(self, id: str, doc: Doc, *, branch: Optional[str] = None) -> Any:
        """Stores `doc` as the current version of `id` (one Git commit)."""
        return self._call("put", _drop_none({"id": id, "doc": doc, "branch": branch}))

    def get(self, id: str, *, branch: Optional[str] = None) -> Any:
        """The current document, or None when there is none."""
        return self._call("get", _drop_none({"id": id, "branch": branch}))

    def delete(self, id: str, *, branch: Optional[str] = None) -> Any:
        """Deletes `id`; the answer says whether it existed."""
        return self._call("delete", _drop_none({"id": id, "branch": branch}))

    def get_as_of(self, id: str, *, commit: Optional[str] = None, time: Union[str, int, None] = None, branch: Optional[str] = None) -> Any:
        """The document as it was at a commit or a time (RFC 3339 or epoch ms), or None."""
        return self._call("get_as_of", _drop_none({"id": id, "commit": commit, "time": time, "branch": branch}))

    def history(self, id: str, *, limit: Optional[int] = None, cursor: Optional[str] = None, branch: Optional[str] = None) -> Any:
        """Versions newest first: {"versions": [...], "nextCursor"?}."""
        return self._call("history", _drop_none({"id": id, "limit": limit, "cursor": cursor, "branch": branch}))

    def diff(self, id: str, from_commit: str, to_commit: Optional[str] = None, *, branch: Optional[str] = None) -> Any:
        """Changes between two versions as JSON Pointer paths."""
        return self._call("diff", _drop_none({"id": id, "from": from_commit, "to": to_commit, "branch": branch}))

    def list_by_prefix(self, prefix: str, *, limit: Optional[int] = None, cursor: Optional[str] = None, branch: Optional[str] = None) -> Any:
        return self._call("list", _drop_none({"prefix": prefix, "limit": limit, "cursor": cursor, "branch": branch}))

    def list_by_table(self, table: str, *, limit: Optional[int] = None, cursor: Optional[str] = None, branch: Optional[str] = None) -> Any:
        return self._call("list", _drop_none({"table": table, "limit": limit, "cursor": cursor, "branch": branch}))

    def search(self, query: str, *, limit: Optional[int] = None, offset: Optional[int] = None, table: Optional[str] = None, branch: Optional[str] = None) -> Any:
        """Full-text search: {"total", "hits": [{"id", "score", "doc"}]}."""
        return self._call("search", _drop_none({"query": query, "limit": limit, "offset": offset, "table": table, "branch": branch}))

    def query(self, sql: str, params: Optional[List[Json]] = None, *, branch: Optional[str] = None) -> Any:
        """Runs SQL (svc's subset): {"columns": [...], "rows": [...]}."""
        return self._call("query", _drop_none({"sql": sql, "params": params, "branch": branch}))

    def branches(self) -> Any:
        return self._call("branches", {})

    def create_branch(self, name: str, *, from_branch: Optional[str] = None) -> Any:
        return self._call("create_branch", _drop_none({"name": name, "from": from_branch}))

    def remove_branch(self, name: str) -> Any:
        return self._call("remove_branch", {"name": name})

    def export_to_directory(self, output: str, *, branch: Optional[str] = None) -> Any:
        """Writes every current document as a JSON file under `output`."""
        return self._call("export_to_directory", _drop_none({"output": output, "branch": branch}))

    def create_backup(self, output: str, *, format: Optional[str] = None, base_commit: Optional[str] = None) -> Any:
        """A full (tar.gz or bundle) or incremental (bundle with base_commit) backup; returns its manifest."""
        return self._call("create_backup", _drop_none({"output": output, "format": format, "base_commit": base_commit}))

    def restore_backup(self, input: str, *, data_dir: Optional[str] = None, format: Optional[str] = None, force: bool = False) -> Any:
        """Restores a backup into `data_dir` (embedded: a new directory, never the open one; open it afterwards).

        Remote, the file is uploaded and a running server refuses it with a "conflict" error that says
        how to restore (stop the server, `toolkit svc restore`), so a live database is never half replaced.
        """
        return self._call("restore_backup", _drop_none({"input": input, "data_dir": data_dir, "format": format, "force": force or None}))

    def export_snapshot(self, output: str, refs: Optional[List[str]] = None) -> Any:
        return self._call("export_snapshot", _drop_none({"output": output, "refs": refs}))

    def import_snapshot(self, input: str, *, verify: bool = True) -> Any:
        """Adds the branches of a snapshot bundle (remote: the file is uploaded to the server)."""
        return self._call("import_snapshot", {"input": input, "verify": verify})


class Pipeline(_Operations):
    """Sends calls without waiting; every method returns a Future. Leaving the `with` block waits for all."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._futures: List["Future[Json]"] = []
        self._submit_get = getattr(transport, "submit_get", None)
        getter = getattr(transport, "getter", None)
        if getter is not None:
            # The hot call of a read pipeline goes straight to the transport, one Python call per get;
            # the transport refuses what is not a plain get the same way the child would.
            self.get = getter(self._futures)  # type: ignore[method-assign]

    def _call(self, op: str, params: Dict[str, Json]) -> "Future[Json]":
        future = self._transport.submit(op, params, flush=False)
        self._futures.append(future)
        return future

    def get(self, id: str, *, branch: Optional[str] = None) -> "Future[Json]":
        # The hot call of a read pipeline: no parameter dict when the transport gathers gets itself,
        # and nothing to wait on at the end beyond what the transport adds per batch.
        submit_get = self._submit_get
        if submit_get is None or type(id) is not str or (branch is not None and type(branch) is not str):
            return super().get(id, branch=branch)
        return submit_get(id, branch, self._futures)

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, *exc: object) -> None:
        for f in self._futures:
            f.exception()


class Client(_Operations):
    """A connection to svc, embedded or remote. Use it as a context manager, or call close()."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def _call(self, op: str, params: Dict[str, Json]) -> Json:
        return self._transport.submit(op, params).result()

    def pipeline(self) -> Pipeline:
        """Calls that go out at once and are answered in any order; the engine commits them in order."""
        return Pipeline(self._transport)

    def close(self) -> None:
        """Flushes and releases the data directory (embedded) or the connection (remote)."""
        self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
