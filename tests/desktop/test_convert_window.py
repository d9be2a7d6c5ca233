"""The Convert page with a real service and real engines: drop, pick, convert, watch, open."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from desktop.context import Desktop
from desktop.main_window import MainWindow
from tests.conftest import png_bytes
from tests.desktop.conftest import Recorder, wait_for

# PySide marks QDragEnterEvent's only constructor deprecated; it is what a real drag delivers
pytestmark = pytest.mark.filterwarnings("ignore:Function.*QDragEnterEvent:DeprecationWarning")


def drop(qtbot: QtBot, target: object, paths: list[Path]) -> None:
    """Drop ``paths`` on ``target`` the way a file manager does: QMimeData with file URLs."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    where = QPointF(10, 10)
    actions = Qt.DropAction.CopyAction
    enter = QDragEnterEvent(where.toPoint(), actions, mime, Qt.MouseButton.LeftButton,  # type: ignore[call-overload]
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, enter)  # type: ignore[arg-type]
    assert enter.isAccepted()
    event = QDropEvent(where, actions, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, event)  # type: ignore[arg-type]
    assert event.isAccepted()


def samples(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    png = folder / "photo.png"
    png.write_bytes(png_bytes(80, 60))
    disguised = folder / "really-a-png.pdf"  # judged by content, not by name
    disguised.write_bytes(png_bytes(20, 20))
    import pymupdf

    doc = pymupdf.open()
    doc.new_page()
    pdf = folder / "letter.pdf"
    doc.save(pdf)
    return {"png": png, "disguised": disguised, "pdf": pdf}


def test_dropping_files_filters_the_tool_list(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                             tmp_path: Path) -> None:
    files = samples(tmp_path / "in")
    everything = set(desktop.tools.visible_ids())
    drop(qtbot, window.convert.drop_zone, [files["png"]])
    wait_for(qtbot, lambda: desktop.files.rowCount() == 1)
    image_tools = set(desktop.tools.visible_ids())
    assert "image-convert" in image_tools and "pdf-compress" not in image_tools and image_tools < everything
    assert all("png" in desktop.tools.tool(t).accepts for t in image_tools)  # type: ignore[union-attr]

    drop(qtbot, window.convert.file_view.viewport(), [files["pdf"], files["disguised"]])
    wait_for(qtbot, lambda: desktop.files.rowCount() == 3)
    assert [e.format for e in desktop.files.entries] == ["png", "pdf", "png"]
    both = set(desktop.tools.visible_ids())
    assert "pdf-merge" in both and "image-convert" not in both and "pdf-compress" not in both
    tree = window.convert.picker.tree
    shown = {tree.model().index(c, 0, tree.model().index(r, 0)).data()
             for r in range(tree.model().rowCount())
             for c in range(tree.model().rowCount(tree.model().index(r, 0)))}
    assert "Merge PDFs" in shown

    window.convert.file_view.setCurrentIndex(desktop.files.index(1, 0))  # only the PDF selected
    assert window.convert.files_in_play() == [desktop.files.entries[1]]
    assert "pdf-compress" in desktop.tools.visible_ids()


def test_dropping_a_folder_adds_its_files_through_the_filter(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                            tmp_path: Path) -> None:
    files = samples(tmp_path / "in" / "nested")
    (tmp_path / "in" / "notes.txt").write_text("not wanted")
    window.convert.filter_edit.setText("*.png")
    drop(qtbot, window.convert.drop_zone, [tmp_path / "in"])
    wait_for(qtbot, lambda: desktop.files.rowCount() == 1 and not desktop.files.loading)
    assert desktop.files.entries[0].path == files["png"]


def test_converting_a_png_end_to_end(qtbot: QtBot, window: MainWindow, desktop: Desktop, recorder: Recorder,
                                     tmp_path: Path) -> None:
    files = samples(tmp_path / "in")
    out = tmp_path / "out"
    out.mkdir()
    (out / "photo.webp").write_bytes(b"an earlier result")  # a clash: the default policy keeps both
    recorder.files = [files["png"]]
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)  # a window shortcut needs the window active
    qtbot.keyClick(window, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)  # Ctrl+O: Add files
    wait_for(qtbot, lambda: desktop.files.rowCount() == 1)
    assert window.convert.select_tool("image-convert")
    options = window.convert.options
    options.format_combo.setCurrentIndex(options.format_combo.findData("webp"))
    options.set_output_folder(out)
    assert window.convert.convert_button.isEnabled(), window.convert.problems()

    seen: list[int] = []
    desktop.jobs.jobs_updated.connect(lambda: seen.extend(r.progress for r in desktop.jobs.rows))
    qtbot.mouseClick(window.convert.convert_button, Qt.MouseButton.LeftButton)
    wait_for(qtbot, lambda: bool(desktop.jobs.rows) and desktop.jobs.rows[0].outputs != ())
    job = desktop.jobs.rows[0]
    assert job.status == "DONE" and job.progress == 100 and job.from_app and job.files_label == "photo.png"
    assert seen == sorted(seen) and seen[-1] == 100
    assert job.outputs == (str(out / "photo-2.webp"),)
    with Image.open(out / "photo-2.webp") as image:
        assert image.format == "WEBP" and image.size == (80, 60)
    assert (out / "photo.webp").read_bytes() == b"an earlier result"
    assert "Done" in desktop.jobs.index(0, 3).data()

    window.jobs_view.select_job(job.id)
    assert window.jobs_view.open_button.isEnabled()
    qtbot.mouseClick(window.jobs_view.open_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(window.jobs_view.reveal_button, Qt.MouseButton.LeftButton)
    assert recorder.opened == [out / "photo-2.webp"] and recorder.revealed == [out / "photo-2.webp"]
    assert desktop.presets.last("image-convert") == {"params": {}, "outputFormat": "webp"}

    qtbot.mouseClick(window.jobs_view.remove_button, Qt.MouseButton.LeftButton)
    wait_for(qtbot, lambda: desktop.jobs.rowCount() == 0)
    assert (out / "photo-2.webp").exists()  # removing the job keeps the saved copy


def test_a_batch_finishing_in_the_background_notifies(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                      recorder: Recorder, tmp_path: Path) -> None:
    files = samples(tmp_path / "in")
    window.convert.add_paths([files["png"], files["disguised"]])
    wait_for(qtbot, lambda: desktop.files.rowCount() == 2)
    assert window.convert.select_tool("image-rotate")
    batch = window.convert.convert()
    assert batch is not None
    window.hide()  # in the background
    wait_for(qtbot, lambda: bool(recorder.notes))
    failures = [(r.error_code, r.error_message) for r in desktop.jobs.rows if r.status != "DONE"]
    assert recorder.notes == [("FileKiln", "2 files converted.")], failures
    wait_for(qtbot, lambda: all(r.outputs for r in desktop.jobs.rows))
    outputs = {Path(o) for r in desktop.jobs.rows for o in r.outputs}
    # next to each input, as nothing else was chosen, named for what the tool did
    assert outputs == {tmp_path / "in" / "photo-rotated.png", tmp_path / "in" / "really-a-png-rotated.png"}


def test_errors_are_shown_in_words_with_details_one_click_away(qtbot: QtBot, window: MainWindow,
                                                               desktop: Desktop, tmp_path: Path) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(png_bytes(400, 300)[:300])  # a PNG cut short: recognised, but unreadable
    window.convert.add_paths([broken])
    wait_for(qtbot, lambda: desktop.files.rowCount() == 1)
    assert window.convert.select_tool("image-convert")
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)  # a window shortcut needs the window active
    qtbot.keyClick(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)  # Ctrl+Return: Convert
    wait_for(qtbot, lambda: bool(desktop.jobs.rows) and desktop.jobs.rows[0].status == "FAILED")
    job = desktop.jobs.rows[0]
    status = desktop.jobs.index(0, 3).data()
    assert status.startswith("Failed: ") and job.error_code not in status  # words, not codes
    window.jobs_view.select_job(job.id)
    qtbot.mouseClick(window.jobs_view.details_button, Qt.MouseButton.LeftButton)
    box = window.jobs_view.details_box
    assert box is not None and box.isVisible()
    assert f"Error code: {job.error_code}" in box.detailedText()
    box.close()
    assert window.jobs_view.retry_button.isEnabled()
    window.jobs_view.retry_selected()
    wait_for(qtbot, lambda: len(desktop.jobs.rows) == 2)


def test_tab_order_follows_the_work(window: MainWindow) -> None:
    convert = window.convert
    chain = []
    widget = convert.drop_zone.add_files_button
    for _ in range(200):
        chain.append(widget)
        widget = widget.nextInFocusChain()
    steps = [convert.drop_zone.add_files_button, convert.file_view, convert.picker.search, convert.picker.tree,
             convert.options.format_combo, convert.options.folder_edit, convert.convert_button]
    positions = [chain.index(w) for w in steps]
    assert positions == sorted(positions)
