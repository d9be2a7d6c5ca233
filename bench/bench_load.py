"""Load on loopback: many concurrent clients, then a large queue drained while the list is read.

Phase 1: --clients concurrent clients upload, create and poll --jobs small jobs in all.
         Reports errors (other than documented 429s, which clients honour), p50/p99 per
         endpoint, and the server's RSS over time.
Phase 2: --queued jobs created at once; while the queue drains, GET /jobs is timed (p99).

With --backends scale the server runs on PostgreSQL, Redis and an S3-compatible bucket (SeaweedFS),
real servers on loopback ports started for the run (tests/backends.py), instead of the embedded defaults.

    .venv/bin/python bench/bench_load.py [--clients 50] [--jobs 2000] [--queued 10000] [--backends scale]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
import psutil  # noqa: E402

from bench._server import start_server  # noqa: E402
from tests.conftest import png_bytes, write_settings  # noqa: E402

Latencies = dict[str, list[float]]


class Client:
    def __init__(self, base_url: str, key: str, latencies: Latencies, errors: collections.Counter[str]) -> None:
        self.http = httpx.Client(base_url=base_url, headers={"X-API-Key": key}, timeout=120)
        self.latencies = latencies
        self.errors = errors
        self.throttled = 0

    def call(self, label: str, method: str, url: str, **kw: object) -> httpx.Response:
        while True:
            t = time.perf_counter()
            r = self.http.request(method, url, **kw)  # type: ignore[arg-type]
            self.latencies[label].append(time.perf_counter() - t)
            if r.status_code == 429:
                self.throttled += 1
                time.sleep(float(r.headers.get("retry-after", "1")))
                continue
            if r.status_code >= 400:
                self.errors[f"{label} {r.status_code}"] += 1
            return r


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")


def phase_clients(base: str, key: str, clients: int, jobs: int, pid: int) -> None:
    latencies: Latencies = collections.defaultdict(list)
    errors: collections.Counter[str] = collections.Counter()
    data = png_bytes(64, 64)
    remaining = [jobs]
    lock = threading.Lock()
    done_jobs: list[str] = []
    throttled = [0]

    def worker() -> None:
        c = Client(base, key, latencies, errors)
        while True:
            with lock:
                if remaining[0] == 0:
                    break
                remaining[0] -= 1
            ref = c.call("POST /files", "POST", "/files", files={"file": ("a.png", data)}).json()
            job = c.call("POST /jobs", "POST", "/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                                              "outputFormat": "webp"}).json()
            while True:
                state = c.call("GET /jobs/{id}", "GET", f"/jobs/{job['id']}").json()
                if state["status"] in ("DONE", "FAILED", "CANCELED"):
                    break
                time.sleep(0.2)
            if state["status"] != "DONE":
                errors[f"job {state['status']} {state.get('errorCode')}"] += 1
            else:
                with lock:
                    done_jobs.append(job["id"])
        with lock:
            throttled[0] += c.throttled

    rss: list[tuple[float, float]] = []
    stop = threading.Event()
    proc = psutil.Process(pid)
    started = time.perf_counter()

    def sample() -> None:
        while not stop.wait(1.0):
            rss.append((time.perf_counter() - started, proc.memory_info().rss / 1024**2))

    sampler = threading.Thread(target=sample)
    sampler.start()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    sampler.join()
    took = time.perf_counter() - started
    print(f"phase 1: {clients} clients, {jobs} jobs in {took:.1f} s ({jobs / took:.1f} jobs/s); "
          f"DONE {len(done_jobs)}; errors {dict(errors) or 'none'}; 429s honoured {throttled[0]}")
    for label, values in sorted(latencies.items()):
        p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
        print(f"  {label:16} n={len(values):6d}  p50 {p50:7.1f} ms  p99 {p99:7.1f} ms")
    marks = rss[:: max(1, len(rss) // 10)]
    print("  server RSS (s, MB): " + ", ".join(f"({t:.0f}, {m:.0f})" for t, m in marks))


def phase_queue(base: str, key: str, queued: int) -> None:
    c = Client(base, key, collections.defaultdict(list), collections.Counter())
    ref = c.call("POST /files", "POST", "/files", files={"file": ("a.png", png_bytes(32, 32))}).json()
    started = time.perf_counter()
    ids = []
    for _ in range(queued):
        ids.append(c.call("POST /jobs", "POST", "/jobs", json={"tool": "image-convert",
                                                               "inputFileIds": [ref["id"]]}).json()["id"])
    created = time.perf_counter() - started
    list_times: list[float] = []
    while True:
        t = time.perf_counter()
        page = c.http.get("/jobs", params={"status": "QUEUED", "limit": 50}).json()
        list_times.append(time.perf_counter() - t)
        if not page["items"]:
            processing = c.http.get("/jobs", params={"status": "PROCESSING", "limit": 1}).json()["items"]
            if not processing:
                break
        time.sleep(0.1)
    drained = time.perf_counter() - started
    failed = c.http.get("/jobs", params={"status": "FAILED", "limit": 1}).json()["items"]
    print(f"phase 2: {queued} jobs created in {created:.1f} s, drained after {drained:.1f} s "
          f"({queued / drained:.1f} jobs/s); failed: {len(failed)}")
    print(f"  GET /jobs during the drain: n={len(list_times)} p50 {percentile(list_times, .5):.1f} ms "
          f"p99 {percentile(list_times, .99):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--queued", type=int, default=10000)
    parser.add_argument("--backends", choices=("embedded", "scale"), default="embedded")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        write_settings(data, rate_limit_per_second=200.0, rate_limit_burst=400)
        if args.backends == "scale":
            from tests.backends import BACKENDS

            os.environ.update(BACKENDS.env(data))  # the server and the key's CLI call inherit them
            print(f"back-ends: {', '.join(f'{k}={v}' for k, v in BACKENDS.env(data).items() if 'URL' in k)}")
        srv = start_server(data, Path(tmp) / "server.log", "--workers", "2")
        try:
            key = srv.create_key("load")
            if args.jobs:
                phase_clients(srv.base_url, key, args.clients, args.jobs, srv.process.pid)
            if args.queued:
                phase_queue(srv.base_url, key, args.queued)
        finally:
            srv.stop()
            if args.backends == "scale":
                BACKENDS.stop()


if __name__ == "__main__":
    main()
