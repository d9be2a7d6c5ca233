"""A slow real job (pdf-compress, level extreme, on an image-heavy PDF): the GUI keeps ticking,
cancel stops it, and quitting keeps it for the next start."""

from __future__ import annotations

import subprocess
import sys
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
from localapi.core.states import JobStatus
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
        if rows and rows[0].status.finished:
            raise AssertionError(f"the slow job ended early: {rows[0]}")
        return bool(rows) and rows[0].status == JobStatus.PROCESSING and rows[0].progress > 1

    wait_for(qtbot, running)
    return desktop.jobs.rows[0].id


# Samples the machine's own scheduling delay from another process: on a loaded machine every process
# runs late now and then, which is no fault of the GUI thread. The monotonic clock is shared by processes.
_CLOCK_SAMPLER = """
import sys, time
while True:
    time.sleep(0.02)
    print(time.monotonic(), flush=True)
"""


def gaps(times: list[float]) -> list[tuple[float, float]]:
    return list(zip(times, times[1:], strict=False))


def test_the_event_loop_keeps_ticking_during_a_long_job(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                        slow_pdf: Path, tmp_path: Path) -> None:
    job_id = start_slow_job(qtbot, window, desktop, slow_pdf, tmp_path / "out")  # includes copying 100+ MB in
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(20)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    sampler = subprocess.Popen([sys.executable, "-c", _CLOCK_SAMPLER], stdout=subprocess.PIPE, text=True)
    seen: list[tuple[int, int]] = []  # (progress, timer ticks so far) at each progress the table showed

    def watch() -> None:
        row = desktop.jobs.job(job_id)
        if row is not None and row.status == JobStatus.PROCESSING and (not seen or row.progress > seen[-1][0]):
            seen.append((row.progress, len(ticks)))

    desktop.jobs.jobs_updated.connect(watch)
    timer.start()
    began = time.monotonic()
    try:
        # watch the job run for a while (or to its end): the table must show its progress step by step,
        # with the timer firing between steps, so the window is neither frozen nor catching up on a backlog
        wait_for(qtbot, lambda: (len(seen) >= 4 and time.monotonic() - began > 2.5)
                 or not desktop.jobs.rows[0].active, timeout=120)
    finally:
        timer.stop()
        desktop.jobs.jobs_updated.disconnect(watch)
        sampler.terminate()
        machine = [float(line) for line in sampler.communicate()[0].split()]
    assert len(seen) >= 4, f"the table showed too few steps of a running job: {seen}"
    assert all(b[1] > a[1] for a, b in zip(seen, seen[1:], strict=False)), seen
    # no stall of the GUI thread beyond what the machine did to every process at the same time
    for start, end in gaps(ticks):
        if end - start < 0.5:
            continue
        late = max((b - a - 0.02 for a, b in gaps(machine) if b > start and a < end), default=0.0)
        assert end - start - late < 0.5, f"the GUI thread stalled for {end - start:.2f} s (machine: {late:.2f} s)"
    desktop.jobs_controller.cancel([job_id])  # no need to wait for the rest (it may also have finished meanwhile)
    wait_for(qtbot, lambda: not desktop.jobs.rows[0].active)


def test_cancel_stops_a_running_job_and_writes_nothing(qtbot: QtBot, window: MainWindow, desktop: Desktop,
                                                       slow_pdf: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    job_id = start_slow_job(qtbot, window, desktop, slow_pdf, out)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)  # a window shortcut needs the window active
    qtbot.keyClick(window, Qt.Key.Key_Escape)  # Esc: cancel the last batch
    # however long the machine takes, the job must end canceled: finished (DONE) means the cancel missed it
    wait_for(qtbot, lambda: not desktop.jobs.rows[0].active, timeout=120)
    row = desktop.jobs.rows[0]
    assert row.status == JobStatus.CANCELED, (row.status, row.progress)
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
        assert job.status == JobStatus.QUEUED, (job.error_code, job.error_message)
    finally:
        reopened.close()
