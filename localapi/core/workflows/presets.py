"""Presets: named, saved lists of steps, usable wherever a tool or a list of steps is.

A handful ship built in (:data:`BUILTIN`); they cannot be changed or deleted, only copied under a
new name. The others live in the ``presets`` table, shared by every face of one install (the
desktop, the CLI, watch folders and every API key), and travel as JSON files
(:meth:`PresetStore.export` / :meth:`PresetStore.import_`).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from localapi.core.db import Database, now
from localapi.core.errors import Conflict, Forbidden, InvalidParams, PresetNotFound, ServiceError
from localapi.core.files import display_name
from localapi.core.workflows.records import Preset, StepSpec

MAX_STEPS = 20
NAME_PATTERN = re.compile(r"^[^\x00-\x1f/\\]{1,80}$")
EXPORT_FORMAT = "filekiln-presets"


BUILTIN: dict[str, Preset] = {p.name: p for p in (
    Preset("Web images", "Fit within 2048 px (never enlarged) and save as WebP at quality 80.", [
        StepSpec("image-resize", {"width": 2048, "height": 2048, "fit": "contain", "noEnlarge": True, "quality": 80},
                 "webp")], builtin=True),
    Preset("Email-ready PDF", "Compress a PDF at the recommended level: much smaller, still sharp on screen.", [
        StepSpec("pdf-compress", {"level": "recommended"}, "pdf")], builtin=True),
    Preset("Scan to searchable PDF", "Put scanned pages into one PDF and add a text layer you can search and copy.", [
        StepSpec("image-to-pdf", {}, "pdf"), StepSpec("ocr-pdf", {}, "pdf")], builtin=True),
    Preset("Podcast MP3", "MP3 at 128 kbps, mono: the usual podcast format.", [
        StepSpec("audio-convert", {"bitrate": 128, "channels": 1}, "mp3")], builtin=True),
)}


def check_name(name: str) -> str:
    """``name`` (trimmed, NFC) when a preset may have it: what an uploaded file's name may be shown as
    (no control, format, bidi or separator character, no path, no leading dot: ``..`` is no name), 1 to
    80 characters."""
    name = unicodedata.normalize("NFC", name).strip(" ")  # str.strip() would drop U+0085 and U+2028 unseen
    if not NAME_PATTERN.match(name) or display_name(name) != name:
        raise InvalidParams("A preset's name is 1 to 80 characters, without slashes, a leading dot, or control, "
                            "format or line-separator characters.", code="invalid_preset_name",
                            errors={"name": ["1-80 characters, no / \\, leading dot or invisible characters"]})
    return name


def steps_from_json(data: Any, field: str = "steps") -> list[StepSpec]:
    """Steps from their JSON form; raises InvalidParams naming what is wrong."""
    if not isinstance(data, list) or not data:
        raise InvalidParams("Give at least one step.", errors={field: ["a non-empty list of steps"]})
    if len(data) > MAX_STEPS:
        raise InvalidParams(f"At most {MAX_STEPS} steps.", errors={field: [f"at most {MAX_STEPS} steps"]})
    steps = []
    for index, item in enumerate(data):
        if (not isinstance(item, dict) or not isinstance(item.get("tool"), str)
                or not isinstance(item.get("params") or {}, dict)
                or not isinstance(item.get("outputFormat") or "", str)):
            raise InvalidParams(f"Step {index + 1} is not a step.", errors={
                f"{field}.{index}": ["{tool, params?, outputFormat?}"]})
        steps.append(StepSpec.from_json(item))
    return steps


class PresetStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def all(self) -> list[Preset]:
        """The built-in presets, then the saved ones by name."""
        saved = [self._preset(row) for row in self.db.all("select * from presets order by name")]
        return [*BUILTIN.values(), *saved]

    def get(self, name: str) -> Preset:
        if name in BUILTIN:
            return BUILTIN[name]
        row = self.db.one("select * from presets where name = ?", name)
        if row is None:
            raise PresetNotFound(f"No preset {name!r}.")
        return self._preset(row)

    def save(self, name: str, steps: list[StepSpec], description: str = "", *, replace: bool = True,
             key_id: str | None = None) -> Preset:
        """Create or (``replace``) overwrite a saved preset. Steps are checked by the caller (the
        workflow service), so that a preset never holds a chain that cannot run. ``key_id``: the API key
        saving it, which may replace only a preset it made (None: the desktop, the CLI or a watch folder,
        the install's owner, who may replace any)."""
        name = check_name(name)
        if name in BUILTIN:
            raise Conflict(f"{name!r} is a built-in preset; save a copy under another name.", code="preset_builtin")
        t = now()
        body = json.dumps([s.to_json() for s in steps])
        if replace:
            mine = "" if key_id is None else " where presets.key_id = ?"
            changed = self.db.execute(
                "insert into presets (name, description, steps, created_at, updated_at, key_id)"
                " values (?, ?, ?, ?, ?, ?) on conflict (name) do update set description = excluded.description,"
                f" steps = excluded.steps, updated_at = excluded.updated_at{mine}",
                name, description, body, t, t, key_id, *([key_id] if key_id is not None else []))
            if not changed:
                raise self._not_yours(name)
        elif not self.db.execute("insert into presets (name, description, steps, created_at, updated_at, key_id)"
                                 " values (?, ?, ?, ?, ?, ?) on conflict do nothing",
                                 name, description, body, t, t, key_id):
            raise Conflict(f"A preset named {name!r} exists already.", code="preset_exists")
        return self.get(name)

    def delete(self, name: str, key_id: str | None = None) -> None:
        """Delete a saved preset; ``key_id`` as for :meth:`save`."""
        if name in BUILTIN:
            raise Conflict(f"{name!r} is built in and cannot be deleted.", code="preset_builtin")
        if key_id is None:
            deleted = self.db.execute("delete from presets where name = ?", name)
        else:
            deleted = self.db.execute("delete from presets where name = ? and key_id = ?", name, key_id)
        if not deleted:
            self.get(name)  # PresetNotFound when there is none
            raise self._not_yours(name)

    @staticmethod
    def _not_yours(name: str) -> ServiceError:
        return Forbidden(f"The preset {name!r} was made by another key, or on the desktop or the command line; a "
                         "key changes and deletes only its own presets. Save a copy under another name.",
                         code="preset_not_yours")

    def export(self, names: list[str] | None = None) -> dict[str, Any]:
        """Saved presets (all, or ``names``, built-ins included when named) as one JSON document."""
        chosen = [self.get(n) for n in names] if names else [p for p in self.all() if not p.builtin]
        return {"format": EXPORT_FORMAT, "version": 1, "presets": [
            {"name": p.name, "description": p.description, "steps": [s.to_json() for s in p.steps]} for p in chosen]}

    @staticmethod
    def parse_export(data: Any) -> list[tuple[str, str, list[StepSpec]]]:
        """(name, description, steps) of each preset in an exported document; raises InvalidParams."""
        if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT or not isinstance(
                data.get("presets"), list):
            raise InvalidParams("Not a FileKiln presets file.", code="invalid_preset_file",
                                errors={"format": [f"expected {EXPORT_FORMAT!r} with a list of presets"]})
        found = []
        for index, item in enumerate(data["presets"]):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise InvalidParams(f"Preset {index + 1} has no name.", code="invalid_preset_file",
                                    errors={f"presets.{index}": ["needs a name"]})
            description = item.get("description") or ""
            found.append((check_name(item["name"]), str(description)[:500],
                          steps_from_json(item.get("steps"), f"presets.{index}.steps")))
        return found

    @staticmethod
    def _preset(row: Any) -> Preset:
        return Preset(row["name"], row["description"], [StepSpec.from_json(s) for s in json.loads(row["steps"])],
                      builtin=False, created_at=row["created_at"], updated_at=row["updated_at"])
