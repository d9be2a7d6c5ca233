"""Small PNG->WebP jobs through the API vs the same conversions called directly, and each call vs a bare route.

Prints, all measured in this run on this machine:
- the per-job overhead of the API path (upload, create-and-wait with the download link, download), sequential, in ms
  over a direct ``tool.run`` of the same conversion (goal: at most 10 ms);
- the throughput of 4 clients on 2 workers against the direct rate (goal: at least 0.5x), and the same
  4 clients running the same three calls on a bare FastAPI app that converts in its own process (no
  child, database, keys, queue or events: ``bench/_bare.py``): what any FastAPI server could give on
  this machine with these clients, and FileKiln's share of it. The three are measured in alternating
  rounds (direct, API, bare, direct, API, bare ...), each round a share of the jobs, so that a machine
  that slows down or speeds up during the run (other tenants of a VM) weighs on all alike;
- the 429 answers waited out (goal: none);
- a per-request table: each call's median against a bare FastAPI route on uvicorn, started the same way;
- the event latency: from a job's end (its ``finishedAt``, the server's clock) to a listening SSE client;
- where the CPU of the 4-client run went, per job: the clients (a process each), the server process, its
  conversion children; and the rate the machine's cores could give at that cost if they were never idle.

    .venv/bin/python bench/bench_api_overhead.py [--jobs 400] [--clients 4] [--rounds 4]
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
import psutil  # noqa: E402
from PIL import Image  # noqa: E402

from bench._server import Server, free_port, start_server  # noqa: E402
from tests.converters.runtool import run_tool  # noqa: E402

THROTTLED = {"count": 0}


def sample_pngs(n: int) -> list[bytes]:
    out = []
    for i in range(n):
        img = Image.new("RGB", (256, 192), (i % 256, (i * 7) % 256, (i * 13) % 256))
        for x in range(0, 256, 16):
            img.paste((255 - x, x, 128), (x, 0, x + 8, 192))
        buf = io.BytesIO()
        img.save(buf, "PNG")
        out.append(buf.getvalue())
    return out


def direct(pngs: list[bytes], work: Path) -> float:
    work.mkdir(parents=True)
    started = time.perf_counter()
    for i, data in enumerate(pngs):
        src = work / f"d{i}.png"
        src.write_bytes(data)
        run_tool("image-convert", [src], work / f"out{i}", output_format="webp")
    return time.perf_counter() - started


def call(c: httpx.Client, method: str, url: str, **kwargs: Any) -> httpx.Response:
    """One request, waiting out a 429 as its Retry-After says (and counting them: the goal is none)."""
    while True:
        response = c.request(method, url, **kwargs)
        if response.status_code != 429:
            response.raise_for_status()
            return response
        THROTTLED["count"] += 1
        time.sleep(float(response.headers.get("Retry-After", "1")))


def one_job(c: httpx.Client, data: bytes, name: str, steps: dict[str, list[float]] | None = None) -> float:
    """Upload, create-and-wait (the DONE job carries its download link: ``include=result``), download:
    the whole of a script's small job, as the Python client does it."""
    marks = [time.perf_counter()]
    ref = call(c, "POST", "/files", files={"file": (name, data)}).json()
    marks.append(time.perf_counter())
    job = call(c, "POST", "/jobs", params={"wait": 60, "include": "result"},
               json={"tool": "image-convert", "inputFileIds": [ref["id"]], "outputFormat": "webp"}).json()
    while job["status"] not in ("DONE", "FAILED", "CANCELED"):
        job = call(c, "GET", f"/jobs/{job['id']}", params={"wait": 60, "include": "result"}).json()
    if job["status"] != "DONE":
        raise RuntimeError(job)
    marks.append(time.perf_counter())
    body = call(c, "GET", job["result"]["downloadUrl"]).content
    marks.append(time.perf_counter())
    assert body[8:12] == b"WEBP"
    if steps is not None:
        names = ("upload", "create+wait", "download")
        for step, a, b in zip(names, marks[:-1], marks[1:], strict=True):
            steps.setdefault(step, []).append(b - a)
    return marks[-1] - marks[0]


def median_ms(c: httpx.Client, method: str, url: str, n: int, **kwargs: Any) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        call(c, method, url, **kwargs)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def start_bare(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    root = Path(__file__).resolve().parent.parent
    work.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "bench._bare", str(port), str(work)], cwd=root)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{base}/ping", timeout=1)
            return proc, base
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the bare server did not start")


def request_table(srv: Server, bare_base: str, key: str, png: bytes, n: int) -> list[tuple[str, float]]:
    with httpx.Client(base_url=bare_base) as b:
        median_ms(b, "GET", "/ping", 50)
        rows = [("bare FastAPI route (GET)", median_ms(b, "GET", "/ping", n))]
    with srv.client(key) as c, httpx.Client(base_url=srv.base_url) as anonymous:
        ref = call(c, "POST", "/files", files={"file": ("t.png", png)}).json()
        job = call(c, "POST", "/jobs", params={"wait": 60},
                   json={"tool": "image-convert", "inputFileIds": [ref["id"]], "outputFormat": "webp"}).json()
        url = call(c, "GET", f"/jobs/{job['id']}/result").json()["downloadUrl"]
        rows += [
            ("GET /jobs/{id} (with key)", median_ms(c, "GET", f"/jobs/{job['id']}", n)),
            ("GET /jobs/{id} (no key)", median_ms(anonymous, "GET", f"/jobs/{job['id']}", n)),
            ("GET /jobs/{id}/result", median_ms(c, "GET", f"/jobs/{job['id']}/result", n)),
            ("GET /tools", median_ms(c, "GET", "/tools", n)),
            ("GET /health", median_ms(c, "GET", "/health", n)),
            ("GET /usage", median_ms(c, "GET", "/usage", n)),
            ("GET /openapi.json", median_ms(c, "GET", "/openapi.json", n)),
            ("GET download (small file)", median_ms(c, "GET", url, n)),
            ("POST /files (small PNG)", median_ms(c, "POST", "/files", n, files={"file": ("t.png", png)})),
        ]
    return rows


def event_latency(srv: Server, key: str, png: bytes, jobs: int) -> list[float]:
    """Seconds from each job's end (finishedAt, the server's clock) to its job.done reaching an SSE client."""
    latencies: list[float] = []
    with srv.client(key) as c:
        for _ in range(jobs):
            ref = call(c, "POST", "/files", files={"file": ("e.png", png)}).json()
            job = call(c, "POST", "/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                                 "outputFormat": "webp"}).json()
            with c.stream("GET", f"/jobs/{job['id']}/events") as r:
                event = ""
                for line in r.iter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: ") and event == "job.done":
                        arrived = time.time()
                        ended = datetime.fromisoformat(json.loads(line[6:])["finishedAt"]).timestamp()
                        latencies.append(arrived - ended)
    return latencies


@dataclass
class SharedRun:
    """A run of several client processes: its wall time and the CPU the clients themselves used."""

    seconds: float
    client_cpu: float


def _client_process(base_url: str, key: str, jobs: list[tuple[int, bytes]], go: Any, report: Any) -> None:
    """One client: a script of its own, in its own process, running its share of the jobs."""
    with httpx.Client(base_url=base_url, headers={"X-API-Key": key}, timeout=60) as c:
        call(c, "GET", "/health")  # its connection is open before the clock starts
        report.put("ready")
        go.wait()
        cpu = time.process_time()
        for i, data in jobs:
            one_job(c, data, f"c{i}.png")
        report.put((time.monotonic(), time.process_time() - cpu, THROTTLED["count"]))


def shared_jobs(base_url: str, key: str, pngs: list[bytes], clients: int) -> SharedRun:
    """``clients`` clients running a job on each of ``pngs``, each client a process of its own.

    Clients are processes, as separate scripts are: threads of one interpreter share its lock, so
    their HTTP work could never use more than one core and would cost more for the contention."""
    ctx = multiprocessing.get_context("spawn")
    go, report = ctx.Event(), ctx.Queue()
    jobs = list(enumerate(pngs))
    procs = [ctx.Process(target=_client_process, args=(base_url, key, jobs[n::clients], go, report))
             for n in range(clients)]
    for proc in procs:
        proc.start()
    for _ in procs:  # the clients import httpx and connect; none starts before all are ready
        report.get(timeout=120)
    started = time.monotonic()
    go.set()
    ends, cpu = [], 0.0
    for _ in procs:
        end, used, throttled = report.get(timeout=600)
        ends.append(end)
        cpu += used
        THROTTLED["count"] += throttled
    for proc in procs:
        proc.join()
    return SharedRun(max(ends) - started, cpu)


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU time (user + system) so far of the process ``pid`` and of its children alive now."""
    proc = psutil.Process(pid)
    own = sum(proc.cpu_times()[:2])
    children = 0.0
    for child in proc.children(recursive=True):
        try:
            children += sum(child.cpu_times()[:2])
        except psutil.NoSuchProcess:
            pass
    return own, children


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=400)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=4, help="alternating direct, API and bare rounds")
    parser.add_argument("--requests", type=int, default=300, help="samples per call in the request table")
    args = parser.parse_args()
    pngs = sample_pngs(args.jobs)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        direct(pngs[:5], work / "warm")  # the catalogue and the codecs loaded, as the server has them
        data = work / "data"
        data.mkdir()
        bare, bare_base = start_bare(work / "bare")
        try:
            srv = start_server(data, work / "server.log", "--workers", "2")
        except BaseException:
            bare.kill()
            raise
        try:
            key = srv.create_key("bench")
            steps: dict[str, list[float]] = {}
            with srv.client(key) as c:
                for i in range(5):
                    one_job(c, pngs[i], "warm.png")
                latencies = [one_job(c, p, f"s{i}.png", steps) for i, p in enumerate(pngs[: args.jobs // 2])]
            with httpx.Client(base_url=bare_base, timeout=60) as b:
                for i in range(5):
                    one_job(b, pngs[i], "warm.png")
            direct_s = api_s = bare_s = client_cpu = bare_cpu = 0.0
            server_cpu = [0.0, 0.0]
            for r in range(args.rounds):
                share = pngs[r::args.rounds]
                direct_s += direct(share, work / f"direct{r}")
                before = cpu_seconds(srv.process.pid)
                run = shared_jobs(srv.base_url, key, share, args.clients)
                after = cpu_seconds(srv.process.pid)
                api_s += run.seconds
                client_cpu += run.client_cpu
                server_cpu = [total + a - b for total, a, b in zip(server_cpu, after, before, strict=True)]
                bare_before = cpu_seconds(bare.pid)[0]
                floor = shared_jobs(bare_base, key, share, args.clients)
                bare_s += floor.seconds
                bare_cpu += floor.client_cpu + cpu_seconds(bare.pid)[0] - bare_before
            table = request_table(srv, bare_base, key, pngs[0], args.requests)
            events = event_latency(srv, key, pngs[0], 50)
        finally:
            srv.stop()
            bare.kill()
    n = args.jobs
    direct_ms = direct_s / n * 1000
    seq_ms = statistics.median(latencies) * 1000
    print(f"direct (tool.run in process):  {direct_ms:7.1f} ms/job  {n / direct_s:6.1f} jobs/s")
    print(f"API, one client, sequential:   {seq_ms:7.1f} ms/job (median of {len(latencies)})")
    for step, values in steps.items():
        print(f"    {step:12} {statistics.median(values) * 1000:7.1f} ms")
    print(f"API, {args.clients} clients, 2 workers:   {api_s / n * 1000:7.1f} ms/job  {n / api_s:6.1f} jobs/s")
    print(f"per-job overhead (sequential median - direct): {seq_ms - direct_ms:.1f} ms (goal: at most 10)")
    print(f"throughput ratio API/direct: {(n / api_s) / (n / direct_s):.2f} (goal: at least 0.5)")
    print(f"bare FastAPI app, same calls, converting in process: {n / bare_s:6.1f} jobs/s, "
          f"{(n / bare_s) / (n / direct_s):.2f}x the direct rate; FileKiln gives {bare_s / api_s:.2f} of it")
    print(f"429 answers waited out: {THROTTLED['count']} (goal: 0)")
    per_job = {"clients (httpx, one process each)": client_cpu, "server process (API and workers)": server_cpu[0],
               "conversion children": server_cpu[1]}
    total_ms = sum(per_job.values()) / n * 1000
    cores = psutil.cpu_count() or 1
    print(f"\nCPU per job in the {args.clients}-client run (ms)")
    for name, seconds in per_job.items():
        print(f"    {name:34} {seconds / n * 1000:6.2f}")
    print(f"    {'all':34} {total_ms:6.2f}: {cores} cores never idle would give {cores / total_ms * 1000:.0f} jobs/s, "
          f"{cores / total_ms * 1000 / (n / direct_s):.2f}x the direct rate")
    print(f"    {'the bare app and its clients':34} {bare_cpu / n * 1000:6.2f}: never idle, "
          f"{cores / (bare_cpu / n) / (n / direct_s):.2f}x the direct rate")
    bare_ms = table[0][1]
    print("\nper request (median of each)      ms     vs bare")
    for name, ms in table:
        print(f"    {name:28} {ms:6.2f}   {ms / bare_ms:5.2f}x")
    events.sort()
    print(f"\nevent latency, job end -> SSE client: median {statistics.median(events) * 1000:.1f} ms, "
          f"p99 {events[int(len(events) * 0.99) - 1] * 1000:.1f} ms ({len(events)} jobs)")


if __name__ == "__main__":
    main()
