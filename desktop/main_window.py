"""The main window: the tool catalogue and the API's address (the full GUI grows from here)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QMainWindow, QVBoxLayout, QWidget

from localapi.core.service import Service
from localapi.server import ApiServer


class MainWindow(QMainWindow):
    def __init__(self, service: Service, server: ApiServer) -> None:
        super().__init__()
        self.setWindowTitle("FileKiln")
        self.resize(720, 520)
        self.status_label = QLabel()
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.tools = QListWidget()
        for tool in service.catalogue:
            available, reason = service.jobs.tool_status(tool)
            item = QListWidgetItem(f"{tool.title}  ({tool.id})")
            item.setData(Qt.ItemDataRole.UserRole, tool.id)
            if not available:
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled)
                item.setToolTip(reason or "")
            self.tools.addItem(item)
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.addWidget(self.status_label)
        layout.addWidget(self.tools)
        self.setCentralWidget(body)
        if server.running:
            self.status_label.setText(f"API running at {service.settings.base_url}")
        else:
            self.status_label.setText(f"API not running: {server.error}")
