"""The order of a server-sent event stream, driven in process: each event is sent once, ids only rise,
and a job's held (coalesced) progress never comes after a newer change of that job.

The stream under test is the real ``stream()`` with real events; around it stand a listener (its queue),
the feed's ``unlisten`` and a request. The request's ``is_disconnected`` is asked only when the stream has
nothing to send or hold; it hands the stream its next batch of live events then, and says the client has
gone once there are none. The stream's clock is the test's, so which progress is held does not depend
on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from localapi.core.jobs.events import PROGRESS, TERMINAL_TYPES, TYPE_OF_STATUS, JobEvent
from localapi.core.jobs.records import Job
from localapi.core.states import JobStatus
from localapi.http.routes import events as routes
from localapi.http.routes.events import ends_job, stream

pytestmark = pytest.mark.timeout(30)

FEEDS = [pytest.param(ends_job, id="job-feed"), pytest.param(None, id="key-feed")]
Q, P, D = JobStatus.QUEUED, JobStatus.PROCESSING, JobStatus.DONE


def event(seq: int, job_id: str, status: JobStatus, progress: int | None = None) -> JobEvent:
    """A change of ``job_id``: its state, or (with ``progress``) how far it has got."""
    job = Job(id=job_id, key_id="key_1", tool="image-convert", status=status,
              progress=progress if progress is not None else (100 if status is D else 0), output_format=None,
              params={}, input_file_ids=[], result_file_ids=[], bundle_file_id=None, error_code=None,
              error_message=None, notes=[], created_at=1.0, started_at=None, finished_at=None, updated_at=1.0,
              attempts=0)
    kind = PROGRESS if progress is not None else TYPE_OF_STATUS[status]
    return JobEvent(seq=seq, type=kind, subject=job, created_at=1.0)


class Clock:
    """The stream's monotonic clock: still within a batch, a second on each time the stream goes idle."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(routes, "time", SimpleNamespace(monotonic=clock.monotonic))
    monkeypatch.setattr(routes, "KEEP_ALIVE_SECONDS", 0.01)  # an idle stream asks for the next batch at once
    monkeypatch.setattr(routes, "PROGRESS_INTERVAL", 0.01)  # and sends what it holds at once
    return clock


def run_stream(clock: Clock, backlog: list[JobEvent], batches: list[list[JobEvent]],
               until: Callable[[JobEvent], bool] | None) -> list[tuple[int, str, str]]:
    """(id, event, job id) of each event the stream sends, from ``backlog`` and then the live ``batches``."""

    async def sent() -> tuple[list[tuple[int, str, str]], list[Any]]:
        listener = SimpleNamespace(queue=asyncio.Queue())
        unlistened: list[Any] = []
        waiting = list(batches)

        async def is_disconnected() -> bool:
            if not waiting:
                return True
            clock.now += 1.0
            for e in waiting.pop(0):
                listener.queue.put_nowait(e)
            return False

        service = SimpleNamespace(events=SimpleNamespace(unlisten=unlistened.append))
        request = SimpleNamespace(is_disconnected=is_disconnected)
        frames = []
        async for chunk in stream(service, listener, backlog, request, until):  # type: ignore[arg-type]
            if not chunk.startswith(b":"):
                fields = dict(line.split(": ", 1) for line in chunk.decode().strip().split("\n"))
                frames.append((int(fields["id"]), fields["event"], json.loads(fields["data"])["id"]))
        return frames, unlistened

    frames, unlistened = asyncio.run(sent())
    assert len(unlistened) == 1  # the stream let go of its listener as it ended
    return frames


def assert_in_order(frames: list[tuple[int, str, str]]) -> None:
    """Ids strictly rise, and nothing of a job comes after its terminal event."""
    ids = [seq for seq, _, _ in frames]
    assert ids == sorted(set(ids)), frames
    ended: set[str] = set()
    for _, name, job_id in frames:
        assert job_id not in ended, f"{name} of {job_id} after its terminal event: {frames}"
        if name in TERMINAL_TYPES:
            ended.add(job_id)


@pytest.mark.parametrize("until", FEEDS)
def test_an_event_both_in_the_backlog_and_the_live_queue_is_sent_once(
        clock: Clock, until: Callable[[JobEvent], bool] | None) -> None:
    # the listener starts before the backlog is read: what is recorded in between comes by both
    backlog = [event(1, "job_a", Q), event(2, "job_a", P)]
    live = [event(2, "job_a", P), event(3, "job_a", P, 50), event(4, "job_a", D)]
    frames = run_stream(clock, backlog, [live], until)
    assert_in_order(frames)
    assert [(seq, name) for seq, name, _ in frames] == [
        (1, "job.queued"), (2, "job.processing"), (3, "job.progress"), (4, "job.done")]


@pytest.mark.parametrize("until", FEEDS)
def test_a_held_progress_is_dropped_once_a_newer_change_of_its_job_is_sent(
        clock: Clock, until: Callable[[JobEvent], bool] | None) -> None:
    # a burst of progress holds its newest; the job is requeued, runs again, and ends mid-burst
    first_run = [event(2, "job_a", P), event(3, "job_a", P, 10), event(4, "job_a", P, 20), event(5, "job_a", Q)]
    second_run = [event(6, "job_a", P), event(7, "job_a", P, 30), event(8, "job_a", P, 60),
                  event(9, "job_a", P, 90), event(10, "job_a", D)]
    frames = run_stream(clock, [event(1, "job_a", Q)], [first_run, second_run], until)
    assert_in_order(frames)
    # the held 20 % and 90 % were overtaken by the requeue and the end: never sent
    assert [seq for seq, _, _ in frames] == [1, 2, 3, 5, 6, 7, 10], frames


def test_on_the_key_feed_one_jobs_end_drops_its_held_progress_and_not_another_jobs(clock: Clock) -> None:
    burst = [event(1, "job_a", P), event(2, "job_a", P, 10), event(3, "job_a", P, 20), event(4, "job_a", P, 30),
             event(5, "job_a", D), event(6, "job_b", P), event(7, "job_b", P, 10), event(8, "job_b", P, 20)]
    later = [event(9, "job_b", P, 50), event(10, "job_b", D)]
    frames = run_stream(clock, [], [burst, later], until=None)
    assert_in_order(frames)
    # job_b's held 20 % is sent once the burst is over; job_a's held 30 % went with its end
    assert [seq for seq, _, _ in frames] == [1, 2, 5, 6, 7, 8, 9, 10], frames
