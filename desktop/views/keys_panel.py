"""The Keys panel: the API's dashboard. Create keys (the secret shown once), see their use, revoke them."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from desktop.models.keys import KeysModel
from desktop.views.empty_hint import EmptyHint

Confirm = Callable[[str, str], bool]
Copy = Callable[[str], None]


def confirm_dialog(parent: QWidget) -> Confirm:
    def confirm(title: str, text: str) -> bool:
        buttons = QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No
        answer = QMessageBox.question(parent, title, text, buttons, QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    return confirm


class CreateKeyDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Create an API key")
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("e.g. backup script")
        self.limit_box = QCheckBox("Limit jobs per day to")
        self.quota_spin = QSpinBox()
        self.quota_spin.setRange(1, 1_000_000)
        self.quota_spin.setValue(100)
        self.quota_spin.setEnabled(False)
        self.limit_box.toggled.connect(self.quota_spin.setEnabled)
        quota_row = QHBoxLayout()
        quota_row.addWidget(self.limit_box)
        quota_row.addWidget(self.quota_spin)
        quota_row.addStretch(1)
        form = QFormLayout()
        form.addRow("&Name", self.name_edit)
        form.addRow("Quota", quota_row)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Create")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.name_edit.textChanged.connect(self._check)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.buttons)
        self._check()

    def _check(self) -> None:
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(bool(self.name_edit.text().strip()))

    def name(self) -> str:
        return self.name_edit.text().strip()

    def quota(self) -> int | None:
        return self.quota_spin.value() if self.limit_box.isChecked() else None


class SecretDialog(QDialog):
    """Shows a new key's secret, once. Closing it forgets the secret."""

    def __init__(self, name: str, secret: str, copy: Copy, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"API key “{name}” created")
        self._copy = copy
        warning = QLabel("<b>Copy this key now.</b> It will not be shown again: FileKiln keeps only a hash of it. "
                         "Send it as the <code>X-API-Key</code> header.")
        warning.setWordWrap(True)
        self.secret_edit = QLineEdit(secret)
        self.secret_edit.setReadOnly(True)
        self.secret_edit.setAccessibleName("API key secret")
        self.secret_edit.setMinimumWidth(self.secret_edit.fontMetrics().horizontalAdvance(secret) + 24)
        self.copy_button = QPushButton("&Copy")
        self.copy_button.clicked.connect(self.copy)
        row = QHBoxLayout()
        row.addWidget(self.secret_edit, 1)
        row.addWidget(self.copy_button)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        layout = QVBoxLayout(self)
        layout.addWidget(warning)
        layout.addLayout(row)
        layout.addWidget(buttons)
        self.finished.connect(self._forget)

    def copy(self) -> None:
        self._copy(self.secret_edit.text())
        self.copy_button.setText("Copied")

    def _forget(self) -> None:
        self.secret_edit.clear()


class KeysPanel(QWidget):
    def __init__(self, model: KeysModel, copy: Copy, confirm: Confirm | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self._copy = copy
        self._confirm = confirm or confirm_dialog(self)
        self.create_dialog: CreateKeyDialog | None = None
        self.secret_dialog: SecretDialog | None = None
        intro = QLabel("Scripts and other programs use the API at the address in the API panel with one of these "
                       "keys. Revoking a key stops it at once.")
        intro.setWordWrap(True)
        self.table = QTableView()
        self.table.setModel(model)
        self.table.setAccessibleName("API keys")
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setTabKeyNavigation(False)  # Tab leaves the list; the arrows move in it
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.empty_hint = EmptyHint(self.table, "No keys yet. Scripts need one to use the API: Create key makes "
                                                "one, shown once, to copy into the script.")
        self.create_button = QPushButton("&Create key…")
        self.revoke_button = QPushButton("&Revoke…")
        buttons = QHBoxLayout()
        buttons.addWidget(self.create_button)
        buttons.addWidget(self.revoke_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(buttons)
        layout.addWidget(self.table, 1)
        self.create_button.clicked.connect(self.open_create_dialog)
        self.revoke_button.clicked.connect(self.revoke_selected)
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._update_buttons())
        model.modelReset.connect(self._update_buttons)
        model.dataChanged.connect(lambda *_: self._update_buttons())
        # last used and jobs today change as scripts call the API
        self._timer = QTimer(self)
        self._timer.setInterval(5000)
        self._timer.timeout.connect(self._refresh_if_shown)
        self._timer.start()
        self._update_buttons()

    def _refresh_if_shown(self) -> None:
        if self.isVisible():
            self.model.refresh()

    def showEvent(self, event: object) -> None:  # noqa: N802
        self.model.refresh()
        super().showEvent(event)  # type: ignore[arg-type]

    def _selected_row(self) -> int:
        rows = self.table.selectionModel().selectedRows()
        return rows[0].row() if rows else -1

    def _update_buttons(self) -> None:
        key = self.model.key_at(self._selected_row())
        self.revoke_button.setEnabled(key is not None and key.active)

    def open_create_dialog(self) -> CreateKeyDialog:
        dialog = CreateKeyDialog(self)
        dialog.accepted.connect(lambda: self.create_key(dialog.name(), dialog.quota()))
        self.create_dialog = dialog
        dialog.open()
        return dialog

    def create_key(self, name: str, quota: int | None) -> SecretDialog:
        key, secret = self.model.create(name, quota)
        dialog = SecretDialog(key.name, secret, self._copy, self)
        dialog.setModal(True)
        del secret  # the dialog holds the only copy until it closes
        self.secret_dialog = dialog
        dialog.finished.connect(lambda _: setattr(self, "secret_dialog", None))
        dialog.open()
        row = next((i for i, r in enumerate(self.model.rows) if r.key.id == key.id), -1)
        if row >= 0:
            self.table.selectRow(row)
        return dialog

    def revoke_selected(self) -> bool:
        key = self.model.key_at(self._selected_row())
        if key is None or not key.active:
            return False
        if not self._confirm("Revoke key", f"Revoke “{key.name}” ({key.prefix}…)? Programs using it will get "
                             "401 errors from now on. This cannot be undone."):
            return False
        self.model.revoke(key.id)
        return True
