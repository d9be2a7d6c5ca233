"""Watch folders: time from "finished writing" (the file closed) to "output present", for a small PNG.

Run: .venv/bin/python bench/bench_watch.py [--count 10] [--settle 1.0] [--polling]

A real service (two workers) on a temp data dir watches a folder with a saved preset (image-convert
to WebP). Each round writes one 640x480 PNG, closes it, and waits for ``OUT/<name>.webp`` to appear
(it appears whole: outputs are written under a temp name and renamed). The settle time is part of
what is measured, as it is of what a user waits for. Prints each round and the median (goal < 2 s).
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PIL import Image  # noqa: E402

from localapi.config import Settings  # noqa: E402
from localapi.core.service import Service  # noqa: E402
from localapi.core.watch import open_watch  # noqa: E402
from localapi.core.workflows.records import StepSpec  # noqa: E402

GOAL_SECONDS = 2.0


def png(seed: int) -> bytes:
    buf = io.BytesIO()
    Image.effect_noise((640, 480), 30 + seed).convert("RGB").save(buf, "PNG")
    return buf.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--settle", type=float, default=1.0, help="settle_seconds (the default is 1.0)")
    parser.add_argument("--polling", action="store_true", help="the polling observer (network drives)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        root = Path(tmp)
        in_dir, out_dir = root / "in", root / "out"
        in_dir.mkdir()
        service = Service.open(Settings(data_dir=root / "data"))
        service.presets.save("bench webp", [StepSpec("image-convert", {}, "webp")])
        service.start_workers()
        watch = open_watch(service, settle_seconds=args.settle, polling=args.polling)
        watch.add(in_dir, out_dir, "bench webp")
        watch.start()
        try:
            times = []
            for n in range(-1, args.count):  # round -1 warms the workers up and is not counted
                data = png(n + 1)
                with open(in_dir / f"round{n + 1}.png", "wb") as f:
                    f.write(data)
                written = time.monotonic()  # the file is closed
                target = out_dir / f"round{n + 1}.webp"
                deadline = written + 60
                while not target.exists():
                    if time.monotonic() > deadline:
                        print(f"round {n}: no output after 60 s", file=sys.stderr)
                        return 1
                    time.sleep(0.01)
                took = time.monotonic() - written
                if n >= 0:
                    times.append(took)
                    print(f"round {n + 1:2}: {took:.2f} s")
        finally:
            watch.stop()
            service.close()
    median = statistics.median(times)
    print(f"median written -> output present: {median:.2f} s over {len(times)} rounds "
          f"(settle {args.settle} s, {'polling' if args.polling else 'events'}; goal < {GOAL_SECONDS} s)")
    return 0 if median < GOAL_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
