"""Logging for every FileKiln process: a rotating file in the data dir, and the console when there is one."""

from __future__ import annotations

import logging
import logging.handlers
import re

from localapi.config import Settings

# A download link is a bearer credential for an hour: its query (expiry and signature) is dropped whole.
_DOWNLOAD_QUERY = re.compile(r"(/downloads/[^?\s\"']*)\?[^\s\"']*")
# Elsewhere, the values of query parameters that carry secrets (a webhook target's token, a key sent in a URL).
_SECRET_PARAM = re.compile(
    r"([?&](?:signature|sig|token|access_token|api_key|apikey|key|secret|password)=)[^&\s\"'#]*", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` without signed download links' queries or the values of secret query parameters."""
    return _SECRET_PARAM.sub(r"\1[redacted]", _DOWNLOAD_QUERY.sub(r"\1?[redacted]", text))


class RedactingFilter(logging.Filter):
    """Redacts every record a handler writes, FileKiln's own and uvicorn's access lines alike."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):  # each argument on its own keeps the record's shape: uvicorn's
            # access formatter unpacks (client, method, path with query, version, status)
            record.args = tuple(redact(arg) if isinstance(arg, str) else arg for arg in record.args)
        message = record.getMessage()
        if redact(message) != message:  # a secret the format string and its arguments make together
            record.msg, record.args = redact(message), ()
        return True


def setup_logging(settings: Settings, to_console: bool = True) -> None:
    logs = settings.data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger()
    root.setLevel(settings.log_level.upper())
    file_handler = logging.handlers.RotatingFileHandler(logs / "filekiln.log", maxBytes=5_000_000, backupCount=3)
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handlers: list[logging.Handler] = [file_handler]
    if to_console:
        console = logging.StreamHandler()
        console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handlers.append(console)
    for handler in handlers:
        # on the handlers, not the root logger: a logger's filters never see records from its children
        handler.addFilter(RedactingFilter())
        root.addHandler(handler)
    logging.getLogger("huey").setLevel(logging.WARNING)
