"""How soon the desktop's jobs table shows a job's change, measured from the change's own event.

Run: QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_desktop_events.py [--jobs 50] [--mode both]

The app's models and controllers (no window) on a fresh data dir, the API off. Jobs are made as an
API client makes them (a key, ``service.jobs.create``), one after the other, each a small PNG to
JPEG. For every change of state (queued, processing, done) the latency is the time from the event's
``created_at`` (written with the change, in the same transaction) to the moment the jobs model first
showed that state. Two set-ups:

- ``in-process``: the app's own workers run the jobs; the feed is woken at once by each change.
- ``worker-process``: a ``filekiln worker`` process runs them; the app's feed sees its changes at its
  next look at the event table (every 100 ms), so expect up to 100 ms more for processing and done.

A state the model never showed on its own (processing and done applied in one batch because both
arrived together) counts as merged, not as a latency. Prints n, median, p99 and max per state.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QEventLoop, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from desktop.context import Desktop  # noqa: E402
from localapi.config import load_settings  # noqa: E402
from localapi.core.jobs import Caller  # noqa: E402
from localapi.core.jobs.events import CREATED, PROGRESS  # noqa: E402
from localapi.core.service import Service  # noqa: E402
from localapi.core.states import JobStatus  # noqa: E402

STATES = (JobStatus.QUEUED, JobStatus.PROCESSING, JobStatus.DONE)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def png_bytes() -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(buffer, "PNG")
    return buffer.getvalue()


def wait_until(check: Callable[[], bool], signal: object, timeout: float) -> None:
    """Run the event loop until ``check()`` holds, looking each time ``signal`` fires (no polling delay)."""
    if check():
        return
    loop = QEventLoop()

    def look(*_: object) -> None:
        if check():
            loop.quit()

    signal.connect(look)  # type: ignore[attr-defined]
    QTimer.singleShot(int(timeout * 1000), loop.quit)
    loop.exec()
    signal.disconnect(look)  # type: ignore[attr-defined]
    if not check():
        raise TimeoutError("the jobs model did not get there in time")


def pause(seconds: float) -> None:
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def start_worker_process(data_dir: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "filekiln", "--data-dir", str(data_dir), "worker", "--workers", "1"],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "running" not in line:
        proc.kill()
        raise RuntimeError(f"filekiln worker did not start: {line!r}")
    return proc


def measure(mode: str, jobs: int, gap: float) -> tuple[dict[JobStatus, list[float]], dict[JobStatus, int]]:
    latencies: dict[JobStatus, list[float]] = {s: [] for s in STATES}
    merged: dict[JobStatus, int] = dict.fromkeys(STATES, 0)
    with tempfile.TemporaryDirectory(prefix="bench-desktop-events-") as tmp:
        data_dir = Path(tmp) / "data"
        service = Service.open(load_settings(data_dir, port=free_port()))
        desktop = Desktop.create(service)
        shown: dict[str, dict[JobStatus, float]] = {}

        def record() -> None:
            at = time.time()  # the clock of the events' created_at
            for row in desktop.jobs.rows:
                shown.setdefault(row.id, {}).setdefault(row.status, at)

        desktop.jobs.jobs_updated.connect(record)
        worker: subprocess.Popen[str] | None = None
        try:
            if mode == "in-process":
                desktop.start(start_api=False)
                wait_until(lambda: desktop.workers_started, desktop.jobs.jobs_updated, 60)
                pause(0.5)
            else:
                desktop.jobs_controller.start()
                worker = start_worker_process(data_dir)
            key = service.keys.create("bench")[0]
            sample = Path(tmp) / "sample.png"
            image = png_bytes()
            job_ids = []
            for _ in range(jobs):
                sample.write_bytes(image)
                stored = service.files.add(sample, "photo.png", key_id=key.id, kind="upload")
                job = service.jobs.create(Caller(key=key), "image-convert", [stored.id], {}, "jpg")
                job_ids.append(job.id)
                wait_until(lambda job_id=job.id: JobStatus.DONE in shown.get(job_id, {}),  # type: ignore[misc]
                           desktop.jobs.jobs_updated, 60)
                pause(gap)
            for job_id in job_ids:
                for event in service.events.since(0, job_id=job_id):
                    status = event.job.status
                    if event.type in (CREATED, PROGRESS) or status not in latencies:
                        continue
                    at = shown.get(job_id, {}).get(status)
                    if at is None:
                        merged[status] += 1
                    else:
                        latencies[status].append(at - event.created_at)
        finally:
            desktop.shutdown()
            if worker is not None:
                worker.terminate()
                worker.wait(30)
    return latencies, merged


def report(mode: str, latencies: dict[JobStatus, list[float]], merged: dict[JobStatus, int]) -> None:
    print(f"{mode}: from an event's created_at to the jobs model showing it (ms)")
    everything = [x for values in latencies.values() for x in values]
    for name, values, skipped in [*((s.value.lower(), latencies[s], merged[s]) for s in STATES),
                                  ("all states", everything, sum(merged.values()))]:
        if not values:
            print(f"  {name:12} no samples")
            continue
        ms = sorted(v * 1000 for v in values)
        p99 = statistics.quantiles(ms, n=100, method="inclusive")[98] if len(ms) > 1 else ms[0]
        extra = f"   ({skipped} merged into the next state)" if skipped else ""
        print(f"  {name:12} n={len(ms):3}  median {statistics.median(ms):6.1f}  p99 {p99:6.1f}  "
              f"max {ms[-1]:6.1f}{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--gap", type=float, default=0.05, help="seconds between one job's end and the next")
    parser.add_argument("--mode", choices=("in-process", "worker-process", "both"), default="both")
    args = parser.parse_args()
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = QApplication.instance() or QApplication(sys.argv)
    modes = ("in-process", "worker-process") if args.mode == "both" else (args.mode,)
    for mode in modes:
        latencies, merged = measure(mode, args.jobs, args.gap)
        report(mode, latencies, merged)
    print(f"{args.jobs} jobs per set-up; platform {os.environ.get('QT_QPA_PLATFORM', 'native')}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; goal: a change of state shown "
          "within 100 ms")
    del app


if __name__ == "__main__":
    main()
