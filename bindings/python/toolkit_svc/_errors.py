from __future__ import annotations


class SvcError(Exception):
    """An error from svc: `code` is the engine's error code (`not_found`, `invalid_id`, `locked`, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
