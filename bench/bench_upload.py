"""A big streamed upload: throughput and peak server RSS, against writing the same bytes to disk here.

The raw writes and the uploads alternate, a few rounds of each; the ratio is of their medians.

    .venv/bin/python bench/bench_upload.py [--gb 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil  # noqa: E402

from bench._server import start_server  # noqa: E402

CHUNK = 1024 * 1024
# a boundary as HTTP clients make them (httpx, requests: 32 random hex digits; curl and browsers are alike)
BOUNDARY = os.urandom(16).hex()


def body(total: int) -> Iterator[bytes]:
    yield f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n'.encode()
    block = os.urandom(CHUNK)
    sent = 0
    while sent < total:
        n = min(CHUNK, total - sent)
        yield block[:n]
        sent += n
    yield f"\r\n--{BOUNDARY}--\r\n".encode()


def disk_baseline(path: Path, total: int) -> float:
    block = os.urandom(CHUNK)
    started = time.perf_counter()
    with open(path, "wb") as f:
        written = 0
        while written < total:
            f.write(block[: min(CHUNK, total - written)])
            written += CHUNK
        f.flush()
        os.fsync(f.fileno())
    took = time.perf_counter() - started
    path.unlink()
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    total = int(args.gb * 1024**3)
    raw: list[float] = []
    api: list[float] = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        srv = start_server(data, Path(tmp) / "server.log")
        try:
            key = srv.create_key("bench")
            proc = psutil.Process(srv.process.pid)
            idle = proc.memory_info().rss
            peak = idle
            stop = threading.Event()

            def sample() -> None:
                nonlocal peak
                while not stop.wait(0.05):
                    peak = max(peak, proc.memory_info().rss)

            threading.Thread(target=sample, daemon=True).start()
            # rounds alternate (raw, API, raw, API ...): the disk's own ups and downs (writeback of the
            # round before, other tenants of a VM) weigh on both alike
            with srv.client(key, timeout=3600) as c:
                for _ in range(args.rounds):
                    raw.append(disk_baseline(Path(tmp) / "baseline.bin", total))
                    started = time.perf_counter()
                    r = c.post("/files", content=body(total),
                               headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
                    api.append(time.perf_counter() - started)
                    assert r.status_code == 201 and r.json()["sizeBytes"] == total, r.text
                    c.delete(f"/files/{r.json()['id']}").raise_for_status()
        finally:
            stop.set()
            srv.stop()
    mb = total / 1024**2
    for n, (a, b) in enumerate(zip(raw, api, strict=True), 1):
        print(f"round {n}: {mb / b:.0f} MB/s through the API, {mb / a:.0f} MB/s raw ({a / b:.2f})")
    baseline, took = statistics.median(raw), statistics.median(api)
    print(f"upload of {args.gb:g} GiB, median of {args.rounds}: {mb / took:.0f} MB/s through the API; "
          f"{mb / baseline:.0f} MB/s writing the same bytes directly; ratio {baseline / took:.2f} (goal: at least 0.8)")
    print(f"server RSS: {idle / 1024**2:.0f} MB idle, {peak / 1024**2:.0f} MB peak (+{(peak - idle) / 1024**2:.0f} MB)")


if __name__ == "__main__":
    main()
