"""The per-job cost of the scale-out back-ends: the same small PNG->WebP jobs through one `filekiln serve`
on the embedded defaults (SQLite, Huey on SQLite, the data dir) and one on PostgreSQL + Redis + an
S3-compatible bucket (SeaweedFS), both servers up at once and taking turns, so that both meet the
same machine.

Prints, for each: the sequential median of a whole job (upload, create-and-wait, download) and of each
step, and the rate of 4 clients on 2 workers; then the scale-out figures as ratios of the embedded ones.
The back-ends are real servers on loopback ports in temp dirs (tests/backends.py starts them).

    .venv/bin/python bench/bench_scaleout_overhead.py [--jobs 200] [--rounds 4] [--clients 4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._server import Server, start_server  # noqa: E402
from bench.bench_api_overhead import THROTTLED, one_job, sample_pngs, shared_jobs  # noqa: E402
from tests.backends import BACKENDS  # noqa: E402


def start(root: Path, name: str, env: dict[str, str]) -> tuple[Server, str]:
    data = root / name
    data.mkdir()
    saved = dict(os.environ)
    os.environ.update(env)  # start_server and run_cli pass this process's environment on
    try:
        srv = start_server(data, root / f"{name}.log", "--workers", "2")
        return srv, srv.create_key("bench")
    finally:
        os.environ.clear()
        os.environ.update(saved)


def sequential(srv: Server, key: str, pngs: list[bytes], steps: dict[str, list[float]]) -> list[float]:
    with srv.client(key) as c:
        return [one_job(c, p, f"s{i}.png", steps) for i, p in enumerate(pngs)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=200, help="jobs per configuration, sequential and with clients")
    parser.add_argument("--rounds", type=int, default=4, help="turns each configuration takes")
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    pngs = sample_pngs(args.jobs)
    share = args.jobs // args.rounds
    names = ("embedded", "scale-out")
    latencies: dict[str, list[float]] = {n: [] for n in names}
    steps: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    rates: dict[str, list[float]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        servers = {"embedded": start(root, "embedded", {}),
                   "scale-out": start(root, "scale", BACKENDS.env(root / "scale"))}
        try:
            for srv, key in servers.values():
                sequential(srv, key, pngs[:5], {})  # warm: engines imported, pools filled
            for turn in range(args.rounds):
                part = pngs[turn * share:(turn + 1) * share]
                for name in names if turn % 2 == 0 else reversed(names):
                    srv, key = servers[name]
                    latencies[name] += sequential(srv, key, part, steps[name])
                    rates[name].append(len(part) / shared_jobs(srv.base_url, key, part, args.clients).seconds)
        finally:
            for srv, _ in servers.values():
                srv.stop()
            BACKENDS.stop()
    print(f"{share * args.rounds} jobs per configuration, {args.rounds} turns each, alternated\n")
    print(f"{'':28} {'embedded':>10} {'scale-out':>10} {'ratio':>7}")
    seq = {n: statistics.median(latencies[n]) * 1000 for n in names}
    print(f"{'whole job, sequential (ms)':28} {seq['embedded']:10.1f} {seq['scale-out']:10.1f} "
          f"{seq['scale-out'] / seq['embedded']:6.2f}x")
    for step in steps["embedded"]:
        a, b = (statistics.median(steps[n][step]) * 1000 for n in names)
        print(f"{'    ' + step + ' (ms)':28} {a:10.1f} {b:10.1f} {b / a:6.2f}x")
    rate = {n: statistics.median(rates[n]) for n in names}
    print(f"{f'{args.clients} clients (jobs/s)':28} {rate['embedded']:10.1f} {rate['scale-out']:10.1f} "
          f"{rate['scale-out'] / rate['embedded']:6.2f}x")
    print(f"\nscale-out per-job overhead over embedded: {seq['scale-out'] - seq['embedded']:.1f} ms; "
          f"429 answers waited out: {THROTTLED['count']}")


if __name__ == "__main__":
    main()
