"""CPU-bound jobs on one worker process against two, on this machine: does a second process scale?

``filekiln serve --workers 0`` answers the API; ``filekiln worker --workers 1`` processes run the jobs (one
slot each), on the same data dir. The same batch of image conversions (a 3000x2000 photo-like PNG to
WebP at quality 90, some 0.4 s of CPU each) is queued at once and timed to the last job's end, first
with one worker process, then with two. Prints the jobs per second of each and their ratio (goal: at
least 1.7x on 2 cores), and the time from the last job's end to its answer.

    .venv/bin/python bench/bench_scaleout.py [--jobs 24]
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from bench._server import start_server  # noqa: E402
from tests.conftest import ROOT  # noqa: E402


def photo(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:2000, 0:3000]
    base = np.stack([(x * 255 // 3000), (y * 255 // 2000), ((x + y) * 255 // 5000)], axis=-1)
    noisy = np.clip(base + rng.normal(0, 18, base.shape), 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(noisy, "RGB").save(buf, "PNG", compress_level=1)
    return buf.getvalue()


def run(processes: int, pictures: list[bytes], work: Path) -> float:
    data = work / f"data-{processes}"
    data.mkdir()
    srv = start_server(data, work / f"server-{processes}.log", "--workers", "0")
    workers = [subprocess.Popen([sys.executable, "-m", "filekiln", "worker", "--data-dir", str(data),
                                 "--workers", "1"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for _ in range(processes)]
    try:
        key = srv.create_key("bench")
        with httpx.Client(base_url=srv.base_url, headers={"X-API-Key": key}, timeout=600) as c:
            deadline = time.monotonic() + 60
            while len(c.get("/health").json()["workerProcesses"]) < processes:
                assert time.monotonic() < deadline, "the worker processes did not start"
                time.sleep(0.2)
            warm = c.post("/files", files={"file": ("w.png", pictures[0])}).json()["id"]
            for _ in range(processes):  # every worker's conversion child warm
                c.post("/jobs", params={"wait": 60}, json={"tool": "image-convert", "inputFileIds": [warm],
                                                           "outputFormat": "webp"})
            ids = [c.post("/files", files={"file": (f"p{i}.png", p)}).json()["id"] for i, p in enumerate(pictures)]
            started = time.perf_counter()
            jobs = [c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [i], "outputFormat": "webp",
                                          "params": {"quality": 90}}).json()["id"] for i in ids]
            for job_id in jobs:
                job = c.get(f"/jobs/{job_id}", params={"wait": 600}).json()
                assert job["status"] == "DONE", job
            elapsed = time.perf_counter() - started
    finally:
        for w in workers:
            w.terminate()
        for w in workers:
            w.wait(timeout=60)
        srv.stop()
    return len(pictures) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=24)
    args = parser.parse_args()
    pictures = [photo(i) for i in range(args.jobs)]
    with tempfile.TemporaryDirectory() as tmp:
        one = run(1, pictures, Path(tmp))
        two = run(2, pictures, Path(tmp))
    print(f"{args.jobs} image conversions (3000x2000 PNG -> WebP q90), queued at once:")
    print(f"  1 worker process x 1 slot:   {one:6.2f} jobs/s")
    print(f"  2 worker processes x 1 slot: {two:6.2f} jobs/s")
    print(f"  ratio: {two / one:.2f}x (goal: at least 1.7x)")


if __name__ == "__main__":
    main()
