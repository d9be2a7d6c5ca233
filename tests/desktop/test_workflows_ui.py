"""Presets in the tool picker, the workflow builder and workflows in the jobs view: a real service, real
engines, real files dropped on the window."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from PIL import Image
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.context import Desktop
from desktop.controllers.presets import chain_problem, import_presets, legacy_presets
from desktop.main_window import MainWindow
from desktop.store import PresetStore
from desktop.views.workflow_builder import StepEditor
from localapi.core.states import JobStatus
from localapi.core.workflows.records import StepSpec
from tests.conftest import png_bytes
from tests.desktop.conftest import Recorder, wait_for
from tests.desktop.test_convert_window import drop

pytestmark = pytest.mark.filterwarnings("ignore:Function.*QDragEnterEvent:DeprecationWarning")


def pngs(folder: Path, *names: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, name in enumerate(names):
        path = folder / name
        path.write_bytes(png_bytes(80 + index * 10, 60, (30 * index, 120, 200)))
        paths.append(path)
    return paths


def add_files(qtbot: QtBot, window: MainWindow, paths: list[Path]) -> None:
    drop(qtbot, window.convert.file_view.viewport(), paths)
    wait_for(qtbot, lambda: window.convert.files.rowCount() == len(paths) and not window.convert.files.loading)


def test_a_one_step_builtin_preset_runs_as_ordinary_jobs(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                         tmp_path: Path) -> None:
    add_files(qtbot, window, pngs(tmp_path / "in", "photo.png"))
    out = tmp_path / "out"
    panel = window.convert
    assert "Web images" in [p.name for p in desktop.tools.visible_presets()]
    assert panel.picker.select_preset("Web images")
    assert panel.options.tool is not None and panel.options.tool.id == "image-resize"
    assert panel.options.output_format() == "webp" and panel.options.params()["quality"] == 80
    assert not panel.builder.editors
    panel.options.set_output_folder(out)
    assert panel.convert() is not None
    wait_for(qtbot, lambda: bool(desktop.jobs.rows) and desktop.jobs.rows[0].outputs != ())
    row = desktop.jobs.rows[0]
    assert row.tool == "image-resize" and row.workflow_id is None and row.step_label == ""
    with Image.open(row.outputs[0]) as image:
        assert Path(row.outputs[0]).parent == out and image.format == "WEBP"


def test_a_multi_step_builtin_preset_runs_as_a_workflow_and_lands_in_the_folder(
        qtbot: QtBot, window: MainWindow, desktop: Desktop, tmp_path: Path) -> None:
    add_files(qtbot, window, pngs(tmp_path / "in", "page1.png", "page2.png"))
    out = tmp_path / "out"
    panel = window.convert
    assert panel.picker.select_preset("Scan to searchable PDF")
    assert [e.tool_id() for e in panel.builder.editors] == ["ocr-pdf"]
    panel.options.set_output_folder(out)
    assert panel.convert_button.isEnabled(), panel.problems()
    panel.convert()
    wait_for(qtbot, lambda: list(out.glob("*.pdf")) != [], timeout=120)
    [result] = list(out.glob("*.pdf"))
    with pymupdf.open(result) as doc:
        assert doc.page_count == 2  # the first step merges: one workflow for both files
    wait_for(qtbot, lambda: sorted(r.step_label for r in desktop.jobs.rows) == ["Step 1/2", "Step 2/2"])
    assert all(r.workflow_id is not None and not r.can_retry for r in desktop.jobs.rows)
    assert "Step 2/2" in desktop.jobs.index(0, 0).data()
    wait_for(qtbot, lambda: "Saved" in panel.message.text())  # the file is in place just before it is told


def test_save_as_preset_round_trip(qtbot: QtBot, window: MainWindow, desktop: Desktop, recorder: Recorder) -> None:
    panel = window.convert
    assert panel.select_tool("image-convert")
    panel.options.form.editors["quality"].setValue(60)  # type: ignore[attr-defined]
    panel.options.format_combo.setCurrentIndex(panel.options.format_combo.findData("webp"))
    recorder.texts.append("Small webp")
    qtbot.mouseClick(panel.options.save_preset_button, Qt.MouseButton.LeftButton)
    wait_for(qtbot, lambda: desktop.service_presets.get("Small webp") is not None)
    assert desktop.service.presets.get("Small webp").steps == [StepSpec("image-convert", {"quality": 60}, "webp")]
    assert panel.options.preset_combo.currentData() == "Small webp"  # offered for the tool, and chosen
    assert "Small webp" in [p.name for p in desktop.tools.visible_presets()]

    panel.options.form.reset()
    assert panel.select_tool("pdf-compress")
    assert panel.picker.select_preset("Small webp")
    assert panel.options.tool is not None and panel.options.tool.id == "image-convert"
    assert panel.options.params() == {"quality": 60} and panel.options.output_format() == "webp"


def test_named_presets_of_presets_json_are_imported_once(desktop: Desktop, tmp_path: Path) -> None:
    legacy = PresetStore(tmp_path / "presets.json")
    legacy.save("image-convert", "Tiny", {"quality": 20}, "jpg")
    found = legacy_presets(legacy, {"image-convert": "Convert image"})
    assert import_presets(desktop.service, found) == ["Convert image: Tiny"]
    assert desktop.service.presets.get("Convert image: Tiny").steps == [
        StepSpec("image-convert", {"quality": 20}, "jpg")]
    assert import_presets(desktop.service, found) == []  # the name is taken: left alone
    legacy.mark_imported()
    assert PresetStore(tmp_path / "presets.json").imported()
    assert PresetStore(tmp_path / "presets.json").get("image-convert", "Tiny") is not None  # nothing is lost


def test_the_chain_is_checked_by_the_service(desktop: Desktop) -> None:
    steps = [StepSpec("image-to-pdf", {}, "pdf"), StepSpec("image-convert", {}, "png")]
    problem = chain_problem(desktop.service, steps, ["png"])
    assert problem is not None and "Step 2" in problem and "pdf" in problem
    assert chain_problem(desktop.service, steps[:1], ["png"]) is None


def test_build_a_two_step_workflow_save_it_and_run_it_on_dropped_pngs(
        qtbot: QtBot, window: MainWindow, desktop: Desktop, recorder: Recorder, tmp_path: Path) -> None:
    panel = window.convert
    assert panel.select_tool("image-convert")
    panel.options.format_combo.setCurrentIndex(panel.options.format_combo.findData("jpg"))
    editor: StepEditor = panel.builder.add_step()
    offered = [editor.tool_combo.itemData(i) for i in range(editor.tool_combo.count())]
    assert "image-to-pdf" in offered and "pdf-compress" not in offered and "audio-convert" not in offered
    editor.tool_combo.setCurrentIndex(editor.tool_combo.findData("image-to-pdf"))
    assert editor.form.specs  # the step's own settings form, from its schema
    assert panel.builder.problem_label.text() == ""
    third = panel.builder.add_step()  # after a PDF only PDF tools fit
    assert "pdf-compress" in [third.tool_combo.itemData(i) for i in range(third.tool_combo.count())]
    panel.builder.remove_step(third)
    assert [s.tool for s in panel.chain()] == ["image-convert", "image-to-pdf"]

    recorder.texts.append("Photos to PDF")
    panel.builder.save_button.click()
    wait_for(qtbot, lambda: desktop.service_presets.get("Photos to PDF") is not None)
    saved = desktop.service.presets.get("Photos to PDF")
    assert [(s.tool, s.output_format) for s in saved.steps] == [("image-convert", "jpg"), ("image-to-pdf", "pdf")]

    assert panel.select_tool("pdf-compress")  # start over, then run the preset
    assert not panel.builder.editors
    add_files(qtbot, window, pngs(tmp_path / "in", "a.png", "b.png"))
    assert panel.picker.select_preset("Photos to PDF")
    assert [e.tool_id() for e in panel.builder.editors] == ["image-to-pdf"]
    out = tmp_path / "out"
    panel.options.set_output_folder(out)
    assert panel.convert_button.isEnabled(), panel.problems()
    panel.convert()
    wait_for(qtbot, lambda: list(out.glob("*.pdf")) != [], timeout=90)
    [result] = list(out.glob("*.pdf"))
    with pymupdf.open(result) as doc:
        assert doc.page_count == 2
    assert not list(out.glob("*.jpg"))  # only the final step's files are delivered
    wait_for(qtbot, lambda: len(desktop.jobs.rows) == 3  # two conversions to JPG, one PDF of both
             and all(r.status == JobStatus.DONE for r in desktop.jobs.rows))
    assert sorted(r.step_label for r in desktop.jobs.rows) == ["Step 1/2", "Step 1/2", "Step 2/2"]


def test_a_failed_workflow_tells_the_user_which_step_and_file(
        qtbot: QtBot, window: MainWindow, desktop: Desktop, recorder: Recorder, tmp_path: Path) -> None:
    broken = tmp_path / "in" / "broken.png"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(png_bytes(200, 200)[:120])  # a PNG by its header, cut short
    panel = window.convert
    add_files(qtbot, window, [broken])
    assert panel.select_tool("image-convert")
    panel.options.format_combo.setCurrentIndex(panel.options.format_combo.findData("jpg"))
    panel.builder.add_step(StepSpec("image-to-pdf", {}, "pdf"))
    panel.options.set_output_folder(tmp_path / "out")
    assert panel.convert_button.isEnabled(), panel.problems()
    panel.convert()
    wait_for(qtbot, lambda: any("failed" in title for title, _ in recorder.notes), timeout=90)
    [(_, text)] = [n for n in recorder.notes if "failed" in n[0]]
    assert text.startswith("Step 1 (image-convert) failed on broken.png")
    assert "broken.png" in panel.message.text()
    wait_for(qtbot, lambda: any(r.status == JobStatus.FAILED for r in desktop.jobs.rows))
    failed = next(r for r in desktop.jobs.rows if r.status == JobStatus.FAILED)
    assert failed.step_label == "Step 1/2" and not failed.can_retry
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
