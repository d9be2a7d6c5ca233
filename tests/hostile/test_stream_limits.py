"""Event streams a caller may hold open: each holds a connection, a file descriptor and a queue, so a key
(or an address without one) that opens hundreds could starve every other key ("Too many open files").
Streams past the limit are 429 ``too_many_streams``; a stream whose client stops reading holds a bounded
queue, then ends, and the client resumes from the feed with ``Last-Event-ID``."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

from localapi.core.jobs import events
from tests.conftest import Server, assert_problem, module_server, slow_pdf_bytes, upload, wait_job

LIMIT = 2


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from module_server(tmp_path_factory, "stream-limits", max_event_streams_per_key=LIMIT,
                             max_event_streams_per_client=LIMIT)


def opened(stack: contextlib.ExitStack, client: httpx.Client, path: str) -> httpx.Response:
    """A stream held open by ``stack``; its status is known once its headers have come."""
    return stack.enter_context(client.stream("GET", path))


def test_a_keys_streams_past_its_limit_are_429_and_a_closed_one_frees_its_place(capped: Server) -> None:
    with capped.client(capped.create_key()) as c, capped.client(capped.create_key()) as other:
        with contextlib.ExitStack() as held:
            assert [opened(held, c, "/events").status_code for _ in range(LIMIT)] == [200] * LIMIT
            with c.stream("GET", "/events") as refused:
                refused.read()
                assert_problem(refused, 429, "too_many_streams")
                assert refused.headers["retry-after"]
            with other.stream("GET", "/events") as theirs:  # another key's streams are its own
                assert theirs.status_code == 200
        deadline = time.monotonic() + 20
        while True:  # the server lets go of a stream its client closed
            with c.stream("GET", "/events") as again:
                if again.status_code == 200:
                    break
            assert time.monotonic() < deadline, "the closed streams still count"
            time.sleep(0.2)


def test_an_addresses_job_streams_without_a_key_past_its_limit_are_429(capped: Server) -> None:
    with capped.client(capped.create_key()) as c:
        ref = upload(c, "slow.pdf", slow_pdf_bytes())
        job = c.post("/jobs", json={"tool": "pdf-compress", "inputFileIds": [ref["id"]],
                                    "params": {"level": "extreme"}}).json()
        try:
            with httpx.Client(base_url=capped.base_url, timeout=30) as anonymous, contextlib.ExitStack() as held:
                path = f"/jobs/{job['id']}/events"
                assert [opened(held, anonymous, path).status_code for _ in range(LIMIT)] == [200] * LIMIT
                with anonymous.stream("GET", path) as refused:
                    refused.read()
                    assert_problem(refused, 429, "too_many_streams")
        finally:
            c.post(f"/jobs/{job['id']}/cancel")
            wait_job(c, job["id"])


def test_a_listener_whose_client_does_not_read_ends_instead_of_growing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events, "MAX_QUEUED", 3)

    async def fill() -> list[object]:
        listener = events.Listener(asyncio.get_running_loop(), None, "key_x", events.STREAMED_TYPES)
        event = events.JobEvent(seq=1, type="job.progress", subject=None, created_at=datetime.now(UTC).timestamp())  # type: ignore[arg-type]
        for _ in range(10):
            listener.offer(event)
        return [listener.queue.get_nowait() for _ in range(listener.queue.qsize())] + [listener.ended]

    # what waited is dropped (the client reads it from the feed), and the stream is told to end
    assert asyncio.run(fill()) == [None, True]
