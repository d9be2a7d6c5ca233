"""A dropped folder as one batch that keeps its tree: results in the same subfolders, one merged result
per subfolder, files the tool does not take passed by (and named), one progress bar for the whole.
A real service, real engines, real files dropped on the window."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from PIL import Image
from pytestqt.qtbot import QtBot

from desktop.context import Desktop
from desktop.controllers.batches import ProgressTracker
from desktop.main_window import MainWindow
from desktop.models.files import FileEntry, group_entries, scan_files
from desktop.models.jobs import JobRow
from localapi.core.states import JobStatus
from tests.conftest import png_bytes
from tests.desktop.conftest import wait_for
from tests.desktop.test_convert_window import drop

pytestmark = pytest.mark.filterwarnings("ignore:Function.*QDragEnterEvent:DeprecationWarning")

PNGS = ("a.png", "sub/b.png", "sub/deeper/c.png")


def album(folder: Path, *extra: str) -> Path:
    """``album/`` with a.png, sub/b.png, sub/deeper/c.png (and ``extra`` PNGs) and notes.txt."""
    for index, name in enumerate((*PNGS, *extra)):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png_bytes(60 + index * 10, 40, (40 * index, 120, 200)))
    (folder / "notes.txt").write_text("what is in the album\n")
    return folder


def add(qtbot: QtBot, window: MainWindow, paths: list[Path], count: int) -> None:
    drop(qtbot, window.convert.file_view.viewport(), paths)
    wait_for(qtbot, lambda: window.convert.files.rowCount() == count and not window.convert.files.loading)


def test_a_folder_converted_to_webp_keeps_its_tree_and_passes_by_the_text_file(
        qtbot: QtBot, window: MainWindow, desktop: Desktop, tmp_path: Path) -> None:
    add(qtbot, window, [album(tmp_path / "album")], 4)
    panel = window.convert
    assert "image-convert" in desktop.tools.visible_ids()  # it takes some of the folder's files
    assert panel.select_tool("image-convert")
    panel.options.format_combo.setCurrentIndex(panel.options.format_combo.findData("webp"))
    out = tmp_path / "out"
    panel.options.set_output_folder(out)
    assert panel.convert_button.isEnabled(), panel.problems()
    assert panel.convert() is not None
    assert "Skipped 1 file Convert image does not take: notes.txt." in panel.message.text()
    assert panel.progress.bar.isVisible()

    wait_for(qtbot, lambda: panel.progress.label.text() == "3 of 3 done", timeout=90)
    assert panel.progress.bar.value() == 100
    found = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert found == ["a.webp", "sub/b.webp", "sub/deeper/c.webp"]
    for path in out.rglob("*.webp"):
        with Image.open(path) as image:
            assert image.format == "WEBP"
    assert len(desktop.jobs.rows) == 3 and all(r.status == JobStatus.DONE for r in desktop.jobs.rows)
    wait_for(qtbot, lambda: "3 files converted" in panel.message.text())
    assert "notes.txt" in panel.message.text()  # the end of the batch still says what was passed by


def test_a_merging_tool_makes_one_pdf_per_subfolder(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                   tmp_path: Path) -> None:
    add(qtbot, window, [album(tmp_path / "album", "sub/b2.png")], 5)
    panel = window.convert
    assert panel.select_tool("image-to-pdf")
    out = tmp_path / "out"
    panel.options.set_output_folder(out)
    assert panel.convert_button.isEnabled(), panel.problems()
    panel.convert()
    assert "Skipped 1 file Images to PDF does not take: notes.txt." in panel.message.text()
    wait_for(qtbot, lambda: panel.progress.label.text() == "3 of 3 done", timeout=90)
    pages = {}
    for path in out.rglob("*.pdf"):
        with pymupdf.open(path) as doc:
            pages[path.relative_to(out).as_posix()] = doc.page_count
    assert pages == {"a.pdf": 1, "sub/b.pdf": 2, "sub/deeper/c.pdf": 1}


def test_a_workflow_whose_step_merges_makes_one_result_per_subfolder(
        qtbot: QtBot, window: MainWindow, desktop: Desktop, tmp_path: Path) -> None:
    add(qtbot, window, [album(tmp_path / "album", "sub/b2.png")], 5)
    panel = window.convert
    assert panel.select_tool("image-convert")
    panel.options.format_combo.setCurrentIndex(panel.options.format_combo.findData("jpg"))
    panel.builder.add_step()
    editor = panel.builder.editors[0]
    editor.tool_combo.setCurrentIndex(editor.tool_combo.findData("image-to-pdf"))
    out = tmp_path / "out"
    panel.options.set_output_folder(out)
    assert panel.convert_button.isEnabled(), panel.problems()
    panel.convert()
    assert "notes.txt" in panel.message.text()
    wait_for(qtbot, lambda: panel.progress.label.text() == "3 of 3 done", timeout=120)
    assert panel.progress.bar.value() == 100
    pages = {}
    for path in out.rglob("*.pdf"):
        with pymupdf.open(path) as doc:
            pages[path.relative_to(out).as_posix()] = doc.page_count
    assert pages == {"a.pdf": 1, "sub/b.pdf": 2, "sub/deeper/c.pdf": 1}
    assert not list(out.rglob("*.jpg"))


def test_files_named_directly_still_need_a_tool_that_takes_all_of_them(
        qtbot: QtBot, window: MainWindow, desktop: Desktop, tmp_path: Path) -> None:
    folder = album(tmp_path / "album")
    add(qtbot, window, [folder / "a.png", folder / "notes.txt"], 2)
    panel = window.convert
    assert "image-convert" not in desktop.tools.visible_ids()
    assert not panel.select_tool("image-convert")
    panel.options.set_tool(desktop.tools.tool("image-convert"))  # as if chosen before the text file came
    assert "Convert image does not take all of these files." in panel.problems()
    assert not panel.convert_button.isEnabled()


def test_why_convert_is_disabled_for_files_from_folders(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                       tmp_path: Path) -> None:
    add(qtbot, window, [album(tmp_path / "album")], 4)
    panel = window.convert
    assert "pdf-compress" not in desktop.tools.visible_ids()  # it takes none of them
    panel.options.set_tool(desktop.tools.tool("pdf-compress"))
    assert panel.problems()[0] == "Compress PDF takes none of the files from these folders."
    add(qtbot, window, [tmp_path / "album" / "notes.txt"], 4)  # already there from the folder: not named twice
    text = tmp_path / "readme.txt"
    text.write_text("named directly")
    add(qtbot, window, [text], 5)
    assert "image-convert" not in desktop.tools.visible_ids()  # a file named directly it does not take
    panel.options.set_tool(desktop.tools.tool("image-convert"))
    assert "Convert image does not take all of the files named directly." in panel.problems()


def test_files_group_by_subfolder_only_for_a_merging_tool(tmp_path: Path) -> None:
    folder = album(tmp_path / "album", "sub/b2.png")
    named = tmp_path / "loose.png"
    named.write_bytes(png_bytes())
    entries = scan_files([folder, named], ["*.png"], lambda p: "png")
    assert [e.label for e in entries] == ["a.png", "sub/b.png", "sub/b2.png", "sub/deeper/c.png", "loose.png"]
    assert entries[-1].root is None and entries[0].root == folder
    merged = group_entries(entries, merge=True)
    assert [([p.name for p in g.paths], g.subfolder.as_posix()) for g in merged] == [
        (["a.png"], "."), (["b.png", "b2.png"], "sub"), (["c.png"], "sub/deeper"), (["loose.png"], ".")]
    assert [g.subfolder.as_posix() for g in group_entries(entries, merge=False)] == [
        ".", "sub", "sub", "sub/deeper", "."]


def test_progress_counts_running_jobs_by_their_progress_and_ends_when_saved() -> None:
    def row(job_id: str, status: JobStatus, progress: int = 0, saving: bool = False) -> JobRow:
        return JobRow(job_id, "image-convert", "Convert image", "a.png", "This app", status, progress, 1.0,
                      saving=saving)

    tracker = ProgressTracker("b", 4)
    assert tracker.progress.text == "0 of 4 done" and tracker.progress.percent == 0
    tracker.started(["1", "2", "3", "4"])
    tracker.update([row("1", JobStatus.DONE), row("2", JobStatus.PROCESSING, 50), row("3", JobStatus.FAILED),
                    row("4", JobStatus.DONE, saving=True)])
    progress = tracker.progress
    assert progress.text == "1 of 4 done, 1 failed" and progress.percent == 87 and not progress.finished
    tracker.update([row("1", JobStatus.DONE), row("2", JobStatus.DONE), row("3", JobStatus.FAILED),
                    row("4", JobStatus.DONE)])
    assert tracker.progress.finished and tracker.progress.percent == 100
    assert tracker.progress.text == "3 of 4 done, 1 failed"


def test_entries_from_folders_know_their_subfolder(tmp_path: Path) -> None:
    entry = FileEntry(tmp_path / "album" / "sub" / "b.png", 1, "png", tmp_path / "album")
    assert entry.subfolder == Path("sub") and entry.label == "sub/b.png"
    assert FileEntry(tmp_path / "b.png", 1, "png").subfolder == Path(".")
