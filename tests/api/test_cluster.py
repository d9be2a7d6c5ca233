"""A cluster on this machine: 2 API processes and 3 worker processes on one install, each process with a
data dir of its own (its scratch space and logs), sharing a real PostgreSQL (the metadata), a real Redis
(the queue) and a real S3-compatible store (SeaweedFS, the files), as on several machines. One worker
has no LibreOffice.

200 jobs of mixed tools made through both APIs: each runs once and ends DONE, on every worker; a worker
killed with SIGKILL mid-job has that job finished by another; an event stream on one API sees the jobs
made on the other; an Idempotency-Key and a daily quota hold across both APIs.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from localapi.core.db import PostgresDatabase
from tests.api.test_workers import NO_OFFICE, SETTINGS, processes, start_worker, stop, wait_for
from tests.conftest import Server, free_port, png_bytes, start_server, upload, write_settings
from tests.converters import doc_samples
from tests.postgres import PostgresServer, needs_postgres
from tests.redisd import RedisServer, needs_redis
from tests.seaweed import Seaweed, needs_weed

pytestmark = [needs_postgres, needs_redis, needs_weed, pytest.mark.embedded]  # sets up its own back-ends


@dataclass
class Cluster:
    db: PostgresDatabase
    apis: list[Server]
    workers: dict[str, Any]  # name -> Popen
    key: str

    def client(self, n: int) -> httpx.Client:
        return httpx.Client(base_url=self.apis[n].base_url, headers={"X-API-Key": self.key}, timeout=120)

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self.db.all(sql, *args)]


def own_dir(tmp_path: Path, name: str, **settings: Any) -> Path:
    """A process's own data dir: its settings, scratch space and logs."""
    data = tmp_path / name
    data.mkdir()
    write_settings(data, **settings)
    return data


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer, seaweed: Seaweed) -> Iterator[Cluster]:
    """One cluster for the module's tests, in their order: the 200 jobs need all three workers; the kill
    leaves two, which is all the last test needs."""
    from cryptography.fernet import Fernet

    tmp_path = tmp_path_factory.mktemp("cluster")
    (tmp_path / "redis").mkdir()
    redis = RedisServer(free_port(), tmp_path / "redis")
    redis.start()
    database_url = postgres.create_database()
    apis: list[Server] = []
    workers: dict[str, Any] = {}
    db = PostgresDatabase(database_url)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FILEKILN_DATABASE_URL", database_url)
        env.setenv("FILEKILN_QUEUE_URL", redis.url)
        env.setenv("FILEKILN_PARAMS_KEY", Fernet.generate_key().decode())
        shared = {**SETTINGS, **seaweed.settings("filekiln", f"cluster-{time.monotonic_ns()}"),
                  "rate_limit_per_second": 10_000, "rate_limit_burst": 10_000}
        try:
            apis += [start_server(own_dir(tmp_path, f"api{n}", **shared), tmp_path / f"api{n}.log", "--workers", "0")
                     for n in (1, 2)]
            key = apis[0].create_key("cluster")
            for name in ("office1", "office2"):
                workers[name] = start_worker(own_dir(tmp_path, name, **shared), tmp_path / f"{name}.log", 1)
            # the third worker finds no LibreOffice
            plain = own_dir(tmp_path, "plain", **{**shared, **NO_OFFICE})
            workers["plain"] = start_worker(plain, tmp_path / "plain.log", 1)
            # each worker has looked at the others (every second here): the one without LibreOffice, which
            # may have registered first and so found no worker to leave document jobs to, now leaves them
            plain_pid = workers["plain"].pid
            with apis[0].client(key) as c:
                wait_for("three workers, the one without LibreOffice leaving document jobs to the others",
                         lambda: len(p := processes(c)) == 3 and "document-to-pdf" in p[plain_pid]["cannotRun"])
            yield Cluster(db, apis, workers, key)
        finally:
            for proc in workers.values():
                stop(proc)
            for api in apis:
                api.stop()
            db.close()
            redis.stop()


def test_200_jobs_through_two_apis_run_once_each_on_every_worker(cluster: Cluster, tmp_path: Path) -> None:
    heard: set[str] = set()
    listening = threading.Event()
    follower = cluster.client(0)

    def follow() -> None:  # the key's event stream on API 1: it must hear of API 2's jobs too
        try:
            with follower.stream("GET", "/events", timeout=300) as r:
                for line in r.iter_lines():
                    listening.set()
                    if line.startswith("data: "):
                        job = json.loads(line[6:])
                        if job.get("status") == "DONE":
                            heard.add(job["id"])
        except httpx.HTTPError:
            pass  # closed by the test, at its end

    stream = threading.Thread(target=follow, daemon=True)
    stream.start()
    assert listening.wait(30)
    pids = {name: proc.pid for name, proc in cluster.workers.items()}
    with cluster.client(0) as c1, cluster.client(1) as c2:
        png = upload(c1, "a.png", png_bytes(96, 64))
        docx = upload(c2, "letter.docx", doc_samples.make_docx(tmp_path).read_bytes())
        made: dict[str, str] = {}  # job id -> tool
        for n in range(200):
            c = (c1, c2)[n % 2]
            if n % 25 == 0:
                body: dict[str, Any] = {"tool": "document-to-pdf", "inputFileIds": [docx["id"]]}
            else:
                body = {"tool": "image-convert", "inputFileIds": [png["id"]],
                        "outputFormat": ("webp", "jpg", "bmp")[n % 3]}
            r = c.post("/jobs", json=body)
            assert r.status_code == 201, r.text
            made[r.json()["id"]] = body["tool"]
        deadline = time.monotonic() + 180
        for job_id in made:
            job = finished(c1, job_id, deadline)
            assert job["status"] == "DONE", job
        # a result of API 2's making, through API 1: the bytes come from the bucket
        last = list(made)[-1]
        url = c1.get(f"/jobs/{last}/result").json()["downloadUrl"]
        assert httpx.get(url).status_code == 200
    rows = cluster.rows(f"select id, worker, attempts from jobs where id in ({','.join('?' * len(made))})", *made)
    assert len(rows) == 200 and all(attempts == 1 for _, _, attempts in rows), "a job ran more than once"
    done = cluster.rows("select job_id, count(*) from job_events where type = 'job.done' group by job_id")
    assert all(n == 1 for job_id, n in done if job_id in made)
    by_pid = {int(worker.split(":")[1]): [] for _, worker, _ in rows}
    for job_id, worker, _ in rows:
        by_pid[int(worker.split(":")[1])].append(made[job_id])
    assert set(by_pid) == set(pids.values()), f"not every worker ran jobs: {by_pid.keys()} of {pids}"
    assert "document-to-pdf" not in by_pid[pids["plain"]], "the worker without LibreOffice took a document job"
    deadline = time.monotonic() + 30
    while not set(made) <= heard and time.monotonic() < deadline:
        time.sleep(0.2)
    assert set(made) <= heard, f"API 1's stream missed {len(set(made) - heard)} jobs"
    follower.close()
    stream.join(timeout=10)


def finished(c: httpx.Client, job_id: str, deadline: float) -> dict[str, Any]:
    """The job once it has ended; fails, saying how the job stands, past ``deadline``."""
    while True:
        job: dict[str, Any] = c.get(f"/jobs/{job_id}", params={"wait": 10}).json()
        if job["status"] not in ("QUEUED", "PROCESSING"):
            return job
        assert time.monotonic() < deadline, f"job {job_id} has not ended: {job}"


def test_a_worker_killed_mid_job_has_its_job_finished_by_another(cluster: Cluster) -> None:
    from bench.bench_scaleout import photo

    with cluster.client(0) as c:
        big = upload(c, "big.png", photo(7))
        job_id = c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [big["id"]], "outputFormat": "webp",
                                       "params": {"quality": 95}}).json()["id"]
        running = wait_for("the job to start", lambda: (j := c.get(f"/jobs/{job_id}").json())["status"]
                           == "PROCESSING" and j, timeout=60)
        assert running
        worker = cluster.rows("select worker from jobs where id = ?", job_id)[0][0]
        pid = int(worker.split(":")[1])
        victim = next(name for name, proc in cluster.workers.items() if proc.pid == pid)
        os.kill(pid, signal.SIGKILL)
        cluster.workers[victim].wait(timeout=30)
        job = finished(c, job_id, time.monotonic() + 120)
        assert job["status"] == "DONE", job
        (again, attempts), = cluster.rows("select worker, attempts from jobs where id = ?", job_id)
        assert int(again.split(":")[1]) != pid and attempts == 2


def test_an_idempotency_key_and_a_daily_quota_hold_across_both_apis(cluster: Cluster) -> None:
    limited = cluster.apis[0].create_key("quota", quota=3)
    clients = [httpx.Client(base_url=a.base_url, headers={"X-API-Key": limited}, timeout=60) for a in cluster.apis]
    try:
        png = upload(clients[0], "q.png", png_bytes())
        body = {"tool": "image-convert", "inputFileIds": [png["id"]], "outputFormat": "webp"}
        first = clients[0].post("/jobs", json=body, headers={"Idempotency-Key": "same-order-17"})
        again = clients[1].post("/jobs", json=body, headers={"Idempotency-Key": "same-order-17"})
        assert first.status_code == again.status_code == 201
        assert again.json()["id"] == first.json()["id"] and again.headers["idempotent-replayed"] == "true"
        assert clients[1].post("/jobs", json=body).status_code == 201
        assert clients[0].post("/jobs", json=body).status_code == 201
        refused = clients[1].post("/jobs", json=body)
        assert refused.status_code == 402 and refused.json()["code"] == "quota_exceeded", refused.text
    finally:
        for c in clients:
            c.close()
