"""``settings.toml``: the service settings shared with ``filekiln serve``.

The Settings panel changes only the keys it edits; every other key in the file is kept.
Python reads TOML but does not write it: the small writer here covers what the file holds,
flat keys and one level of tables.
"""

from __future__ import annotations

import threading
import tomllib
from pathlib import Path
from typing import Any

from desktop.store.atomic import atomic_write_text

# keys the service reads only when it starts: the Settings panel says a restart is needed for them
RESTART_KEYS = ("retention_days", "workers", "llm_provider", "llm_model_path", "llm_base_url", "llm_model",
                "llm_api_key")


class SettingsFile:
    """``settings.toml`` in the data dir: read, change a few keys, write back atomically."""

    _lock = threading.Lock()

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any]:
        try:
            with open(self.path, "rb") as f:
                return tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError):
            return {}

    def update(self, changes: dict[str, Any]) -> dict[str, Any]:
        """Apply ``changes`` (a ``None`` value removes the key) and return the new content."""
        with self._lock:
            values = self.read()
            for key, value in changes.items():
                if value is None or value == "":
                    values.pop(key, None)
                else:
                    values[key] = value
            atomic_write_text(self.path, dump_toml(values))
            return values


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
        return f'"{escaped}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def dump_toml(values: dict[str, Any]) -> str:
    """Flat keys first, then one level of tables: enough for ``settings.toml``."""
    lines = [f"{_toml_key(k)} = {toml_value(v)}" for k, v in values.items()
             if not isinstance(v, dict) and v is not None]
    for key, table in values.items():
        if isinstance(table, dict):
            lines.append("")
            lines.append(f"[{_toml_key(key)}]")
            lines.extend(f"{_toml_key(k)} = {toml_value(v)}" for k, v in table.items() if v is not None)
    return "\n".join(lines).lstrip("\n") + "\n"


def _toml_key(key: str) -> str:
    if key and all(c.isalnum() or c in "-_" for c in key):
        return key
    return toml_value(key)
