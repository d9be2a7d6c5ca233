"""Tab through the Convert page as docs/desktop.md says, and a window that fits a small screen."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from desktop.main_window import MainWindow, first_size
from desktop.models.tools import CATEGORY_TITLES
from desktop.views.params_form import ParamsForm
from tests.conftest import png_bytes
from tests.desktop.conftest import wait_for


def open_tool(qtbot: QtBot, window: MainWindow, tmp_path: Path, tool_id: str) -> ParamsForm:
    png = tmp_path / "photo.png"
    png.write_bytes(png_bytes(80, 60))
    window.convert.add_paths([png])
    wait_for(qtbot, lambda: window.convert.files.rowCount() == 1 and not window.convert.files.loading)
    assert window.convert.select_tool(tool_id)
    wait_for(qtbot, lambda: window.convert.options.tool is not None and window.convert.options.tool.id == tool_id)
    qtbot.wait(1)  # new fields are shown from the event loop
    return window.convert.options.form


def tab_from(qtbot: QtBot, window: MainWindow, start: QWidget, until: QWidget, back: bool = False) -> list[QWidget]:
    """Focus ``start`` and press Tab (Shift+Tab) until ``until`` has the focus: the widgets visited."""
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    start.setFocus()
    visited = [start]
    modifier = Qt.KeyboardModifier.ShiftModifier if back else Qt.KeyboardModifier.NoModifier
    while visited[-1] is not until:
        assert len(visited) < 80, [w.objectName() or w.accessibleName() for w in visited]
        qtbot.keyClick(visited[-1], Qt.Key.Key_Tab, modifier)
        focused = QApplication.focusWidget()
        assert focused is not None
        visited.append(focused)
    return visited


def fields_of(form: ParamsForm) -> list[QWidget]:
    return [w for w in form.tab_stops() if w.isVisible() and w.isEnabled()]


def test_tab_walks_the_files_the_tool_every_setting_then_convert_and_the_jobs(qtbot: QtBot, window: MainWindow,
                                                                           tmp_path: Path) -> None:
    form = open_tool(qtbot, window, tmp_path, "image-resize")
    form.editors["width"].setValue(640)  # type: ignore[attr-defined]
    panel, jobs = window.convert, window.jobs_view
    assert panel.convert_button.isEnabled()
    visited = tab_from(qtbot, window, panel.file_view, jobs.table)
    fields = fields_of(form)
    assert fields[0] is form.editors["quality"] and form.editors["noEnlarge"] in fields
    start = visited.index(fields[0])
    assert visited[start:start + len(fields)] == fields  # every setting, in the order shown
    order = [panel.file_view, panel.picker.search, panel.picker.tree, panel.options.format_combo,
             panel.options.preset_combo, fields[0], fields[-1], panel.options.folder_edit,
             panel.options.clash_combo, panel.convert_button, jobs.table]
    assert [w for w in visited if w in order] == order

    qtbot.keyClick(jobs.table, Qt.Key.Key_Tab)  # the list does not keep Tab to itself
    focused = QApplication.focusWidget()
    assert focused is not jobs.table and not jobs.table.isAncestorOf(focused)

    back = tab_from(qtbot, window, jobs.table, panel.options.reset_button, back=True)
    assert back[1] is panel.convert_button
    assert [w for w in back if w in fields] == fields[::-1]


def test_the_order_follows_a_new_tool_and_added_steps(qtbot: QtBot, window: MainWindow, tmp_path: Path) -> None:
    open_tool(qtbot, window, tmp_path, "image-resize")
    panel = window.convert
    assert panel.select_tool("image-convert")
    wait_for(qtbot, lambda: panel.options.tool is not None and panel.options.tool.id == "image-convert")
    step = panel.builder.add_step()
    qtbot.wait(1)
    fields, step_fields = fields_of(panel.options.form), fields_of(step.form)
    assert fields and step_fields
    visited = tab_from(qtbot, window, panel.options.reset_button, panel.options.clash_combo)
    expected = [*fields, step.tool_combo, step.remove_button, step.format_combo, *step_fields,
                panel.builder.add_button]
    assert visited[1:1 + len(expected)] == expected


def test_the_jobs_keys_and_watch_tables_let_tab_go(window: MainWindow) -> None:
    for table in (window.jobs_view.table, window.keys_panel.table, window.watch_panel.table):
        assert not table.tabKeyNavigation()


def test_at_its_minimum_size_the_window_fits_a_small_screen_with_a_readable_tool_list(
        qtbot: QtBot, window: MainWindow, tmp_path: Path) -> None:
    open_tool(qtbot, window, tmp_path, "image-resize")
    for _ in range(3):  # each level of layouts learns of the new fields from an event of its own
        QApplication.sendPostedEvents()
        QApplication.processEvents()
    minimum = window.minimumSizeHint()
    assert minimum.width() >= window.centralWidget().minimumSizeHint().width()  # not a minimum from before
    # a 1440×900 screen at 150 %: 960×600, less a title bar
    assert minimum.width() <= 960 and minimum.height() <= 520
    window.resize(minimum)
    qtbot.waitUntil(lambda: window.size() == minimum)
    tree = window.convert.picker.tree
    metrics = tree.fontMetrics()
    longest = max(metrics.horizontalAdvance(t) for t in CATEGORY_TITLES.values())
    assert tree.width() >= longest + tree.indentation()
    status = window.statusBar()
    assert status.isVisible() and status.geometry().bottom() < window.height()
    button = window.convert.convert_button
    assert window.rect().contains(button.mapTo(window, button.rect().bottomRight()))


def test_the_first_size_fits_the_screen(window: MainWindow) -> None:
    assert first_size(QSize(1920, 1040)) == QSize(1180, 760)
    small = first_size(QSize(960, 560))  # 1440×900 at 150 %, less a panel
    assert small.width() <= 960 and small.height() <= 560
    available = window.screen().availableGeometry().size()
    assert window.size() == first_size(available).expandedTo(window.minimumSizeHint())
    assert window.height() <= available.height()


def test_a_long_reason_does_not_move_the_panes(qtbot: QtBot, window: MainWindow, tmp_path: Path) -> None:
    open_tool(qtbot, window, tmp_path, "image-resize")
    panel = window.convert
    qtbot.wait(1)
    before = panel.options_scroll.height(), panel.convert_button.y()
    long = "Too large for Image resize (limit 1 KB): " + ", ".join(f"photo-{i}.png" for i in range(40))
    panel.reason_label.setText(long)
    panel.message.setText(long)
    qtbot.wait(1)
    assert (panel.options_scroll.height(), panel.convert_button.y()) == before
    assert panel.reason_label.shown_text().endswith("…") and panel.reason_label.toolTip() == long
    panel.reason_label.setVisible(False)
    qtbot.wait(1)
    assert (panel.options_scroll.height(), panel.convert_button.y()) == before
