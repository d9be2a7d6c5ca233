"""A slow real job (pdf-compress, level extreme, on an image-heavy PDF): the GUI keeps ticking,
cancel stops it, and quitting keeps it for the next start."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from pytestqt.qtbot import QtBot

from desktop.context import Desktop
from desktop.main_window import MainWindow
from desktop.views.shell import QUIT, STAY
from localapi.config import load_settings
from localapi.core.jobs import Caller
from localapi.core.service import Service
from tests.desktop.conftest import Recorder, wait_for


def start_slow_job(qtbot: QtBot, window: MainWindow, desktop: Desktop, slow_pdf: Path, out: Path) -> str:
    window.convert.add_paths([slow_pdf])
    wait_for(qtbot, lambda: desktop.files.rowCount() == 1)
    assert window.convert.select_tool("pdf-compress")
    level = window.convert.options.form.editors["level"]
    level.setCurrentIndex(level.findData("extreme"))  # type: ignore[attr-defined]
    window.convert.options.set_output_folder(out)
    assert window.convert.convert() is not None

    def running() -> bool:
        rows = desktop.jobs.rows
        if rows and rows[0].status in ("DONE", "FAILED", "CANCELED"):
            raise AssertionError(f"the slow job ended early: {rows[0]}")
        return bool(rows) and rows[0].status == "PROCESSING" and rows[0].progress > 1

    wait_for(qtbot, running)
    return desktop.jobs.rows[0].id


def test_the_event_loop_keeps_ticking_during_a_long_job(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                        slow_pdf: Path, tmp_path: Path) -> None:
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(20)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start()
    job_id = start_slow_job(qtbot, window, desktop, slow_pdf, tmp_path / "out")  # includes copying 100+ MB in
    progress_before = desktop.jobs.rows[0].progress
    measured_from = len(ticks)
    qtbot.wait(2500)
    timer.stop()
    window_ticks = ticks[measured_from:]
    gaps = [b - a for a, b in zip(window_ticks, window_ticks[1:], strict=False)]  # while the job runs
    assert len(window_ticks) >= 2500 / 20 * 0.5, len(window_ticks)  # at least half the ticks arrived
    assert max(gaps) < 0.5, f"the GUI thread stalled for {max(gaps):.2f} s"
    assert desktop.jobs.rows[0].id == job_id and desktop.jobs.rows[0].progress > progress_before  # live progress
    desktop.jobs_controller.cancel([job_id])  # no need to wait for the rest (it may also have finished meanwhile)
    wait_for(qtbot, lambda: not desktop.jobs.rows[0].active)


def test_cancel_stops_a_running_job_and_writes_nothing(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                       slow_pdf: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    job_id = start_slow_job(qtbot, window, desktop, slow_pdf, out)
    window.activateWindow()
    started = time.monotonic()
    qtbot.keyClick(window, Qt.Key.Key_Escape)  # Esc: cancel the last batch
    wait_for(qtbot, lambda: desktop.jobs.rows[0].status == "CANCELED", timeout=15)
    assert time.monotonic() - started < 10
    row = desktop.jobs.rows[0]
    assert row.id == job_id and row.status_label == "Canceled" and row.outputs == ()
    assert not out.exists() or not any(out.iterdir())
    window.jobs_view.select_job(job_id)
    assert not window.jobs_view.cancel_button.isEnabled() and window.jobs_view.retry_button.isEnabled()


def test_closing_while_a_job_runs_asks_and_quitting_keeps_the_job(qtbot: QtBot, window: MainWindow,
                                                                  desktop: Desktop, service: Service,
                                                                  recorder: Recorder, slow_pdf: Path,
                                                                  tmp_path: Path) -> None:
    job_id = start_slow_job(qtbot, window, desktop, slow_pdf, tmp_path / "out")
    recorder.close_answer = STAY
    window.close()
    assert recorder.close_asked == [(1, False)] and window.isVisible() and recorder.quits == 0
    recorder.close_answer = QUIT
    window.close()
    assert recorder.quits == 1 and not window.isVisible()
    # what app.run does once the event loop has ended
    desktop.shutdown()
    reopened = Service.open(load_settings(service.settings.data_dir))
    try:
        job = reopened.jobs.get(job_id, Caller(any_owner=True))
        # back in the queue, to run at the next start
        assert job.status == "QUEUED", (job.error_code, job.error_message)
    finally:
        reopened.close()
