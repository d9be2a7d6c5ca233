"""``desktop.json``: the app's own preferences (output folder, clash policy, result names, theme, tray)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from desktop.store.atomic import atomic_write_text, read_json
from desktop.store.deliveries import CLASH_POLICIES
from desktop.store.naming import check_template


@dataclass
class Prefs:
    """The desktop app's own preferences (``desktop.json``)."""

    output_folder: str = ""  # "" = next to each input
    clash_policy: str = "rename"
    output_template: str = ""  # how results are named, e.g. "{name}-{tool}.{ext}"; "" = each tool's default
    folder_filter: str = ""
    theme: str = "system"  # system | light | dark
    keep_running_in_tray: bool = True
    start_api: bool = True

    @classmethod
    def load(cls, path: Path) -> Prefs:
        data = read_json(path)
        known = {f.name for f in fields(cls)}
        prefs = cls(**{k: v for k, v in data.items() if k in known and isinstance(v, type(getattr(cls(), k)))})
        if prefs.clash_policy not in CLASH_POLICIES:
            prefs.clash_policy = "rename"
        if prefs.theme not in ("system", "light", "dark"):
            prefs.theme = "system"
        if prefs.output_template and check_template(prefs.output_template) is not None:
            prefs.output_template = ""
        return prefs

    def save(self, path: Path) -> None:
        atomic_write_text(path, json.dumps(asdict(self), indent=2, sort_keys=True))
