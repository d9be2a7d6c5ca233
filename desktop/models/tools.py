"""The tool picker's model: tools grouped by category, filtered by the files and a search text."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel

ToolIdRole = Qt.ItemDataRole.UserRole + 1

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
                      query: str = "") -> list[ToolInfo]:
    """Tools that accept every one of ``formats`` (``None``: no files yet, so every tool) and match ``query``.

    An unrecognised file (format ``None``) matches no tool. The query matches the title, id,
    category or description, word by word, ignoring case.
    """
    wanted = None if formats is None else set(formats)
    words = query.casefold().split()
    found = []
    for tool in tools:
        if wanted is not None and not tool.accepts_all(wanted):
            continue
        haystack = " ".join((tool.title, tool.id, tool.category, CATEGORY_TITLES.get(tool.category, ""),
                             tool.description)).casefold()
        if all(w in haystack for w in words):
            found.append(tool)
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
        self._query = ""
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

    def set_formats(self, formats: Iterable[str | None] | None) -> None:
        self._formats = None if formats is None else set(formats)
        self._rebuild()

    def set_query(self, query: str) -> None:
        self._query = query
        self._rebuild()

    def visible_tools(self) -> list[ToolInfo]:
        return tools_for_formats(self._tools, self._formats, self._query)

    def visible_ids(self) -> list[str]:
        return [t.id for t in self.visible_tools()]

    def _rebuild(self) -> None:
        self.removeRows(0, self.rowCount())
        groups: dict[str, list[ToolInfo]] = {}
        for tool in self.visible_tools():
            groups.setdefault(tool.category, []).append(tool)
        order = list(CATEGORY_TITLES)
        for category in sorted(groups, key=lambda c: (order.index(c) if c in order else len(order), c)):
            parent = QStandardItem(CATEGORY_TITLES.get(category, category.title()))
            parent.setFlags(Qt.ItemFlag.ItemIsEnabled)
            parent.setSelectable(False)
            font = parent.font()
            font.setBold(True)
            parent.setFont(font)
            for tool in sorted(groups[category], key=lambda t: t.title.casefold()):
                item = QStandardItem(tool.title)
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
