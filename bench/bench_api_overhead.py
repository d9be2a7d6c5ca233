"""200 small PNG->WebP jobs through the API vs the same conversions called directly.

Prints the per-job overhead of the API path (upload, create, poll, download) in ms
and the throughput ratio, both measured in this run on this machine.

    .venv/bin/python bench/bench_api_overhead.py [--jobs 200] [--clients 4]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
from PIL import Image  # noqa: E402

from bench._server import start_server  # noqa: E402
from tests.converters.runtool import run_tool  # noqa: E402


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


THROTTLED = {"count": 0}


def call(c: httpx.Client, method: str, url: str, **kwargs: object) -> httpx.Response:
    """One request, waiting out a 429 as its Retry-After says (and counting them: the goal is none)."""
    while True:
        response = c.request(method, url, **kwargs)  # type: ignore[arg-type]
        if response.status_code != 429:
            response.raise_for_status()
            return response
        THROTTLED["count"] += 1
        time.sleep(float(response.headers.get("Retry-After", "1")))


def one_job(c: httpx.Client, data: bytes, name: str) -> float:
    t = time.perf_counter()
    ref = call(c, "POST", "/files", files={"file": (name, data)}).json()
    job = call(c, "POST", "/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                         "outputFormat": "webp"}).json()
    while True:
        state = call(c, "GET", f"/jobs/{job['id']}").json()
        if state["status"] == "DONE":
            break
        if state["status"] in ("FAILED", "CANCELED"):
            raise RuntimeError(state)
        time.sleep(0.02)
    url = call(c, "GET", f"/jobs/{job['id']}/result").json()["downloadUrl"]
    body = call(c, "GET", url).content
    assert body[8:12] == b"WEBP"
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    pngs = sample_pngs(args.jobs)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        direct_s = direct(pngs, work / "direct")
        data = work / "data"
        data.mkdir()
        srv = start_server(data, work / "server.log", "--workers", "2")
        try:
            key = srv.create_key("bench")
            with srv.client(key) as c:
                one_job(c, pngs[0], "warm.png")
                latencies = [one_job(c, p, f"s{i}.png") for i, p in enumerate(pngs[: args.jobs // 4])]
            queue = list(enumerate(pngs))
            lock = threading.Lock()

            def client_loop() -> None:
                with srv.client(key) as c:
                    while True:
                        with lock:
                            if not queue:
                                return
                            i, p = queue.pop()
                        one_job(c, p, f"c{i}.png")

            started = time.perf_counter()
            threads = [threading.Thread(target=client_loop) for _ in range(args.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            api_s = time.perf_counter() - started
        finally:
            srv.stop()
    n = args.jobs
    direct_ms = direct_s / n * 1000
    seq_ms = statistics.median(latencies) * 1000
    print(f"direct (tool.run in process): {direct_ms:7.1f} ms/job  {n / direct_s:6.1f} jobs/s")
    print(f"API, one client, sequential:  {seq_ms:7.1f} ms/job (median of {len(latencies)})")
    print(f"API, {args.clients} clients, 2 workers:  {api_s / n * 1000:7.1f} ms/job  {n / api_s:6.1f} jobs/s")
    print(f"per-job overhead (sequential median - direct): {seq_ms - direct_ms:.1f} ms")
    print(f"throughput ratio API/direct: {(n / api_s) / (n / direct_s):.2f}")
    print(f"429 answers waited out: {THROTTLED['count']} (goal: 0)")


if __name__ == "__main__":
    main()
