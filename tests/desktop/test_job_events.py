"""The jobs table follows the job-event feed: API jobs appear and finish without any read of the job
table, state changes land within moments of their event, and bursts of progress are applied in batches."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QThread, QTimer
from pytestqt.qtbot import QtBot

from desktop.context import Desktop
from desktop.controllers.jobs import JobsController
from desktop.models.jobs import JobRow
from localapi.core.jobs import Caller, Job
from localapi.core.jobs.events import PROGRESS
from localapi.core.keys import ApiKey
from localapi.core.service import Service
from localapi.core.states import JobStatus
from tests.conftest import png_bytes
from tests.desktop.conftest import wait_for


@pytest.fixture
def key(service: Service) -> ApiKey:
    return service.keys.create("script")[0]


def api_job(service: Service, key: ApiKey, folder: Path) -> Job:
    """A job as an API client makes it (its key, the service's create), not through the app."""
    path = folder / f"upload-{time.monotonic_ns()}.png"
    path.write_bytes(png_bytes())
    stored = service.files.add(path, "photo.png", key_id=key.id, kind="upload")
    return service.jobs.create(Caller(key=key), "image-convert", [stored.id], {}, "jpg")


def watch_jobs(qtbot: QtBot, desktop: Desktop, *, workers: bool) -> JobsController:
    """Start watching (the API stays off); with ``workers``, start the whole app as the window does."""
    controller = desktop.jobs_controller
    with qtbot.waitSignal(controller.snapshot, timeout=30_000):  # the first read of the job table is in
        if workers:
            desktop.start(start_api=False)
        else:
            controller.start()
    if workers:
        wait_for(qtbot, lambda: desktop.workers_started)
    return controller


def stop_repeating_timers(controller: JobsController) -> list[QTimer]:
    """Every timer of the controller that fires again and again (the sweep); the one-shot coalescing
    timer stays: it reads nothing."""
    stopped = []
    for timer in controller.findChildren(QTimer):
        if not timer.isSingleShot():
            timer.stop()
            stopped.append(timer)
    return stopped


@pytest.fixture
def table_reads(service: Service, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """Each read of the job table through the service (the jobs list the old poll ran)."""
    reads: list[float] = []
    page = service.jobs.page

    def counted(*args: object, **kwargs: object) -> object:
        reads.append(time.monotonic())
        return page(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(service.jobs, "page", counted)
    yield reads


def row_of(rows: list[JobRow], job_id: str) -> JobRow | None:
    return next((r for r in rows if r.id == job_id), None)


def test_an_api_job_shows_up_and_reaches_done_with_no_read_of_the_job_table(
        qtbot: QtBot, desktop: Desktop, service: Service, key: ApiKey, tmp_path: Path,
        table_reads: list[float]) -> None:
    controller = watch_jobs(qtbot, desktop, workers=True)
    assert desktop.api.state != "running"  # the feed runs without the API
    assert len(stop_repeating_timers(controller)) == 1  # the sweep for deletions, nothing else
    reads_before = len(table_reads)
    job = api_job(service, key, tmp_path)
    with qtbot.waitSignal(controller.snapshot, timeout=60_000,
                          check_params_cb=lambda rows: (r := row_of(rows, job.id)) is not None
                          and r.status == JobStatus.DONE):
        pass
    row = desktop.jobs.job(job.id)
    assert row is not None and row.status == JobStatus.DONE and row.progress == 100
    assert row.source == "API: script" and not row.from_app and row.files_label == "photo.png"
    assert len(table_reads) == reads_before, "the table was read again: something still polls it"


def test_a_change_of_state_reaches_the_model_soon_after_its_event(
        qtbot: QtBot, desktop: Desktop, service: Service, key: ApiKey, tmp_path: Path) -> None:
    controller = watch_jobs(qtbot, desktop, workers=True)
    shown: dict[JobStatus, float] = {}  # status -> when the model first showed it (time.time, as events)
    job_ids: list[str] = []

    def seen(rows: list[JobRow]) -> None:
        row = row_of(rows, job_ids[0]) if job_ids else None
        if row is not None:
            shown.setdefault(row.status, time.time())

    desktop.jobs.jobs_updated.connect(lambda: seen(desktop.jobs.rows))
    job_ids.append(api_job(service, key, tmp_path).id)
    with qtbot.waitSignal(controller.snapshot, timeout=60_000,
                          check_params_cb=lambda rows: (r := row_of(rows, job_ids[0])) is not None
                          and r.status == JobStatus.DONE):
        pass
    events = {e.job.status: e.created_at for e in service.events.since(0, job_id=job_ids[0]) if e.type != PROGRESS}
    latency = {status: shown[status] - events[status] for status in shown}
    # QUEUED may be superseded before it is drawn (an idle worker takes a job at once): newest wins
    assert JobStatus.DONE in latency, latency
    # Each state came by the feed, not by the sweep that runs every 30 s. How soon is a figure for
    # bench/bench_desktop_events.py (goal 100 ms): here a loaded 2-core machine may stall the test's
    # process for seconds, which says nothing about the product.
    assert all(0 <= seconds < 10.0 for seconds in latency.values()), latency


def test_a_burst_of_progress_is_applied_in_batches_and_a_state_change_at_once(
        qtbot: QtBot, desktop: Desktop, service: Service, key: ApiKey, tmp_path: Path) -> None:
    controller = watch_jobs(qtbot, desktop, workers=False)  # no workers: the job stays queued
    job = api_job(service, key, tmp_path)
    wait_for(qtbot, lambda: desktop.jobs.job(job.id) is not None)
    snapshots: list[float] = []
    controller.snapshot.connect(lambda rows: snapshots.append(time.monotonic()))
    changes = 200
    began = time.monotonic()

    def progress() -> None:  # as a worker reports, from a thread of its own
        for i in range(changes):
            service.events.change(job.id, PROGRESS, "update jobs set progress = ?, updated_at = ? where id = ?",
                                  1 + i * 98 // (changes - 1), time.time(), job.id)
            time.sleep(0.002)

    reporter = threading.Thread(target=progress)
    reporter.start()
    wait_for(qtbot, lambda: not reporter.is_alive() and (r := desktop.jobs.job(job.id)) is not None
             and r.progress == 99)
    took = time.monotonic() - began
    reporter.join()
    # at most one batch per coalescing interval (and a few for the edges), far fewer than the events
    assert len(snapshots) <= took / (controller.coalesce_ms / 1000) + 3, (len(snapshots), took)
    assert len(snapshots) < changes / 4, (len(snapshots), took)
    with qtbot.waitSignal(controller.snapshot, timeout=10_000,
                          check_params_cb=lambda rows: (r := row_of(rows, job.id)) is not None
                          and r.status == JobStatus.CANCELED):
        service.jobs.cancel(job.id, Caller(key=key))


def test_events_reach_the_model_on_the_gui_thread(qtbot: QtBot, desktop: Desktop, service: Service,
                                                  key: ApiKey, tmp_path: Path) -> None:
    controller = watch_jobs(qtbot, desktop, workers=False)
    threads: list[bool] = []
    controller.snapshot.connect(lambda rows: threads.append(QThread.currentThread() is desktop.jobs.thread()))
    job = api_job(service, key, tmp_path)
    wait_for(qtbot, lambda: desktop.jobs.job(job.id) is not None)
    assert threads and all(threads)


def test_a_job_deleted_through_the_api_leaves_the_table_with_its_event(
        qtbot: QtBot, desktop: Desktop, service: Service, key: ApiKey, tmp_path: Path) -> None:
    controller = watch_jobs(qtbot, desktop, workers=False)
    stop_repeating_timers(controller)  # no sweep: the job.deleted event alone takes the row away
    kept, deleted = api_job(service, key, tmp_path), api_job(service, key, tmp_path)
    wait_for(qtbot, lambda: desktop.jobs.job(deleted.id) is not None)
    with qtbot.waitSignal(controller.snapshot, timeout=30_000,
                          check_params_cb=lambda rows: deleted.id not in [r.id for r in rows]):
        service.jobs.delete(deleted.id, Caller(key=key))  # canceled, then deleted: two events
    assert desktop.jobs.job(deleted.id) is None and desktop.jobs.job(kept.id) is not None
    service.jobs.cancel(kept.id, Caller(key=key))  # later events bring back nothing deleted
    wait_for(qtbot, lambda: (row := desktop.jobs.job(kept.id)) is not None and row.status == JobStatus.CANCELED)
    assert desktop.jobs.job(deleted.id) is None


def test_a_job_gone_without_an_event_leaves_the_table_at_the_next_sweep(
        qtbot: QtBot, desktop: Desktop, service: Service, key: ApiKey, tmp_path: Path) -> None:
    controller = watch_jobs(qtbot, desktop, workers=False)
    kept, gone = api_job(service, key, tmp_path), api_job(service, key, tmp_path)
    wait_for(qtbot, lambda: (row := desktop.jobs.job(gone.id)) is not None and row.status == JobStatus.QUEUED)
    service.db.execute("delete from jobs where id = ?", gone.id)  # no event: only a read can tell
    controller.sweep()
    wait_for(qtbot, lambda: desktop.jobs.job(gone.id) is None)
    assert desktop.jobs.job(kept.id) is not None


def test_jobs_made_before_the_app_started_are_listed(qtbot: QtBot, desktop: Desktop, service: Service,
                                                      key: ApiKey, tmp_path: Path) -> None:
    earlier = api_job(service, key, tmp_path)
    watch_jobs(qtbot, desktop, workers=False)
    row = desktop.jobs.job(earlier.id)
    assert row is not None and row.status == JobStatus.QUEUED and row.source == "API: script"


def feed_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "filekiln-events")


def test_the_app_starts_the_feed_without_the_api_and_stops_it_on_quit(qtbot: QtBot, desktop: Desktop) -> None:
    before = feed_threads()
    watch_jobs(qtbot, desktop, workers=True)
    assert desktop.api.state != "running" and feed_threads() == before + 1
    desktop.shutdown()
    assert feed_threads() == before
