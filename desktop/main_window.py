"""The main window: Convert (with the jobs), Watch folders, Keys, API, Engines and Settings pages."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QMainWindow,
    QMessageBox,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QWidget,
)

from desktop.context import Desktop
from desktop.controllers.batches import BatchSummary
from desktop.controllers.workflows import WorkflowEnd
from desktop.models.jobs import JobRow
from desktop.views.api_panel import ApiPanel
from desktop.views.convert_panel import ConvertPanel
from desktop.views.engines_panel import EnginesPanel
from desktop.views.jobs_view import JobsView
from desktop.views.keys_panel import KeysPanel
from desktop.views.models_box import ModelsBox
from desktop.views.settings_panel import SettingsPanel
from desktop.views.shell import CANCEL_AND_QUIT, HIDE, QUIT, STAY, Shell, Tray
from desktop.views.watch_panel import WatchPanel
from localapi.core.states import JobStatus

FIRST_SIZE = QSize(1180, 760)


def first_size(available: QSize) -> QSize:
    """The window's size when it opens: :data:`FIRST_SIZE`, or nine tenths of a screen too small for it
    (``available``: the screen less its panels and docks), so the window and its status bar fit."""
    return FIRST_SIZE.boundedTo(QSize(available.width() * 9 // 10, available.height() * 9 // 10))


class Pages(QTabWidget):
    """The window's pages. A page that needs more height than a small screen gives scrolls inside its
    tab instead of making the window's minimum taller; pages are still named by the panel itself."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._holders: dict[QWidget, QScrollArea] = {}

    def add_page(self, page: QWidget, title: str, scroll: bool = True) -> None:
        holder: QWidget = page
        if scroll:
            area = QScrollArea()
            area.setWidgetResizable(True)
            area.setFrameShape(QScrollArea.Shape.NoFrame)
            area.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            area.setWidget(page)
            self._holders[page] = area
            holder = area
        self.addTab(holder, title)

    def setCurrentWidget(self, widget: QWidget) -> None:  # noqa: N802 - QTabWidget's name
        super().setCurrentWidget(self._holders.get(widget, widget))

    def indexOf(self, widget: QWidget) -> int:  # noqa: N802 - QTabWidget's name
        return super().indexOf(self._holders.get(widget, widget))


class MainWindow(QMainWindow):
    def __init__(self, desktop: Desktop, shell: Shell, tray: Tray | None = None) -> None:
        super().__init__()
        self.desktop = desktop
        self.shell = shell
        self.tray = tray
        self.quitting = False
        self._told_about_tray = False
        self.last_batch: str | None = None
        self.setWindowTitle("FileKiln")

        self.convert = ConvertPanel(
            desktop.files, desktop.tools, desktop.jobs_controller, desktop.presets, desktop.prefs,
            desktop.save_prefs, choose_files=shell.choose_files, choose_input_folder=shell.choose_folder,
            choose_output_folder=shell.choose_folder, ask_text=shell.ask_text, check_params=desktop.check_params,
            shared_presets=desktop.service_presets, workflows=desktop.workflows)
        self.jobs_view = JobsView(desktop.jobs, desktop.jobs_controller, open_path=shell.open_path,
                                  reveal=shell.reveal)
        convert_page = QSplitter(Qt.Orientation.Vertical)
        convert_page.addWidget(self.convert)
        convert_page.addWidget(self.jobs_view)
        convert_page.setStretchFactor(0, 3)
        convert_page.setStretchFactor(1, 2)
        convert_page.setChildrenCollapsible(False)
        self.watch_panel = WatchPanel(desktop.watch, desktop.service_presets,
                                      choose_folder=shell.choose_folder, confirm=shell.confirm)
        self.keys_panel = KeysPanel(desktop.keys, shell.copy, confirm=shell.confirm)
        self.api_panel = ApiPanel(desktop.api, shell.copy, shell.open_url, persist=desktop.update_settings)
        self.models_box = ModelsBox(desktop.service.models, desktop.service.download_model)
        self.engines_panel = EnginesPanel(desktop.gather_engines, desktop.background, models=self.models_box)
        self.settings_panel = SettingsPanel(
            desktop.api, desktop.prefs, desktop.save_prefs, desktop.settings_file, shell.apply_theme,
            choose_folder=shell.choose_folder or self.convert.options._choose_folder, open_path=shell.open_path,
            tools=desktop.tools)

        self.tabs = Pages()
        self.tabs.setDocumentMode(True)
        pages: list[tuple[QWidget, str]] = [
            (convert_page, "&Convert"), (self.watch_panel, "&Watch folders"), (self.keys_panel, "&Keys"),
            (self.api_panel, "A&PI"),
            (self.engines_panel, "&Engines"), (self.settings_panel, "&Settings")]
        for page, title in pages:
            self.tabs.add_page(page, title, scroll=page is not convert_page)  # Convert's own panes scroll
        self.setCentralWidget(self.tabs)
        self.api_status = QLabel()
        self.jobs_status = QLabel()
        self.statusBar().addPermanentWidget(self.jobs_status)
        self.statusBar().addPermanentWidget(self.api_status)

        self._shortcut("Ctrl+O", self.add_files)
        self._shortcut("Ctrl+Return", self.convert.convert)
        self._shortcut("Ctrl+Enter", self.convert.convert)
        self._shortcut("Esc", self.cancel)
        self._shortcut("Ctrl+.", self.cancel)
        self._shortcut(QKeySequence.StandardKey.Quit, self.request_quit)
        for number in range(len(pages)):
            self._shortcut(f"Ctrl+{number + 1}", lambda n=number: self.tabs.setCurrentIndex(n))

        desktop.api.changed.connect(self._api_changed)
        desktop.jobs_controller.snapshot.connect(self._jobs_changed)
        desktop.jobs_controller.failed.connect(self._action_failed)
        desktop.workflows.failed.connect(self._action_failed)
        desktop.watch.failed.connect(self._action_failed)
        desktop.workflows.finished.connect(self._workflow_finished)
        self.convert.batch_started.connect(self._batch_started)
        self.settings_panel.saved.connect(self._settings_saved)
        self.settings_panel.tool_switches.changed.connect(lambda *_: desktop.refresh_tools())
        self._api_changed()
        self.convert.set_tab_followers([self.jobs_view.table])  # Tab goes on from Convert to the jobs
        self.resize(first_size(self.screen().availableGeometry().size()))

    def _shortcut(self, keys: str | QKeySequence.StandardKey, slot: object) -> QShortcut:
        shortcut = QShortcut(QKeySequence(keys), self)
        shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
        shortcut.activated.connect(slot)
        return shortcut

    # ---- actions ----

    def add_files(self) -> None:
        self.tabs.setCurrentIndex(0)
        self.convert.add_files()

    def cancel(self) -> None:
        """Esc / Ctrl+.: cancel the selected jobs, or else the jobs of the last Convert."""
        if self.jobs_view.cancel_selected():
            return
        if self.last_batch is not None:
            ids = [r.id for r in self.desktop.jobs.rows if r.active and self._in_batch(r, self.last_batch)]
            if ids:
                self.desktop.jobs_controller.cancel(ids)
            self.desktop.workflows.cancel_batch(self.last_batch)

    def _in_batch(self, row: JobRow, batch: str) -> bool:
        delivery = self.desktop.deliveries.get(row.id)
        return delivery is not None and delivery.batch == batch

    def _batch_started(self, batch: str, count: int) -> None:
        self.last_batch = batch

    # ---- live state ----

    def _api_changed(self) -> None:
        api = self.desktop.api
        texts = {"running": f"API: {api.base_url}", "starting": "API starting…", "stopping": "API stopping…",
                 "stopped": "API stopped", "error": "API not running"}
        text = texts.get(api.state, api.state)
        if api.maintenance:
            text += " (maintenance)"
        self.api_status.setText(text)
        self.api_status.setToolTip(api.error or "")
        if self.tray is not None:
            self.tray.set_api_text(text)

    def _jobs_changed(self, rows: list[JobRow]) -> None:
        active = sum(1 for r in rows if r.active)
        self.jobs_status.setText(f"{active} job{'s' * (active != 1)} running or waiting" if active else "")
        for summary in self.desktop.tracker.update({r.id: r.status for r in rows}):
            self._batch_finished(summary)

    def _batch_finished(self, summary: BatchSummary) -> None:
        self.statusBar().showMessage(summary.message, 10_000)
        if self.isHidden() or self.isMinimized() or not self.isActiveWindow():
            self.notify("FileKiln", summary.message)

    def _workflow_finished(self, end: WorkflowEnd) -> None:
        """A workflow's failure names the step and the file: it is told even with the window in front."""
        self.statusBar().showMessage(end.message, 10_000)
        if end.status != JobStatus.DONE or self.isHidden() or self.isMinimized() or not self.isActiveWindow():
            self.notify("FileKiln workflow" if end.status == JobStatus.DONE else "FileKiln workflow failed",
                        end.message)

    def notify(self, title: str, text: str) -> None:
        if self.shell.notify is not None:
            self.shell.notify(title, text)
        elif self.tray is not None and self.tray.supportsMessages():
            self.tray.notify(title, text)
        else:
            QApplication.alert(self)

    def _action_failed(self, text: str, details: str) -> None:
        self.convert.show_message(text)
        box = QMessageBox(QMessageBox.Icon.Warning, "FileKiln", text, QMessageBox.StandardButton.Close, self)
        box.setDetailedText(details)
        self.error_box = box
        box.open()

    def _settings_saved(self) -> None:
        folder = self.desktop.prefs.output_folder
        self.convert.options.set_output_folder(Path(folder) if folder else None)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        if event.type() == QEvent.Type.ActivationChange and self.isActiveWindow():
            self.desktop.refresh_tools()
        super().changeEvent(event)

    # ---- closing ----

    def can_hide_to_tray(self) -> bool:
        return self.tray is not None and self.desktop.prefs.keep_running_in_tray

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        if self.quitting:
            event.accept()
            return
        if self.can_hide_to_tray():
            event.ignore()
            self.hide()
            if not self._told_about_tray:
                self._told_about_tray = True
                self.notify("FileKiln is still running", "The API stays available. Quit from the tray icon.")
            return
        running = self.desktop.jobs.active_count
        choice = QUIT if running == 0 else self._ask_on_close(running, self.tray is not None)
        event.ignore()
        self._follow(choice)

    def request_quit(self) -> None:
        """Quit from the menu, the tray or the keyboard: asks first when jobs are running."""
        running = self.desktop.jobs.active_count
        self._follow(QUIT if running == 0 else self._ask_on_close(running, False))

    def _follow(self, choice: str) -> None:
        if choice == HIDE:
            self.hide()
        elif choice in (QUIT, CANCEL_AND_QUIT):
            if choice == CANCEL_AND_QUIT:
                self.desktop.jobs_controller.cancel([r.id for r in self.desktop.jobs.rows if r.active])
            self.quit()

    def _ask_on_close(self, running: int, can_hide: bool) -> str:
        if self.shell.ask_on_close is not None:
            return self.shell.ask_on_close(running, can_hide)
        box = QMessageBox(QMessageBox.Icon.Question, "Jobs are still running",
                          f"{running} job{'s are' if running != 1 else ' is'} still running or waiting.", parent=self)
        box.setInformativeText("If you quit now, unfinished jobs are kept and continue the next time FileKiln starts.")
        quit_button = box.addButton("Quit, finish later", QMessageBox.ButtonRole.AcceptRole)
        cancel_button = box.addButton("Cancel jobs and quit", QMessageBox.ButtonRole.DestructiveRole)
        hide_button = box.addButton("Keep running in the background", QMessageBox.ButtonRole.ActionRole) \
            if can_hide else None
        stay_button = box.addButton("Don't quit", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(stay_button)
        box.exec()
        clicked = box.clickedButton()
        if clicked is quit_button:
            return QUIT
        if clicked is cancel_button:
            return CANCEL_AND_QUIT
        if hide_button is not None and clicked is hide_button:
            return HIDE
        return STAY

    def quit(self) -> None:
        """Leave the app; ``app.run`` then stops the poller, the API and the workers in order."""
        self.quitting = True
        self.models_box.cancel_download()  # its pool waits for a running download when the window goes
        self.hide()
        if self.tray is not None:
            self.tray.hide()
        self.shell.quit_app()
