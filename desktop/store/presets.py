"""``presets.json``: per tool, the last choice (params and output format) and named presets.

Named presets are saved in the service now (shared with the API, the CLI and watch folders); those of
earlier versions stay here, read as before, and are imported into the service once (``imported``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from desktop.store.atomic import atomic_write_text, read_json


class PresetStore:
    """Last choices and named presets per tool, in ``presets.json``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data = read_json(path)
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

    def tool_ids(self) -> list[str]:
        """Tools with named presets here."""
        return sorted(self._data["presets"])

    def imported(self) -> bool:
        """Whether the named presets were imported into the service's presets."""
        return bool(self._data.get("imported"))

    def mark_imported(self) -> None:
        self._data["imported"] = True
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
