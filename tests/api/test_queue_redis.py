"""The job queue on Redis (``queue_url``): a real redis-server on a free loopback port, a real
``filekiln serve --workers 0`` and a real ``filekiln worker`` sharing a data dir."""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, Server, free_port, png_bytes, start_server, upload, wait_job, write_settings
from tests.redisd import QUEUE_KEY, RedisServer, needs_redis, wait_for

pytestmark = pytest.mark.embedded  # sets up its own Redis


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """The module's Redis; a test that stops it starts it again."""
    folder = tmp_path_factory.mktemp("redis")
    server = RedisServer(free_port(), folder)
    server.start()
    yield server
    server.stop()


@dataclass
class Cluster:
    api: Server
    worker: subprocess.Popen[bytes]
    worker_log: Path

    def worker_text(self) -> str:
        return self.worker_log.read_text(errors="replace")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, redis_server: RedisServer) -> Iterator[Cluster]:
    """An API-only server and a worker process on one data dir, both told of Redis by FILEKILN_QUEUE_URL;
    the module's tests share it, in their order (the last one takes Redis away and brings it back)."""
    tmp_path = tmp_path_factory.mktemp("cluster")
    data = tmp_path / "data"
    data.mkdir()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FILEKILN_QUEUE_URL", redis_server.url)
        api = start_server(data, tmp_path / "api.log", "--workers", "0")
        worker_log = tmp_path / "worker.log"
        with open(worker_log, "ab") as log:
            worker = subprocess.Popen([sys.executable, "-m", "filekiln", "worker", "--data-dir", str(data),
                                       "--workers", "2"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    running = Cluster(api, worker, worker_log)
    try:
        yield running
    finally:
        worker.terminate()
        code = worker.wait(timeout=30)
        api.stop()
        assert code == 0, running.worker_text()


def blocked_clients(redis_server: RedisServer) -> list[dict[str, Any]]:
    """The connections of redis-server waiting in a blocking read of FileKiln's queue."""
    return [c for c in redis_server.client().client_list() if c.get("cmd") == "brpop" and "b" in c.get("flags", "")]


def ran_by(data_dir: Path, job_ids: list[str]) -> set[str]:
    conn = sqlite3.connect(data_dir / "filekiln.db")
    try:
        marks = ",".join("?" * len(job_ids))
        return {r[0] for r in conn.execute(f"select worker from jobs where id in ({marks})", job_ids)}
    finally:
        conn.close()


def when(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@needs_redis
def test_jobs_created_on_an_api_only_server_run_in_a_worker_process_through_redis(
        cluster: Cluster, redis_server: RedisServer) -> None:
    # the worker's idle threads wait inside Redis (BRPOP), so a queued job wakes one at once, without a poll
    wait_for(lambda: len(blocked_clients(redis_server)) >= 2, "the worker's two threads blocked in BRPOP")
    with cluster.api.client(cluster.api.create_key()) as c:
        ref = upload(c, "a.png", png_bytes())
        created = [c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                         "outputFormat": "webp"}) for _ in range(20)]
        assert all(r.status_code == 201 for r in created), [r.text for r in created]
        jobs = [wait_job(c, r.json()["id"], timeout=120) for r in created]
        # one at a time, each to an idle worker: the time from creation to start is the pickup alone
        alone = [wait_job(c, c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).json()["id"])
                 for _ in range(5)]
    assert [j["status"] for j in jobs] == ["DONE"] * 20, jobs
    workers = ran_by(cluster.api.data_dir, [j["id"] for j in jobs])
    assert len(workers) == 1 and f":{cluster.worker.pid}:" in workers.pop()
    # every message was taken (none left behind), and the idle threads are back in their blocking read
    wait_for(lambda: redis_server.client().llen(QUEUE_KEY) == 0, "an empty queue")
    wait_for(lambda: len(blocked_clients(redis_server)) >= 2, "the worker's threads blocked in BRPOP again")
    pickup = statistics.median(when(j["startedAt"]) - when(j["createdAt"]) for j in alone)
    print(f"pickup across processes by an idle worker, median of 5: {pickup * 1000:.0f} ms")
    assert "Traceback" not in cluster.worker_text()


@needs_redis
def test_a_worker_rides_out_redis_going_away_and_picks_up_when_it_is_back(
        cluster: Cluster, redis_server: RedisServer) -> None:
    with cluster.api.client(cluster.api.create_key()) as c:
        ref = upload(c, "a.png", png_bytes())

        def create() -> str:
            r = c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]})
            assert r.status_code == 201, r.text
            return str(r.json()["id"])

        assert wait_job(c, create())["status"] == "DONE"
        redis_server.stop(kill=True)
        wait_for(lambda: "cannot be reached" in cluster.worker_text(), "the worker to notice Redis has gone")
        # the API goes on answering: reads, and new jobs, which wait in the job table for the queue
        during = create()
        assert c.get(f"/jobs/{during}").json()["status"] == "QUEUED"
        assert c.get("/health").status_code == 200
        assert cluster.worker.poll() is None

        redis_server.start()  # empty: a restarted Redis has forgotten every message
        after = create()
        assert wait_job(c, after)["status"] == "DONE"
        assert wait_job(c, during)["status"] == "DONE"  # its message was put back from the job table
    log = cluster.worker_text()
    assert cluster.worker.poll() is None, log
    # said once as it went, once as it came back: no line per attempt, no traceback
    assert log.count("cannot be reached") == 1 and log.count("answers again") == 1, log
    assert "Traceback" not in log, log


def run_filekiln(data_dir: Path, *args: str, queue_url: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FILEKILN_QUEUE_URL": queue_url}
    return subprocess.run([sys.executable, "-m", "filekiln", *args, "--data-dir", str(data_dir)], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_an_unreachable_redis_stops_the_start_with_a_sentence_naming_it(data_dir: Path, command: str) -> None:
    port = free_port()  # nothing listens there
    args = [command, "--port", str(free_port())] if command == "serve" else [command]
    done = run_filekiln(data_dir, *args, queue_url=f"redis://:sekret@127.0.0.1:{port}/0", timeout=60)
    assert done.returncode == 1, done
    said = done.stdout + done.stderr
    assert f"redis://127.0.0.1:{port}/0" in said and "connection refused" in said, said
    assert "sekret" not in said and "Traceback" not in said, said


def test_a_queue_url_that_is_not_redis_stops_the_start_in_words(data_dir: Path) -> None:
    done = run_filekiln(data_dir, "serve", "--port", str(free_port()), queue_url="amqp://guest:pw@localhost/jobs",
                        timeout=60)
    assert done.returncode == 1, done
    assert "is not a queue FileKiln can use" in done.stderr and "redis://" in done.stderr, done.stderr
    assert "pw@" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def doctor_queue(data_dir: Path, queue_url: str) -> tuple[int, dict[str, str]]:
    done = run_filekiln(data_dir, "doctor", "--json", queue_url=queue_url)
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    return done.returncode, checks["queue"]


def test_doctor_says_in_words_that_redis_refuses_connections(data_dir: Path) -> None:
    port = free_port()
    code, queue = doctor_queue(data_dir, f"redis://:sekret@127.0.0.1:{port}/0")
    assert code == 1 and queue["state"] == "fail", queue
    assert "Huey on Redis" in queue["detail"] and f"127.0.0.1:{port}" in queue["detail"], queue
    assert "connection refused" in queue["detail"] and "sekret" not in queue["detail"], queue


def test_doctor_names_an_unknown_redis_host(data_dir: Path) -> None:
    code, queue = doctor_queue(data_dir, "redis://no-such-host.invalid:6379/0")
    assert code == 1 and queue["state"] == "fail" and "no-such-host.invalid" in queue["detail"], queue
    assert "unknown" in queue["detail"], queue


@needs_redis
def test_doctor_finds_a_running_redis(data_dir: Path, redis_server: RedisServer) -> None:
    code, queue = doctor_queue(data_dir, redis_server.url)
    assert queue["state"] == "ok", queue
    assert f"Huey on Redis, {redis_server.url} answers" in queue["detail"], queue


@needs_redis
def test_doctor_tells_a_missing_password_from_a_wrong_one(data_dir: Path, tmp_path: Path) -> None:
    server = RedisServer(free_port(), tmp_path, ("--requirepass", "letmein"))
    server.start()
    try:
        _, missing = doctor_queue(data_dir, f"redis://127.0.0.1:{server.port}/0")
        _, wrong = doctor_queue(data_dir, f"redis://:guess@127.0.0.1:{server.port}/0")
        _, right = doctor_queue(data_dir, f"redis://:letmein@127.0.0.1:{server.port}/0")
    finally:
        server.stop()
    assert missing["state"] == "fail" and "wants a password" in missing["detail"], missing
    assert wrong["state"] == "fail" and "refused the password" in wrong["detail"], wrong
    assert "guess" not in wrong["detail"], wrong
    assert right["state"] == "ok", right


def test_two_api_processes_draw_on_one_rate_limit_bucket_per_key(
        tmp_path: Path, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the queue on Redis, a key's rate limit holds across API processes: writes sent to two of them
    in turn run out one bucket of 10, not two; and while Redis is away each process limits on its own."""
    monkeypatch.setenv("FILEKILN_QUEUE_URL", redis_server.url)
    data = tmp_path / "data"
    data.mkdir()
    write_settings(data, rate_limit_per_second=0.01, rate_limit_burst=10)  # a token back per 100 s: none in the run
    apis = [start_server(data, tmp_path / f"api{n}.log", "--workers", "0") for n in (1, 2)]
    try:
        key = apis[0].create_key("shared")
        clients = [a.client(key) for a in apis]
        # a write that is charged and then refused (no such file): cheap, and leaves nothing behind
        statuses = [clients[n % 2].delete(f"/files/file_{n:032x}").status_code for n in range(16)]
        assert statuses[:10] == [404] * 10, statuses
        assert set(statuses[10:]) == {429}, f"the second process had a bucket of its own: {statuses}"
        refused = clients[1].delete(f"/files/file_{99:032x}")
        assert int(refused.headers["retry-after"]) >= 1
        # reads have their own bucket, shared too, and are untouched by the writes
        assert all(c.get("/usage").status_code == 200 for c in clients)
        redis_server.stop(kill=True)  # each process on its own buckets: answered, not an error
        assert clients[0].get("/usage").status_code == 200
        assert clients[0].delete(f"/files/file_{98:032x}").status_code == 404
        for c in clients:
            c.close()
    finally:
        for a in apis:
            a.stop()
    assert "rate limits are this process's own until Redis answers again" in (tmp_path / "api1.log").read_text()
