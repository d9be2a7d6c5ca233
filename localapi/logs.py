"""Logging for every FileKiln process: a rotating file in the data dir, and the console when there is one."""

from __future__ import annotations

import logging
import logging.handlers

from localapi.config import Settings


def setup_logging(settings: Settings, to_console: bool = True) -> None:
    logs = settings.data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger()
    root.setLevel(settings.log_level.upper())
    file_handler = logging.handlers.RotatingFileHandler(logs / "filekiln.log", maxBytes=5_000_000, backupCount=3)
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(file_handler)
    if to_console:
        console = logging.StreamHandler()
        console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(console)
    logging.getLogger("huey").setLevel(logging.WARNING)
