"""The tool picker's model: tools grouped by category, filtered by the files and a search text."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel

from desktop.icons import PRESETS_ICON, category_icon

ToolIdRole = Qt.ItemDataRole.UserRole + 1
PresetNameRole = Qt.ItemDataRole.UserRole + 2
PRESETS_TITLE = "Presets"

CATEGORY_TITLES = {
    "pdf": "PDF", "images": "Images", "audio": "Audio", "video": "Video", "documents": "Documents",
    "ebooks": "E-books", "ocr": "OCR", "transcription": "Transcription", "ai": "AI",
    "subtitles": "Subtitles", "fonts": "Fonts", "archives": "Archives", "3d": "3D and CAD",
}


@dataclass(frozen=True)
class ToolInfo:
    """What the desktop needs to know about a tool: a plain snapshot of the catalogue entry."""

    id: str
    category: str
    title: str
    description: str
    accepts: tuple[str, ...]
    produces: tuple[str, ...]
    schema: dict[str, Any]
    merges_inputs: bool
    max_input_size_bytes: int
    available: bool = True
    reason: str | None = None

    def accepts_all(self, formats: Iterable[str | None]) -> bool:
        return all(f is not None and f in self.accepts for f in formats)

    def accepts_any(self, formats: Iterable[str | None]) -> bool:
        return any(f is not None and f in self.accepts for f in formats)

    def fits(self, formats: Iterable[str | None] | None, folder_formats: Iterable[str | None] = ()) -> bool:
        """Whether the tool suits the files in play: it takes every one of ``formats`` (the files named
        directly; ``None``: no files yet) and, when there are files from folders, at least one of
        ``folder_formats`` (the others are passed by, as the command line does)."""
        some = set(folder_formats)
        if formats is None and not some:
            return True
        return self.accepts_all(formats or ()) and (not some or self.accepts_any(some))


def tool_infos(catalogue: Iterable[Any], status: Callable[[Any], tuple[bool, str | None]]) -> list[ToolInfo]:
    """Snapshot the service's catalogue (``service.catalogue``, ``service.jobs.tool_status``)."""
    infos = []
    for tool in catalogue:
        available, reason = status(tool)
        infos.append(ToolInfo(
            id=tool.id, category=tool.category, title=tool.title, description=tool.description,
            accepts=tuple(tool.accepts), produces=tuple(tool.produces),
            schema=tool.params.model_json_schema(by_alias=True), merges_inputs=bool(tool.merges_inputs),
            max_input_size_bytes=int(tool.max_input_size_bytes), available=available, reason=reason))
    return infos


def tools_for_formats(tools: Sequence[ToolInfo], formats: Iterable[str | None] | None,
                      query: str = "", folder_formats: Iterable[str | None] = ()) -> list[ToolInfo]:
    """Tools that accept every one of ``formats`` (``None``: no files yet, so every tool), at least one
    of ``folder_formats`` when there are any (:meth:`ToolInfo.fits`), and match ``query``.

    An unrecognised file (format ``None``) named directly matches no tool. The query matches the
    title, id, category or description, word by word, ignoring case.
    """
    wanted = None if formats is None else set(formats)
    some = set(folder_formats)
    words = query.casefold().split()
    found = []
    for tool in tools:
        if not tool.fits(wanted, some):
            continue
        haystack = " ".join((tool.title, tool.id, tool.category, CATEGORY_TITLES.get(tool.category, ""),
                             tool.description)).casefold()
        if all(w in haystack for w in words):
            found.append(tool)
    return found


@dataclass(frozen=True)
class PresetEntry:
    """A preset as the picker lists it: its name, what it does, and its steps' tools in order."""

    name: str
    description: str
    tools: tuple[str, ...]
    builtin: bool

    @property
    def label(self) -> str:
        return f"{self.name} (built-in)" if self.builtin else self.name


def presets_for_formats(presets: Sequence[PresetEntry], tools: Sequence[ToolInfo],
                        formats: Iterable[str | None] | None, query: str = "",
                        folder_formats: Iterable[str | None] = ()) -> list[PresetEntry]:
    """Presets whose first step suits the files (:meth:`ToolInfo.fits`; ``None`` and no files from
    folders: every preset) and that match ``query`` by name, description or a step's tool, word by word."""
    by_id = {t.id: t for t in tools}
    wanted = None if formats is None else set(formats)
    some = set(folder_formats)
    words = query.casefold().split()
    found = []
    for preset in presets:
        first = by_id.get(preset.tools[0]) if preset.tools else None
        if first is None or not first.fits(wanted, some):
            continue
        titles = " ".join(by_id[t].title if t in by_id else t for t in preset.tools)
        haystack = " ".join((preset.name, preset.description, titles, PRESETS_TITLE)).casefold()
        if all(w in haystack for w in words):
            found.append(preset)
    return found


def format_label(fmt: str) -> str:
    return "Original format" if fmt == "keep" else fmt.upper()  # an image's own, or what a PDF carries as stored


class ToolTreeModel(QStandardItemModel):
    """Category rows with the matching tools beneath. Unavailable tools show, disabled, with the reason."""

    filtered = Signal()

    def __init__(self, tools: Sequence[ToolInfo]) -> None:
        super().__init__()
        self._tools = list(tools)
        self._formats: set[str | None] | None = None
        self._folder_formats: set[str | None] = set()
        self._query = ""
        self._presets: list[PresetEntry] = []
        self.setHorizontalHeaderLabels(["Tool"])
        self._rebuild()

    @property
    def tools(self) -> list[ToolInfo]:
        return list(self._tools)

    def tool(self, tool_id: str | None) -> ToolInfo | None:
        return next((t for t in self._tools if t.id == tool_id), None)

    def set_tools(self, tools: Sequence[ToolInfo]) -> None:
        self._tools = list(tools)
        self._rebuild()

    def set_presets(self, presets: Sequence[PresetEntry]) -> None:
        self._presets = list(presets)
        self._rebuild()

    def preset(self, name: str | None) -> PresetEntry | None:
        return next((p for p in self._presets if p.name == name), None)

    def visible_presets(self) -> list[PresetEntry]:
        return presets_for_formats(self._presets, self._tools, self._formats, self._query, self._folder_formats)

    def set_formats(self, formats: Iterable[str | None] | None, folder_formats: Iterable[str | None] = ()) -> None:
        """Offer the tools for these files: ``formats`` of the files named directly (every one must be
        taken; ``None``: no files), ``folder_formats`` of files from folders (at least one must be)."""
        self._formats = None if formats is None else set(formats)
        self._folder_formats = set(folder_formats)
        self._rebuild()

    def set_query(self, query: str) -> None:
        self._query = query
        self._rebuild()

    def visible_tools(self) -> list[ToolInfo]:
        return tools_for_formats(self._tools, self._formats, self._query, self._folder_formats)

    def visible_ids(self) -> list[str]:
        return [t.id for t in self.visible_tools()]

    def _rebuild(self) -> None:
        self.removeRows(0, self.rowCount())
        self._add_presets()
        groups: dict[str, list[ToolInfo]] = {}
        for tool in self.visible_tools():
            groups.setdefault(tool.category, []).append(tool)
        order = list(CATEGORY_TITLES)
        for category in sorted(groups, key=lambda c: (order.index(c) if c in order else len(order), c)):
            icon = category_icon(category)
            parent = _group_item(CATEGORY_TITLES.get(category, category.title()))
            parent.setIcon(icon)
            for tool in sorted(groups[category], key=lambda t: t.title.casefold()):
                item = QStandardItem(icon, tool.title)  # a tool shows its category's icon
                item.setData(tool.id, ToolIdRole)
                item.setEditable(False)
                tip = tool.description or tool.title
                if not tool.available:
                    item.setEnabled(False)
                    item.setText(f"{tool.title} (unavailable)")
                    tip = f"{tip}\n\n{tool.reason or 'Not available on this computer.'}"
                item.setToolTip(tip)
                parent.appendRow(item)
            self.appendRow(parent)
        self.filtered.emit()

    def _add_presets(self) -> None:
        """The "Presets" group first: a preset is unavailable when one of its steps' tools is."""
        presets = self.visible_presets()
        if not presets:
            return
        icon = category_icon(PRESETS_ICON)
        parent = _group_item(PRESETS_TITLE)
        parent.setIcon(icon)
        for preset in presets:
            item = QStandardItem(icon, preset.label)
            item.setData(preset.name, PresetNameRole)
            item.setEditable(False)
            titles = [t.title if (t := self.tool(tool_id)) else tool_id for tool_id in preset.tools]
            tip = f"{preset.description}\n\nSteps: {' → '.join(titles)}" if preset.description else \
                f"Steps: {' → '.join(titles)}"
            missing = [tool_id for tool_id in preset.tools if not ((t := self.tool(tool_id)) and t.available)]
            if missing:
                item.setEnabled(False)
                item.setText(f"{preset.label} (unavailable)")
                tip += f"\n\nNot available on this computer: {', '.join(missing)}"
            item.setToolTip(tip)
            parent.appendRow(item)
        self.appendRow(parent)


def _group_item(title: str) -> QStandardItem:
    parent = QStandardItem(title)
    parent.setFlags(Qt.ItemFlag.ItemIsEnabled)
    parent.setSelectable(False)
    font = parent.font()
    font.setBold(True)
    parent.setFont(font)
    return parent
