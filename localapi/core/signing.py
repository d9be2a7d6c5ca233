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
        message = f"{file_id}:{expires}".encode("ascii")
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()

    def path(self, file_id: str, name: str, expires: int) -> str:
        return (f"/downloads/{file_id}/{quote(name, safe='')}"
                f"?expires={expires}&signature={self.signature(file_id, expires)}")

    def check(self, file_id: str, expires: int, signature: str, at: float | None = None) -> str:
        """``ok``, ``tampered`` or ``expired`` (a tampered link is reported as such even when old)."""
        if not hmac.compare_digest(self.signature(file_id, expires), signature):
            return "tampered"
        if (at if at is not None else time.time()) > expires:
            return "expired"
        return "ok"
