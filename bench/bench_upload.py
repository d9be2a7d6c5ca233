"""A big streamed upload: throughput and peak server RSS, against writing the same bytes to disk here.

    .venv/bin/python bench/bench_upload.py [--gb 2]
"""

from __future__ import annotations

import argparse
import os
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


def body(total: int) -> Iterator[bytes]:
    yield b'--bnd\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n'
    block = os.urandom(CHUNK)
    sent = 0
    while sent < total:
        n = min(CHUNK, total - sent)
        yield block[:n]
        sent += n
    yield b"\r\n--bnd--\r\n"


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
    args = parser.parse_args()
    total = int(args.gb * 1024**3)
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        baseline = disk_baseline(Path(tmp) / "baseline.bin", total)
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

            sampler = threading.Thread(target=sample)
            sampler.start()
            started = time.perf_counter()
            with srv.client(key, timeout=3600) as c:
                r = c.post("/files", content=body(total), headers={"Content-Type": "multipart/form-data; boundary=bnd"})
            took = time.perf_counter() - started
            stop.set()
            sampler.join()
            assert r.status_code == 201 and r.json()["sizeBytes"] == total, r.text
        finally:
            srv.stop()
    mb = total / 1024**2
    print(f"upload of {args.gb:g} GiB: {mb / took:.0f} MB/s through the API; "
          f"{mb / baseline:.0f} MB/s writing the same bytes directly; ratio {baseline / took:.2f}")
    print(f"server RSS: {idle / 1024**2:.0f} MB idle, {peak / 1024**2:.0f} MB peak (+{(peak - idle) / 1024**2:.0f} MB)")


if __name__ == "__main__":
    main()
