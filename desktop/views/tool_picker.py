"""The tool picker: a search box over the tools grouped by category, and the presets above them."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QSize, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QLabel, QLineEdit, QTreeView, QVBoxLayout, QWidget

from desktop.models.tools import CATEGORY_TITLES, PRESETS_TITLE, PresetNameRole, ToolIdRole, ToolTreeModel
from desktop.views.fitted_label import FittedLabel

TREE_ICON_SIZE = 18  # the category icons beside the rows: a little over the text's height


class ToolPicker(QWidget):
    tool_changed = Signal(object)  # tool id or None
    preset_chosen = Signal(str)  # a preset's name (its steps then fill the options)

    def __init__(self, model: ToolTreeModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.current_id: str | None = None
        self.current_preset: str | None = None
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search tools…")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search tools")
        self.tree = QTreeView()
        self.tree.setModel(model)
        self.tree.setHeaderHidden(True)
        self.tree.setIconSize(QSize(TREE_ICON_SIZE, TREE_ICON_SIZE))
        self.tree.setAccessibleName("Tools")
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tree.setTabKeyNavigation(False)
        self.tree.setMinimumWidth(self.readable_width())
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.hint.hide()
        self.description = FittedLabel(lines=3)  # as high for every tool: the list above does not jump
        self.description.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.search)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.hint)
        layout.addWidget(self.description)
        self.search.textChanged.connect(model.set_query)
        model.filtered.connect(self._after_filter)
        self.tree.selectionModel().currentChanged.connect(self._on_current)
        self._after_filter()

    def readable_width(self) -> int:
        """The narrowest the tool list gets: the longest category title whole, and as much of the tool
        titles indented under it, beside a scroll bar."""
        metrics = self.tree.fontMetrics()
        longest = max(metrics.horizontalAdvance(t) for t in [*CATEGORY_TITLES.values(), PRESETS_TITLE])
        bar = self.tree.verticalScrollBar().sizeHint().width()
        icon = self.tree.iconSize().width() + metrics.averageCharWidth()  # and the gap after it
        return (longest + icon + 2 * self.tree.indentation() + bar + 2 * self.tree.frameWidth()
                + metrics.averageCharWidth() * 2)

    def set_hint(self, text: str) -> None:
        self.hint.setText(text)
        self.hint.setVisible(bool(text))

    def select(self, tool_id: str | None) -> bool:
        """Make ``tool_id`` the current tool if it is listed; returns whether it is."""
        index = self._index_of(tool_id) if tool_id else QModelIndex()
        if tool_id and not index.isValid():
            return False
        if index.isValid():
            self.tree.setCurrentIndex(index)
            self.tree.scrollTo(index)
        else:
            self.tree.clearSelection()
            self.current_preset = None
            self._set_current(None)
        return True

    def select_preset(self, name: str) -> bool:
        """Choose the preset ``name`` if it is listed (and usable); returns whether it is."""
        index = self._index_of(name, PresetNameRole)
        if not index.isValid():
            return False
        self.tree.setCurrentIndex(index)
        self.tree.scrollTo(index)
        return True

    def _index_of(self, value: str | None, role: int = ToolIdRole) -> QModelIndex:
        for r in range(self.model.rowCount()):
            parent = self.model.index(r, 0)
            for c in range(self.model.rowCount(parent)):
                child = self.model.index(c, 0, parent)
                if child.data(role) == value and child.flags() & Qt.ItemFlag.ItemIsEnabled:
                    return child
        return QModelIndex()

    def _after_filter(self) -> None:
        self.tree.expandAll()
        if self.current_preset is not None:
            if not self._index_of(self.current_preset, PresetNameRole).isValid():
                self.current_preset = None
                self._set_current(None)
            else:
                self.select_preset(self.current_preset)
            return
        keep = self.current_id
        if keep is not None and not self.select(keep):
            self._set_current(None)

    def _on_current(self, current: QModelIndex, previous: QModelIndex) -> None:
        preset = current.data(PresetNameRole) if current.isValid() else None
        if preset is not None:
            if preset != self.current_preset:
                self.current_preset = preset
                self.current_id = None  # a tool chosen next is a change, even the preset's own first tool
                tip = current.data(Qt.ItemDataRole.ToolTipRole)
                self.description.setText(str(tip or ""))
                self.preset_chosen.emit(preset)
            return
        tool_id = current.data(ToolIdRole) if current.isValid() else None
        if tool_id is not None:
            self.current_preset = None
            self._set_current(tool_id)

    def _set_current(self, tool_id: str | None) -> None:
        if tool_id == self.current_id:
            return
        self.current_id = tool_id
        tool = self.model.tool(tool_id)
        self.description.setText(tool.description if tool else "")
        self.tool_changed.emit(tool_id)
