"""Signed download links: HMAC-SHA256 over file id and expiry with a per-install secret."""

from __future__ import annotations

import hashlib
import hmac
import time
from urllib.parse import quote


class LinkSigner:
    def __init__(self, secret: bytes) -> None:
        self.secret = secret

    def signature(self, file_id: str, expires: int) -> str:
        message = f"{file_id}:{expires}".encode("utf-8", "surrogateescape")
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()

    def path(self, file_id: str, name: str, expires: int) -> str:
        return (f"/downloads/{file_id}/{quote(name, safe='')}"
                f"?expires={expires}&signature={self.signature(file_id, expires)}")

    def check(self, file_id: str, expires: int, signature: str, at: float | None = None) -> str:
        """``ok``, ``tampered`` or ``expired`` (a tampered link is reported as such even when old)."""
        expected = self.signature(file_id, expires).encode("ascii")
        if not hmac.compare_digest(expected, signature.encode("utf-8", "surrogateescape")):
            return "tampered"
        if (at if at is not None else time.time()) > expires:
            return "expired"
        return "ok"
