"""The jobs list tells what happened and lets people stop things: each row's result (name, size, change),
result names from a template, per-row Cancel and Stop all, Retry that hands the selection to the new
job, refused files as rows with their own reason, and a password asked for on the row."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from desktop.context import Desktop
from desktop.main_window import MainWindow
from desktop.models.jobs import GrewRole, JobRow, JobsModel, ProgressRates, format_size
from desktop.store import Prefs, check_template, copy_results, default_template, render_name
from localapi.core.codes import CODES
from localapi.core.states import JobStatus
from tests.conftest import image_pdf_bytes, png_bytes
from tests.desktop.conftest import Recorder, wait_for

# ---- names, sizes, time left: small pure pieces ----


def test_each_tool_kind_has_its_own_default_name() -> None:
    assert render_name(default_template("pdf-compress"), "report.pdf", "pdf-compress") == "report-compressed.pdf"
    assert render_name(default_template("ai-remove-background"), "cat.png", "ai-remove-background") == "cat-nobg.png"
    assert render_name(default_template("image-convert"), "photo.webp", "image-convert") == "photo.webp"
    assert render_name("{name}-{tool}", "logs.tar.gz", "archive-convert") == "logs-archive-convert.tar.gz"
    assert render_name("{name}-x.{ext}", "README", "document-convert") == "README-x"


@pytest.mark.parametrize(("template", "problem"), [
    ("{tool}.{ext}", "must contain {name}"), ("{name}-{size}", "Unknown placeholder {size}"),
    ("{name", "Braces"), ("out/{name}", "cannot contain"), ("", "Give a name template")])
def test_a_template_without_name_or_with_unknown_placeholders_is_refused(template: str, problem: str) -> None:
    assert problem in (check_template(template) or "")


def test_prefs_forget_a_template_that_cannot_name_files(tmp_path: Path) -> None:
    (tmp_path / "desktop.json").write_text('{"output_template": "{tool}"}')
    assert Prefs.load(tmp_path / "desktop.json").output_template == ""
    (tmp_path / "desktop.json").write_text('{"output_template": "{name}-done"}')
    assert Prefs.load(tmp_path / "desktop.json").output_template == "{name}-done"


def test_results_are_named_by_the_template_and_a_taken_name_gets_a_number(tmp_path: Path) -> None:
    stored = tmp_path / "stored"
    stored.write_bytes(b"result")
    out = tmp_path / "out"
    out.mkdir()
    (out / "report-compressed.pdf").write_bytes(b"an earlier result")
    written, _ = copy_results([("report.pdf", stored)], out, "rename", template="{name}-compressed.{ext}",
                              tool="pdf-compress")
    again, _ = copy_results([("report.pdf", stored)], out, "rename", template="{name}-compressed.{ext}",
                            tool="pdf-compress")
    assert [p.name for p in written + again] == ["report-compressed-2.pdf", "report-compressed-3.pdf"]
    assert (out / "report-compressed.pdf").read_bytes() == b"an earlier result"


def test_a_finished_row_reads_as_name_size_and_change(qapp: object) -> None:
    smaller = JobRow("a", "pdf-compress", "Compress PDF", "report.pdf", "This app", JobStatus.DONE, 100, 1.0,
                     outputs=("/out/report-compressed.pdf",), output_bytes=1_070_000, input_bytes=7_133_000)
    bigger = JobRow("b", "image-convert", "Convert image", "a.png", "This app", JobStatus.DONE, 100, 2.0,
                    outputs=("/out/a.bmp",), output_bytes=450_000, input_bytes=100_000)
    assert smaller.result_text == "report-compressed.pdf — 1.07 MB, -85 %" and not smaller.grew
    assert bigger.result_text == "a.bmp — 450 KB, +350 %" and bigger.grew
    model = JobsModel()
    model.apply([bigger, smaller])
    assert model.index(0, JobsModel.RESULT_COLUMN).data(GrewRole)
    assert model.index(0, JobsModel.RESULT_COLUMN).data(Qt.ItemDataRole.ForegroundRole) is not None
    assert model.index(1, JobsModel.RESULT_COLUMN).data(Qt.ItemDataRole.ForegroundRole) is None
    assert [format_size(n) for n in (1, 999, 1000, 99_949, 999_600, 12_345_678_901)] == [
        "1 byte", "999 bytes", "1.00 KB", "99.9 KB", "1.00 MB", "12.3 GB"]


def test_the_time_left_is_smoothed_counts_down_and_never_goes_negative() -> None:
    rates = ProgressRates(smoothing=8.0, follow=3.0, settle=2.0)
    rates.feed("j", 0, 0.0)
    rates.feed("j", 1, 1.0)
    assert rates.seconds_left("j", 1.0) is None  # too early to tell
    for t in range(2, 21):
        rates.feed("j", t, float(t))  # 1 % a second
    assert rates.seconds_left("j", 20.0) == pytest.approx(80, abs=1)
    assert rates.seconds_left("j", 30.0) == pytest.approx(70, abs=1)  # counts down between reports
    rates.feed("j", 40, 21.0)  # a burst of 20 % in a second: 60 % left, the pace not yet known
    assert 55 < (rates.seconds_left("j", 21.0) or 0) < 75  # follows the work done, not the burst's pace
    assert rates.seconds_left("j", 10_000.0) == 0.0


# ---- real jobs in a real window ----


def pdf_samples(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    scan = folder / "scan.pdf"
    scan.write_bytes(image_pdf_bytes(pages=1, size=500))
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret")
    locked = folder / "locked.pdf"
    doc.save(locked, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="open sesame", owner_pw="open sesame")
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "cut short")
    data = doc.tobytes()
    damaged = folder / "damaged.pdf"
    damaged.write_bytes(data[:len(data) // 2])
    return {"scan": scan, "locked": locked, "damaged": damaged}


def convert(qtbot: QtBot, window: MainWindow, desktop: Desktop, paths: list[Path], tool: str, out: Path,
            output_format: str | None = None) -> str:
    window.convert.files.clear()
    window.convert.add_paths(paths)
    wait_for(qtbot, lambda: desktop.files.rowCount() == len(paths) and not desktop.files.loading)
    assert window.convert.select_tool(tool)
    options = window.convert.options
    if output_format is not None:
        options.format_combo.setCurrentIndex(options.format_combo.findData(output_format))
    options.set_output_folder(out)
    batch = window.convert.convert()
    assert batch is not None, window.convert.problems()
    return batch


def test_a_compressed_pdf_row_shows_its_name_size_and_change_with_open_and_reveal(
        qtbot: QtBot, window: MainWindow, desktop: Desktop, recorder: Recorder, tmp_path: Path) -> None:
    scan = pdf_samples(tmp_path / "in")["scan"]
    out = tmp_path / "out"
    convert(qtbot, window, desktop, [scan], "pdf-compress", out)
    assert window.convert.message.text() == "Compress PDF: 1 job queued."
    wait_for(qtbot, lambda: bool(desktop.jobs.rows) and bool(desktop.jobs.rows[0].outputs), timeout=120)
    row = desktop.jobs.rows[0]
    saved = out / "scan-compressed.pdf"
    assert row.outputs == (str(saved),) and row.output_bytes == saved.stat().st_size
    change = round((saved.stat().st_size - scan.stat().st_size) * 100 / scan.stat().st_size)
    assert change < 0, "pdf-compress made the sample bigger"
    shown = desktop.jobs.index(0, JobsModel.RESULT_COLUMN).data()
    assert shown == f"scan-compressed.pdf — {format_size(saved.stat().st_size)}, {change} %"
    assert re.fullmatch(r"scan-compressed\.pdf — [\d.]+ (KB|MB), -\d+ %", shown)
    # the message about the Convert follows the job to its end
    wait_for(qtbot, lambda: window.convert.message.text() == "Compress PDF: your file is converted.")

    actions = window.jobs_view.row_actions(row.id)
    assert actions is not None and actions.open_button.isVisible() and actions.reveal_button.isVisible()
    assert not actions.cancel_button.isVisible() and not actions.retry_button.isVisible()
    qtbot.mouseClick(actions.open_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(actions.reveal_button, Qt.MouseButton.LeftButton)
    assert recorder.opened == [saved] and recorder.revealed == [saved]


def test_the_template_setting_names_results_and_a_second_run_does_not_overwrite(
        qtbot: QtBot, window: MainWindow, desktop: Desktop, tmp_path: Path) -> None:
    photo = tmp_path / "in" / "photo.png"
    photo.parent.mkdir()
    photo.write_bytes(png_bytes(90, 60))
    panel = window.settings_panel
    panel.template_edit.setText("{tool}")
    panel.save()
    assert "must contain {name}" in panel.message.text() and desktop.prefs.output_template == ""
    panel.template_edit.setText("{name}-{tool}")
    panel.save()
    assert desktop.prefs.output_template == "{name}-{tool}"
    assert Prefs.load(desktop.folder / "desktop.json").output_template == "{name}-{tool}"

    out = tmp_path / "out"
    for runs in (1, 2):
        convert(qtbot, window, desktop, [photo], "image-convert", out, "webp")
        wait_for(qtbot, lambda n=runs: sum(bool(r.outputs) for r in desktop.jobs.rows) == n, timeout=120)
    assert sorted(p.name for p in out.iterdir()) == ["photo-image-convert-2.webp", "photo-image-convert.webp"]
    newest = desktop.jobs.rows[0]
    assert newest.outputs == (str(out / "photo-image-convert-2.webp"),)
    assert desktop.jobs.index(0, JobsModel.RESULT_COLUMN).data().startswith("photo-image-convert-2.webp — ")


# an H.264 "slow" encode of a 30 s clip at 1280 px: long enough on any machine for a click to land mid-job
SLOW_VIDEO = {"videoCodec": "h264", "preset": "slow", "width": 1280}


@pytest.fixture(scope="module")
def slow_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.converters import media_samples

    return media_samples.write_clip(tmp_path_factory.mktemp("clip") / "clip.mp4", "mp4", seconds=30.0,
                                    size=(320, 240))


def start_slow_jobs(qtbot: QtBot, desktop: Desktop, clip: Path, out: Path, count: int = 1) -> list[str]:
    """``count`` slow video jobs made as the Convert page makes them; their ids once one of them runs."""
    desktop.jobs_controller.submit([[clip]] * count, "video-convert", SLOW_VIDEO, "mp4", out, "rename")
    wait_for(qtbot, lambda: len(desktop.jobs.rows) == count and any(
        r.status == JobStatus.PROCESSING and r.progress > 1 for r in desktop.jobs.rows), timeout=120)
    return [r.id for r in desktop.jobs.rows]


def test_a_rows_cancel_stops_a_long_job_and_after_retry_esc_stops_the_new_one(
        qtbot: QtBot, window: MainWindow, desktop: Desktop, slow_clip: Path, tmp_path: Path) -> None:
    [job_id] = start_slow_jobs(qtbot, desktop, slow_clip, tmp_path / "out")
    actions = window.jobs_view.row_actions(job_id)
    assert actions is not None and actions.cancel_button.isVisible() and not actions.open_button.isVisible()
    qtbot.mouseClick(actions.cancel_button, Qt.MouseButton.LeftButton)
    wait_for(qtbot, lambda: not desktop.jobs.rows[0].active, timeout=120)
    assert desktop.jobs.rows[0].status == JobStatus.CANCELED
    actions = window.jobs_view.row_actions(job_id)
    assert actions is not None and actions.retry_button.isVisible() and not actions.cancel_button.isVisible()

    window.jobs_view.table.clearSelection()
    qtbot.mouseClick(actions.retry_button, Qt.MouseButton.LeftButton)
    wait_for(qtbot, lambda: len(desktop.jobs.rows) == 2 and desktop.jobs.rows[0].id != job_id)
    new_id = desktop.jobs.rows[0].id
    wait_for(qtbot, lambda: [j.id for j in window.jobs_view.selected()] == [new_id])  # the selection followed
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)  # a window shortcut needs the window active
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    wait_for(qtbot, lambda: not desktop.jobs.rows[0].active, timeout=120)
    assert desktop.jobs.rows[0].id == new_id and desktop.jobs.rows[0].status == JobStatus.CANCELED


def test_stop_all_cancels_every_waiting_and_running_job(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                        slow_clip: Path, tmp_path: Path) -> None:
    view = window.jobs_view
    assert not view.stop_all_button.isEnabled()
    start_slow_jobs(qtbot, desktop, slow_clip, tmp_path / "out", count=3)
    assert view.stop_all_button.isEnabled()
    qtbot.mouseClick(view.stop_all_button, Qt.MouseButton.LeftButton)
    wait_for(qtbot, lambda: not any(r.active for r in desktop.jobs.rows), timeout=120)
    assert [r.status for r in desktop.jobs.rows] == [JobStatus.CANCELED] * 3
    assert not view.stop_all_button.isEnabled() and not (tmp_path / "out").exists()


def test_a_batch_says_password_protected_and_damaged_apart_and_the_password_on_the_row_converts_it(
        qtbot: QtBot, window: MainWindow, desktop: Desktop, tmp_path: Path) -> None:
    files = pdf_samples(tmp_path / "in")
    out = tmp_path / "out"
    convert(qtbot, window, desktop, [files["damaged"], files["locked"]], "pdf-compress", out)
    wait_for(qtbot, lambda: len(desktop.jobs.rows) == 2)
    rows = {r.files_label: r for r in desktop.jobs.rows}
    locked, damaged = rows["locked.pdf"], rows["damaged.pdf"]
    assert locked.status == damaged.status == JobStatus.FAILED
    assert locked.error_code == "password_protected" and damaged.error_code == "damaged_input"
    assert locked.status_label == f"Failed: {CODES['password_protected'].text}"
    assert damaged.status_label == f"Failed: {CODES['damaged_input'].text}"
    wait_for(qtbot, lambda: window.convert.message.text() == "Compress PDF: 0 done, 2 failed.")

    # refused before converting: a row all the same, with Details and Retry (or, lacking a password, Unlock)
    damaged_actions = window.jobs_view.row_actions(damaged.id)
    assert damaged_actions is not None and damaged_actions.retry_button.isVisible()
    assert damaged_actions.details_button.isVisible() and not damaged_actions.password_edit.isVisible()
    qtbot.mouseClick(damaged_actions.details_button, Qt.MouseButton.LeftButton)
    box = window.jobs_view.details_box
    assert box is not None and "damaged_input" in box.detailedText() and "damaged.pdf" in box.detailedText()
    box.close()

    actions = window.jobs_view.row_actions(locked.id)
    assert actions is not None and actions.password_edit.isVisible() and actions.details_button.isVisible()
    assert not actions.unlock_button.isEnabled()  # not before a password is typed
    qtbot.keyClicks(actions.password_edit, "open barley")
    qtbot.mouseClick(actions.unlock_button, Qt.MouseButton.LeftButton)
    # a wrong password: the row that tried it says so and asks again
    wait_for(qtbot, lambda: any(r.error_code == "wrong_password" for r in desktop.jobs.rows), timeout=120)
    wrong = next(r for r in desktop.jobs.rows if r.error_code == "wrong_password")
    assert wrong.status_label == f"Failed: {CODES['wrong_password'].text}" and wrong.can_unlock
    actions = window.jobs_view.row_actions(wrong.id)
    assert actions is not None and actions.password_edit.isVisible()
    qtbot.keyClicks(actions.password_edit, "open sesame")
    qtbot.keyClick(actions.password_edit, Qt.Key.Key_Return)
    saved = out / "locked-compressed.pdf"
    wait_for(qtbot, lambda: any(r.outputs == (str(saved),) for r in desktop.jobs.rows), timeout=120)
    assert "locked.pdf" not in {r.files_label for r in desktop.jobs.rows if r.refused}  # the refusal gave way
    with pymupdf.open(saved) as doc:
        assert not doc.needs_pass and "secret" in doc[0].get_text()

    qtbot.mouseClick(window.jobs_view.clear_button, Qt.MouseButton.LeftButton)
    wait_for(qtbot, lambda: desktop.jobs.rowCount() == 0)
    assert window.convert.message.text() == ""


def test_a_refused_file_retried_after_it_was_mended_converts(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                           tmp_path: Path) -> None:
    files = pdf_samples(tmp_path / "in")
    convert(qtbot, window, desktop, [files["damaged"]], "pdf-compress", tmp_path / "out")
    wait_for(qtbot, lambda: len(desktop.jobs.rows) == 1)
    refused = desktop.jobs.rows[0]
    assert refused.refused and refused.error_code == "damaged_input" and refused.can_retry
    files["damaged"].write_bytes(files["scan"].read_bytes())  # mended on disk
    actions = window.jobs_view.row_actions(refused.id)
    assert actions is not None
    qtbot.mouseClick(actions.retry_button, Qt.MouseButton.LeftButton)
    wait_for(qtbot, lambda: bool(desktop.jobs.rows) and bool(desktop.jobs.rows[0].outputs), timeout=120)
    assert [r.id for r in desktop.jobs.rows if r.refused] == []
    assert desktop.jobs.rows[0].outputs == (str(tmp_path / "out" / "damaged-compressed.pdf"),)
