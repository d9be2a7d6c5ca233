"""The service's presets as the desktop sees them: listed in the tool picker, saved from the Convert page.

Presets live in the service (``service.presets``), shared with the API, the CLI and watch folders.
The desktop's own named presets of earlier versions (``presets.json``) are imported once, as
``"<tool title>: <name>"``; the file keeps them, so nothing is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from PySide6.QtCore import QObject, Signal

from desktop.models.tools import PresetEntry
from desktop.store import PresetStore as LegacyPresets
from desktop.threads import Background
from localapi.core.errors import ServiceError
from localapi.core.service import Service
from localapi.core.workflows.records import Preset, StepSpec

log = logging.getLogger("filekiln.desktop")


def preset_entries(presets: Iterable[Preset]) -> list[PresetEntry]:
    """The presets as the tool picker lists them."""
    return [PresetEntry(p.name, p.description, tuple(s.tool for s in p.steps), p.builtin) for p in presets]


def chain_problem(service: Service, steps: Sequence[StepSpec], input_formats: Iterable[str | None] | None,
                  count: int = 1) -> str | None:
    """Why the chain ``steps`` cannot run on inputs of ``input_formats`` (``None``: not known yet), or
    ``None`` when it can. The workflow service's own check, in its words."""
    formats = None if input_formats is None else {f or "" for f in input_formats}
    try:
        service.workflows.check_chain(list(steps), formats or None, max(count, 1))
    except ServiceError as exc:
        return exc.detail
    return None


def legacy_presets(legacy: LegacyPresets, titles: Mapping[str, str]) -> list[tuple[str, StepSpec]]:
    """The named presets of ``presets.json`` as ``("<tool title>: <name>", step)``."""
    found = []
    for tool_id in legacy.tool_ids():
        for name in legacy.names(tool_id):
            chosen = legacy.get(tool_id, name) or {}
            found.append((f"{titles.get(tool_id, tool_id)}: {name}",
                          StepSpec(tool_id, dict(chosen.get("params") or {}), chosen.get("outputFormat"))))
    return found


def import_presets(service: Service, presets: Sequence[tuple[str, StepSpec]]) -> list[str]:
    """Save one-step presets under their names; a name already taken, or a step that no longer checks
    (a tool gone), is left out. Returns the names saved."""
    saved = []
    for name, step in presets:
        try:
            service.workflows.save_preset(name, [step], "Imported from the desktop's own presets.", replace=False)
        except ServiceError as exc:
            log.info("preset %r not imported: %s", name, exc)
            continue
        saved.append(name)
    return saved


class PresetsController(QObject):
    """Keeps the list of presets (built-ins first) and saves new ones off the GUI thread."""

    changed = Signal()  # the list was read again (``presets``)
    saved = Signal(str)  # a preset's name, once it is saved
    failed = Signal(str)  # why a save did not happen, in words

    def __init__(self, service: Service, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.service = service
        self.presets: list[Preset] = service.presets.all()
        self._pool = Background(1, self)

    def get(self, name: str) -> Preset | None:
        return next((p for p in self.presets if p.name == name), None)

    def for_tool(self, tool_id: str) -> list[Preset]:
        """The one-step presets of ``tool_id``: what the options pane offers for that tool."""
        return [p for p in self.presets if len(p.steps) == 1 and p.steps[0].tool == tool_id]

    def refresh(self) -> None:
        self._pool.run(self.service.presets.all, self._listed)

    def _listed(self, presets: list[Preset]) -> None:
        self.presets = presets
        self.changed.emit()

    def save(self, name: str, steps: Sequence[StepSpec], description: str = "") -> None:
        """Save (or replace) the preset ``name``; ``saved`` or ``failed`` tells how it went."""
        specs = list(steps)

        def work() -> tuple[str, list[Preset]]:
            preset = self.service.workflows.save_preset(name, specs, description)
            return preset.name, self.service.presets.all()

        def done(result: tuple[str, list[Preset]]) -> None:
            self._listed(result[1])
            self.saved.emit(result[0])

        def failed(exc: BaseException) -> None:
            self.failed.emit(getattr(exc, "detail", None) or str(exc))

        self._pool.run(work, done, failed)

    def delete(self, name: str) -> None:
        def work() -> list[Preset]:
            self.service.presets.delete(name)
            return self.service.presets.all()

        self._pool.run(work, self._listed, lambda exc: self.failed.emit(getattr(exc, "detail", None) or str(exc)))

    def import_legacy(self, legacy: LegacyPresets, titles: Mapping[str, str]) -> None:
        """Import ``presets.json``'s named presets once (saving off the GUI thread), then list the presets
        again. The file keeps them, marked as imported."""
        if legacy.imported():
            return
        found = legacy_presets(legacy, titles)

        def done(presets: list[Preset]) -> None:
            legacy.mark_imported()
            self._listed(presets)

        self._pool.run(lambda: (import_presets(self.service, found), self.service.presets.all())[1], done,
                       lambda exc: log.warning("importing presets failed: %s", exc))

    def wait(self, msecs: int = 30_000) -> bool:
        return self._pool.wait(msecs)
