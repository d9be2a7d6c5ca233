"""Waiting on a job and following its events (SSE), through a real server and real conversions."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import psutil
import pytest

from tests.conftest import MachineDelays, Server, assert_problem, module_server, png_bytes, upload, wait_job
from tests.converters import media_samples

SLOW = {"videoCodec": "h264", "preset": "medium", "width": 1280}  # some 1.5 s of encoding for the clip below
TERMINAL = {"job.done", "job.failed", "job.canceled"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from module_server(tmp_path_factory, "events")


@pytest.fixture(scope="module")
def key(server: Server) -> str:
    return server.create_key("events")


@pytest.fixture
def client(server: Server, key: str) -> Iterator[httpx.Client]:
    with server.client(key) as c:
        yield c


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    folder = tmp_path_factory.mktemp("clip")
    return media_samples.write_clip(folder / "clip.mp4", "mp4", seconds=5.0, size=(320, 240)).read_bytes()


@pytest.fixture(scope="module")
def long_clip(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """10 s of clip without sound (its making costs the most): its encode (some 2 s here) reports
    progress every 0.25 s as the video is written, so the test sees several progress events even on a
    fast machine."""
    folder = tmp_path_factory.mktemp("long-clip")
    return media_samples.write_clip(folder / "clip.mp4", "mp4", seconds=10.0, size=(320, 240),
                                    audio=False).read_bytes()


def slow_job(client: httpx.Client, clip: bytes) -> dict[str, Any]:
    ref = upload(client, "clip.mp4", clip)
    r = client.post("/jobs", json={"tool": "video-convert", "inputFileIds": [ref["id"]], "params": SLOW,
                                   "outputFormat": "mp4"})
    assert r.status_code == 201, r.text
    return dict(r.json())


def image_job(client: httpx.Client, wait: float | None = None) -> httpx.Response:
    ref = upload(client, "a.png", png_bytes())
    return client.post("/jobs" + (f"?wait={wait}" if wait is not None else ""),
                       json={"tool": "image-convert", "inputFileIds": [ref["id"]], "outputFormat": "webp"})


def read_events_iter(response: httpx.Response) -> Iterator[tuple[int, str, dict[str, Any]]]:
    fields: dict[str, str] = {}
    for line in response.iter_lines():
        if line.startswith(":"):
            continue
        if line == "":
            if "data" in fields:
                yield int(fields.get("id", "0")), fields["event"], json.loads(fields["data"])
            fields = {}
            continue
        name, _, value = line.partition(": ")
        fields[name] = value


def read_events(response: httpx.Response, stop_after: int | None = None) -> list[tuple[int, str, dict[str, Any]]]:
    """(id, event, data) of each event of an open SSE response, until it ends or ``stop_after`` events."""
    events: list[tuple[int, str, dict[str, Any]]] = []
    for event in read_events_iter(response):
        events.append(event)
        if stop_after is not None and len(events) >= stop_after:
            break
    return events


def read_until_done(response: httpx.Response, job_id: str) -> list[tuple[int, str, dict[str, Any]]]:
    """The events of an open SSE response up to the terminal event of ``job_id``."""
    events: list[tuple[int, str, dict[str, Any]]] = []
    for event in read_events_iter(response):
        events.append(event)
        if event[1] in TERMINAL and event[2]["id"] == job_id:
            break
    return events


def finished_at(job: dict[str, Any]) -> float:
    return datetime.fromisoformat(job["finishedAt"]).timestamp()


def recorded_progress(server: Server, job_id: str, after: int, before: int) -> int:
    """How many progress events of the job the feed recorded between two of its events."""
    db = server.database()
    try:
        return len(db.all("select seq from job_events where job_id = ? and type = ? and seq > ? and seq < ?",
                          job_id, "job.progress", after, before))
    finally:
        db.close()


# --------------------------------------------------------------------------- wait


@pytest.mark.backends
def test_wait_answers_as_the_job_ends_not_when_the_wait_runs_out(client: httpx.Client, clip: bytes) -> None:
    job = slow_job(client, clip)
    started = time.monotonic()
    with MachineDelays() as machine:
        answered = client.get(f"/jobs/{job['id']}", params={"wait": 60}).json()
        at, wall = time.monotonic(), time.time()
    took = at - started
    assert answered["status"] == "DONE", answered
    assert took < 45, f"answered after {took:.1f} s, as if the wait had run out"
    # the answer came right after the job's end (its finishedAt, by the same clock), not counting the time
    # the machine held every process back (the figure is in bench/)
    since_end = wall - finished_at(answered)
    lost = machine.lost(at - since_end, at)
    assert since_end - lost < 5, f"answered {since_end:.1f} s after the job ended, {lost:.1f} s of it stalled"


def test_create_and_wait_returns_the_finished_job_with_201(client: httpx.Client) -> None:
    r = image_job(client, wait=30)
    assert r.status_code == 201 and r.json()["status"] == "DONE" and r.json()["progress"] == 100, r.text
    assert client.get(f"/jobs/{r.json()['id']}/result").status_code == 200


@pytest.mark.backends
def test_include_result_gives_a_done_jobs_download_links_in_the_answer(client: httpx.Client, clip: bytes) -> None:
    ref = upload(client, "a.png", png_bytes())
    r = client.post("/jobs", params={"wait": 30, "include": "result"},
                    json={"tool": "image-convert", "inputFileIds": [ref["id"]], "outputFormat": "webp"})
    assert r.status_code == 201 and r.json()["status"] == "DONE", r.text
    result = r.json()["result"]
    assert [f["name"] for f in result["files"]] == ["a.webp"]
    assert client.get(result["downloadUrl"]).content[8:12] == b"WEBP"
    # the same links as GET /jobs/{id}/result gives, on GET /jobs/{id} too; without include, null
    again = client.get(f"/jobs/{r.json()['id']}", params={"include": "result"}).json()["result"]
    assert again["files"][0]["id"] == client.get(f"/jobs/{r.json()['id']}/result").json()["files"][0]["id"]
    assert client.get(f"/jobs/{r.json()['id']}").json()["result"] is None
    # a job that has not ended has no result to give; an unknown include is refused
    running = slow_job(client, clip)
    assert client.get(f"/jobs/{running['id']}", params={"include": "result"}).json()["result"] is None
    client.post(f"/jobs/{running['id']}/cancel")
    assert_problem(client.get(f"/jobs/{running['id']}", params={"include": "files"}), 422, "invalid_params")


def test_wait_zero_answers_at_once_and_a_long_wait_is_taken_as_sixty(client: httpx.Client, clip: bytes) -> None:
    job = slow_job(client, clip)
    now = client.get(f"/jobs/{job['id']}", params={"wait": 0}).json()
    assert now["status"] in ("QUEUED", "PROCESSING"), now
    done = wait_job(client, job["id"])
    assert client.get(f"/jobs/{job['id']}", params={"wait": 3600}).json() == done  # accepted, ended: at once
    assert_problem(client.get(f"/jobs/{job['id']}", params={"wait": -1}), 422, "invalid_params")


def test_wait_on_an_unknown_job_is_404(client: httpx.Client) -> None:
    assert_problem(client.get("/jobs/job_" + "0" * 32, params={"wait": 5}), 404, "job_not_found")


def test_five_hundred_waiters_on_one_job_are_all_answered_and_memory_stays_flat(
        server: Server, client: httpx.Client, clip: bytes) -> None:
    job = slow_job(client, clip)
    before = psutil.Process(server.process.pid).memory_info().rss
    peak = [before]
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], psutil.Process(server.process.pid).memory_info().rss)

    async def waiters() -> list[dict[str, Any]]:
        limits = httpx.Limits(max_connections=600, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=server.base_url, limits=limits, timeout=120,
                                     headers=dict(client.headers)) as ac:
            answers = await asyncio.gather(*(ac.get(f"/jobs/{job['id']}", params={"wait": 60})
                                             for _ in range(500)))
        return [a.json() for a in answers if a.status_code == 200]

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        answered = asyncio.run(waiters())
    finally:
        done.set()
        watcher.join()
    assert len(answered) == 500 and {a["status"] for a in answered} == {"DONE"}
    assert peak[0] - before < 150 * 1024**2, f"the server grew by {(peak[0] - before) >> 20} MiB"
    assert image_job(client, wait=30).json()["status"] == "DONE"  # and it still works


# --------------------------------------------------------------------------- server-sent events


@pytest.mark.backends
def test_a_job_streams_every_change_in_order_and_ends_with_one_terminal_event(
        server: Server, client: httpx.Client, long_clip: bytes) -> None:
    job = slow_job(client, long_clip)
    with client.stream("GET", f"/jobs/{job['id']}/events") as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = read_events(r)
    ids = [e[0] for e in events]
    names = [e[1] for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), ids
    assert names[0] in ("job.queued", "job.processing") and "job.processing" in names, names
    assert names[-1] == "job.done" and sum(n in TERMINAL for n in names) == 1, names
    progress = [e[2]["progress"] for e in events]
    assert progress == sorted(progress) and progress[-1] == 100, progress
    # progress the job reported after the stream began is streamed: some of it (coalesced), never none
    if recorded_progress(server, job["id"], after=ids[0], before=ids[-1]):
        assert "job.progress" in names[names.index("job.processing"):-1], names
    by_status = {"QUEUED": "job.queued", "PROCESSING": "job.processing", "DONE": "job.done"}
    for _, name, data in events:
        assert data["id"] == job["id"]
        assert name == "job.progress" and data["status"] == "PROCESSING" or name == by_status[data["status"]]


@pytest.mark.backends
def test_reconnecting_with_last_event_id_loses_no_transition(client: httpx.Client, clip: bytes) -> None:
    job = slow_job(client, clip)
    with client.stream("GET", f"/jobs/{job['id']}/events") as r:
        first = read_events(r, stop_after=2)  # then the client drops the connection
    with client.stream("GET", f"/jobs/{job['id']}/events", headers={"Last-Event-ID": str(first[-1][0])}) as r:
        rest = read_events(r)
    events = first + rest
    ids = [e[0] for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), ids
    changes = [name for _, name, _ in events if name != "job.progress"]
    assert changes[-1] == "job.done" and "job.processing" in changes, changes
    assert changes == sorted(set(changes), key=changes.index), changes  # no state twice, none skipped
    recorded = client.get(f"/jobs/{job['id']}/events", headers={"Last-Event-ID": "0"})
    everything = [e[1] for e in read_events(recorded) if e[1] != "job.progress"]
    assert everything[everything.index(changes[0]):] == changes


@pytest.mark.timeout(30)
def test_the_key_feed_replays_what_came_after_last_event_id_and_nothing_before(server: Server) -> None:
    with server.client(server.create_key("replay")) as c:
        job = image_job(c, wait=30).json()
        assert job["status"] == "DONE", job
        # from the feed's start: the ended job's changes, in order, before anything that happens next
        with c.stream("GET", "/events", headers={"Last-Event-ID": "0"}) as r:
            after = image_job(c).json()["id"]
            events = read_until_done(r, after)
        ids = [e[0] for e in events]
        assert ids == sorted(set(ids)), ids
        replayed = [e for e in events if e[2]["id"] == job["id"]]
        assert events[:len(replayed)] == replayed, events
        assert [e[1] for e in replayed if e[1] != "job.progress"] == ["job.queued", "job.processing", "job.done"]
        # from the job's terminal event on: what came after it, and nothing of the job again
        with c.stream("GET", "/events", headers={"Last-Event-ID": str(replayed[-1][0])}) as r:
            last = image_job(c).json()["id"]
            resumed = read_until_done(r, last)
        assert {e[2]["id"] for e in resumed} == {after, last}, resumed


@pytest.mark.timeout(60)
def test_a_last_event_id_past_every_event_replays_nothing(server: Server, client: httpx.Client) -> None:
    """Up to 20 digits are taken: past the largest event number (2^63 - 1) it still means "after every
    event", not a 500 from the database. A job that has ended gives its end again, and the stream ends."""
    job = image_job(client, wait=30).json()
    assert job["status"] == "DONE", job
    for value in ("9223372036854775807", "9223372036854775808", "99999999999999999999"):
        with httpx.Client(base_url=server.base_url) as anonymous, anonymous.stream(
                "GET", f"/jobs/{job['id']}/events", headers={"Last-Event-ID": value}) as r:
            assert r.status_code == 200, r.read()
            assert [(e[1], e[2]["id"]) for e in read_events(r)] == [("job.done", job["id"])]
        with client.stream("GET", "/events", headers={"Last-Event-ID": value}) as r:
            assert r.status_code == 200, r.read()
            later = image_job(client).json()["id"]  # nothing is replayed; what happens next still comes
            assert {e[2]["id"] for e in read_until_done(r, later)} == {later}


def test_a_finished_job_yields_its_terminal_event_at_once(client: httpx.Client) -> None:
    job = image_job(client, wait=30).json()
    started = time.monotonic()
    with client.stream("GET", f"/jobs/{job['id']}/events") as r:
        events = read_events(r)
    assert [e[1] for e in events] == ["job.done"] and events[0][2]["status"] == "DONE"
    assert time.monotonic() - started < 10


@pytest.mark.backends
def test_the_key_feed_needs_a_key_and_shows_only_that_keys_jobs(server: Server, client: httpx.Client) -> None:
    with httpx.Client(base_url=server.base_url) as anonymous:
        assert_problem(anonymous.get("/events"), 401, "invalid_api_key")
    other = server.create_key("other")
    seen: list[tuple[int, str, dict[str, Any]]] = []
    opened = threading.Event()

    def follow() -> None:
        # the first job.done ends it: this key's only job is ``mine`` (whose end may be sent before the
        # test has read its id), and one of the other key's would be a leak the assertion below names
        with client.stream("GET", "/events", timeout=60) as r:
            opened.set()
            for event in read_events_iter(r):
                seen.append(event)
                if event[1] == "job.done":
                    return

    with server.client(other) as theirs:
        follower = threading.Thread(target=follow)
        follower.start()
        assert opened.wait(30)
        image_job(theirs, wait=30)  # another key's job: not in this feed
        mine = image_job(client).json()["id"]
        follower.join(60)
    assert not follower.is_alive()
    assert {e[2]["id"] for e in seen} == {mine}, seen


def test_two_hundred_streams_all_see_the_job_end_and_leave_nothing_behind(
        server: Server, client: httpx.Client) -> None:
    job = image_job(client).json()

    async def streams() -> list[list[str]]:
        limits = httpx.Limits(max_connections=250, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=server.base_url, limits=limits, timeout=120,
                                     headers=dict(client.headers)) as ac:
            async def one() -> list[str]:
                names = []
                async with ac.stream("GET", f"/jobs/{job['id']}/events",
                                     headers={"Last-Event-ID": "0"}) as r:
                    async for line in r.aiter_lines():
                        if line.startswith("event: "):
                            names.append(line[7:])
                return names
            return await asyncio.gather(*(one() for _ in range(200)))

    for names in asyncio.run(streams()):
        assert names[-1] == "job.done" and names.count("job.done") == 1, names
    # an abandoned stream (the client goes away mid-job) is dropped by the server too
    with client.stream("GET", "/events") as r:
        next(r.iter_lines())
    deadline = time.monotonic() + 30
    while (listeners := client.get("/health").json()["eventListeners"]) != 0:
        assert time.monotonic() < deadline, f"{listeners} event listeners left behind"
        time.sleep(0.1)
