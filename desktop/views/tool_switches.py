"""Switching tools off and on (Settings): a ticked list of every tool, written to the service's switches."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGroupBox, QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from desktop.models.tools import CATEGORY_TITLES, ToolIdRole, ToolTreeModel
from localapi.core.switches import Switches


class ToolSwitches(QGroupBox):
    """Unticking a tool switches it off at once, for the app and API clients alike (503, ``tool_disabled``)."""

    changed = Signal(str, bool)  # tool id, whether it is now switched off

    def __init__(self, tools: ToolTreeModel, switches: Switches, parent: QWidget | None = None) -> None:
        super().__init__("Tools", parent)
        self._tools = tools
        self._switches = switches
        note = QLabel("Untick a tool to switch it off, here and for scripts using the API, until you tick it "
                      "again. This takes effect at once.")
        note.setWordWrap(True)
        self.list = QListWidget()
        self.list.setAccessibleName("Tools switched on")
        self.list.setMinimumHeight(120)
        layout = QVBoxLayout(self)
        layout.addWidget(note)
        layout.addWidget(self.list, 1)
        self.list.itemChanged.connect(self._item_changed)
        self.refresh()

    def refresh(self) -> None:
        """Read the switches again (``filekiln tools`` or another process may have changed them)."""
        disabled = self._switches.disabled_tools()
        order = list(CATEGORY_TITLES)
        tools = sorted(self._tools.tools, key=lambda t: (order.index(t.category) if t.category in order
                                                         else len(order), t.title.casefold()))
        self.list.blockSignals(True)
        try:
            self.list.clear()
            for tool in tools:
                item = QListWidgetItem(f"{tool.title} ({CATEGORY_TITLES.get(tool.category, tool.category)})")
                item.setData(ToolIdRole, tool.id)
                item.setToolTip(f"{tool.id}: {tool.description}" if tool.description else tool.id)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(Qt.CheckState.Unchecked if tool.id in disabled else Qt.CheckState.Checked)
                self.list.addItem(item)
        finally:
            self.list.blockSignals(False)

    def showEvent(self, event: object) -> None:  # noqa: N802
        self.refresh()
        super().showEvent(event)  # type: ignore[arg-type]

    def _item_changed(self, item: QListWidgetItem) -> None:
        tool_id = str(item.data(ToolIdRole))
        off = item.checkState() != Qt.CheckState.Checked
        self._switches.set_tool_disabled(tool_id, off)
        self.changed.emit(tool_id, off)
