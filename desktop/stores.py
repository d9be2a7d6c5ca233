"""What the desktop app remembers, as small files in the data dir (each written atomically).

- ``presets.json``: per tool, the last choice (params and output format) and named presets;
- ``desktop.json``: the app's own preferences (output folder, clash policy, theme, tray);
- ``settings.toml``: the service settings shared with ``filekiln serve`` (only the keys the
  Settings panel edits are changed; every other key is kept).
"""

from __future__ import annotations

import json
import threading
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from desktop.helpers import CLASH_POLICIES, atomic_write_text, dump_toml


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class PresetStore:
    """Last choices and named presets per tool, in ``presets.json``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data = _read_json(path)
        self._data.setdefault("last", {})
        self._data.setdefault("presets", {})

    def _save(self) -> None:
        atomic_write_text(self.path, json.dumps(self._data, indent=2, sort_keys=True))

    def last(self, tool_id: str) -> dict[str, Any] | None:
        """``{"params": {...}, "outputFormat": "..."}`` of the last job made with ``tool_id``."""
        value = self._data["last"].get(tool_id)
        return dict(value) if isinstance(value, dict) else None

    def set_last(self, tool_id: str, params: dict[str, Any], output_format: str | None) -> None:
        self._data["last"][tool_id] = {"params": params, "outputFormat": output_format}
        self._save()

    def names(self, tool_id: str) -> list[str]:
        return sorted(self._data["presets"].get(tool_id, {}), key=str.casefold)

    def get(self, tool_id: str, name: str) -> dict[str, Any] | None:
        value = self._data["presets"].get(tool_id, {}).get(name)
        return dict(value) if isinstance(value, dict) else None

    def save(self, tool_id: str, name: str, params: dict[str, Any], output_format: str | None) -> None:
        name = name.strip()
        if not name:
            raise ValueError("a preset needs a name")
        self._data["presets"].setdefault(tool_id, {})[name] = {"params": params, "outputFormat": output_format}
        self._save()

    def delete(self, tool_id: str, name: str) -> None:
        presets = self._data["presets"].get(tool_id, {})
        if presets.pop(name, None) is not None:
            if not presets:
                self._data["presets"].pop(tool_id, None)
            self._save()


@dataclass
class Prefs:
    """The desktop app's own preferences (``desktop.json``)."""

    output_folder: str = ""  # "" = next to each input
    clash_policy: str = "rename"
    folder_filter: str = ""
    theme: str = "system"  # system | light | dark
    keep_running_in_tray: bool = True
    start_api: bool = True

    @classmethod
    def load(cls, path: Path) -> Prefs:
        data = _read_json(path)
        known = {f.name for f in fields(cls)}
        prefs = cls(**{k: v for k, v in data.items() if k in known and isinstance(v, type(getattr(cls(), k)))})
        if prefs.clash_policy not in CLASH_POLICIES:
            prefs.clash_policy = "rename"
        if prefs.theme not in ("system", "light", "dark"):
            prefs.theme = "system"
        return prefs

    def save(self, path: Path) -> None:
        atomic_write_text(path, json.dumps(asdict(self), indent=2, sort_keys=True))


# settings.toml keys the Settings panel edits; everything else in the file is left as it is
SERVICE_KEYS = ("retention_days", "workers", "host", "port", "llm_provider", "llm_model_path", "llm_base_url",
                "llm_model", "llm_api_key")
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
