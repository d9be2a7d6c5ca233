"""Secret params (passwords) between a job's creation and its run: sealed, never stored in clear.

A job's ``params`` column holds what may be shown back (each secret as ``"***"``); the secrets
themselves are sealed (Fernet: AES-128-CBC with an HMAC-SHA256 tag) into ``secret_params`` with a
key kept outside the database, in the data dir's ``params.key`` (mode 0600). A copy of the
database alone (a backup, a shared database server) therefore holds no password. The worker
unseals them into the spec it hands the child, and every ending of the job (done, failed,
canceled, deleted) clears the column: a secret lives exactly as long as the job's run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken


class Sealer:
    def __init__(self, key_path: Path) -> None:
        self._fernet = Fernet(_load_or_create(key_path))

    def seal(self, secrets: dict[str, Any]) -> str | None:
        if not secrets:
            return None
        return self._fernet.encrypt(json.dumps(secrets).encode()).decode("ascii")

    def unseal(self, sealed: str | None) -> dict[str, Any]:
        """The secrets, or ``{}`` when there are none or they cannot be read (a replaced key file)."""
        if not sealed:
            return {}
        try:
            value = json.loads(self._fernet.decrypt(sealed.encode("ascii")))
        except (InvalidToken, ValueError):
            return {}
        return value if isinstance(value, dict) else {}


def _load_or_create(path: Path) -> bytes:
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    key = Fernet.generate_key()
    part = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    try:
        os.link(part, path)  # the first process to get here wins; the others read its key
    except FileExistsError:
        pass
    finally:
        part.unlink()
    return path.read_bytes().strip()
