"""Secret params (passwords) between a job's creation and its run: sealed, never stored in clear.

A job's ``params`` column holds what may be shown back (each secret as ``"***"``); the secrets
themselves are sealed (Fernet: AES-128-CBC with an HMAC-SHA256 tag) into ``secret_params`` with a
key kept outside the database, in the data dir's ``params.key`` (mode 0600). A copy of the
database alone (a backup, a shared database server) therefore holds no password. The worker
unseals them into the spec it hands the child, and every ending of the job (done, failed,
canceled, deleted) clears the column: a secret lives exactly as long as the job's run.

Processes on several machines, each with a data dir of its own, share one key through the
``params_key`` setting (``FILEKILN_PARAMS_KEY``) instead of the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken

from localapi.config import SettingError
from localapi.core.errors import ServiceError


class Sealer:
    def __init__(self, key_path: Path, key: str = "") -> None:
        """The ``key`` given (the ``params_key`` setting), else the one in ``key_path`` (made on first use)."""
        if key:
            try:
                self._fernet = Fernet(key.strip().encode("ascii"))
            except (ValueError, UnicodeEncodeError):
                raise SettingError("params_key is not a key FileKiln can use: give 32 url-safe base64-encoded "
                                   "bytes, as Fernet.generate_key() makes (docs/deploy.md).") from None
        else:
            self._fernet = Fernet(_load_or_create(key_path))

    def seal(self, secrets: dict[str, Any]) -> str | None:
        if not secrets:
            return None
        return self._fernet.encrypt(json.dumps(secrets).encode()).decode("ascii")

    def unseal(self, sealed: str | None) -> dict[str, Any]:
        """The secrets, or ``{}`` when there are none; ParamsUnreadable when they were sealed with another
        key (a replaced key file, or a process of the install without its ``params_key``): a job must
        not run with ``"***"`` for a password."""
        if not sealed:
            return {}
        try:
            value = json.loads(self._fernet.decrypt(sealed.encode("ascii")))
        except (InvalidToken, ValueError):
            raise ParamsUnreadable("This job's passwords were sealed with another key than this process has "
                                   "(params.key, or the params_key setting); every process of one install "
                                   "needs the same key. Create the job again.") from None
        return value if isinstance(value, dict) else {}


class ParamsUnreadable(ServiceError):
    status = 500
    code = "params_unreadable"
    title = "Passwords unreadable"


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
