"""``filekiln convert``: files here in a child process, through a running FileKiln (``--server``), or
folders and presets as workflows (:mod:`filekiln.batch`); refused for the same reasons as the API refuses.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from filekiln.signals import caught
from localapi.config import Settings


def parse_param(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise SystemExit(f"--param takes KEY=VALUE, not {text!r}")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    return key, value


def cmd_convert(args: argparse.Namespace, settings: Settings) -> int:
    """Convert local files in a child process, refused for the same reasons as a job through the API."""
    if args.preset is not None or any(p.is_dir() for p in args.files):
        return convert_workflows(args, settings)
    if args.server:
        return convert_on_server(args)
    from converters.base import InputFile, ToolEnv, free_name
    from converters.catalogue import load_catalogue
    from converters.inputs.sniff import sniff
    from localapi.core.db import open_database
    from localapi.core.errors import ServiceError
    from localapi.core.jobs.messages import InputSpec, JobSpec
    from localapi.core.jobs.runner import run_supervised
    from localapi.core.jobs.validation import check_input_file, check_request, precheck
    from localapi.core.states import JobStatus
    from localapi.core.switches import Switches

    env = ToolEnv(models_dir=settings.data_dir / "models", settings=dict(settings.tools))
    switches = Switches(open_database(settings), env)
    try:
        tool, model, fmt = check_request(load_catalogue(), switches, args.tool,
                                         dict(parse_param(p) for p in args.param), args.output_format,
                                         len(args.files))
        inputs = []
        for path in args.files:
            if not path.is_file():
                print(f"No file {path}.", file=sys.stderr)
                return 2
            kind = sniff(path, path.name)
            check_input_file(tool, path.name, kind, path.stat().st_size)
            inputs.append(InputFile(path.resolve(), kind or "", path.name))
        precheck(tool, model, inputs, env)
    except ServiceError as exc:
        details = "".join(f"\n  {field}: {'; '.join(msgs)}" for field, msgs in (exc.errors or {}).items())
        print(f"{exc.code}: {exc.detail}{details}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="filekiln-") as tmp:
        out_dir = Path(tmp) / "out"
        out_dir.mkdir()
        spec = JobSpec(tool=tool.id, inputs=[InputSpec(str(i.path), i.format, i.name) for i in inputs],
                       params=model.revealed(),
                       output_format=fmt, out_dir=str(out_dir), models_dir=str(env.models_dir),
                       settings=dict(env.settings), memory_limit_mb=settings.job_memory_limit_mb)
        bar = ProgressBar(sys.stderr)
        with caught(signal.SIGINT) as interrupted:
            outcome = run_supervised(spec, log_path=Path(tmp) / "child.log",
                                     timeout=settings.tool_timeouts.get(tool.id, tool.timeout_seconds),
                                     on_progress=bar.update, should_cancel=interrupted.is_set)
        bar.finish(outcome.status == JobStatus.DONE)
        if outcome.status != JobStatus.DONE:
            message = outcome.message or "canceled"
            print(f"{tool.id} failed: {message} ({outcome.error_code or 'canceled'})", file=sys.stderr)
            return 1
        for note in outcome.notes:
            print(f"note: {note}", file=sys.stderr)
        for produced in sorted(out_dir.iterdir()):
            target = free_name(args.out / produced.name)
            shutil.move(str(produced), target)
            print(target)
    return 0


def convert_on_server(args: argparse.Namespace) -> int:
    """``convert --server``: the same job through a running FileKiln's API, with the same output and exit codes."""
    from filekiln.client import FileKiln, FileKilnError, JobFailed

    for path in args.files:
        if not path.is_file():
            print(f"No file {path}.", file=sys.stderr)
            return 2
    bar = ProgressBar(sys.stderr)
    with FileKiln(args.server, key=args.key) as kiln:
        try:
            job = kiln.run_job(args.files, tool=args.tool, to=args.output_format,
                               params=dict(parse_param(p) for p in args.param), progress=bar.update)
        except JobFailed as exc:
            bar.finish(False)
            print(f"{args.tool} failed: {exc.error_message or 'canceled'} ({exc.error_code or 'canceled'})",
                  file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # run_job has canceled the job on the server
            bar.finish(False)
            print(f"{args.tool} failed: canceled (canceled)", file=sys.stderr)
            return 1
        except FileKilnError as exc:
            if bar.last >= 0:
                bar.finish(False)
            details = "".join(f"\n  {field}: {'; '.join(msgs)}" for field, msgs in exc.errors.items())
            print(f"{exc.code}: {exc.detail}{details}", file=sys.stderr)
            return 2
        bar.finish(True)
        for note in job.get("notes") or []:
            print(f"note: {note}", file=sys.stderr)
        try:
            for path in kiln.download_result(job["id"], args.out):
                print(path)
        except FileKilnError as exc:
            print(f"{exc.code}: {exc.detail}", file=sys.stderr)
            return 1
    return 0


def convert_workflows(args: argparse.Namespace, settings: Settings) -> int:
    """``convert`` with folders or ``--preset``: workflows run by the real engine (see filekiln.batch)."""
    from filekiln.batch import convert_batch, workflow_on_server

    if args.server:
        if any(p.is_dir() for p in args.files):
            print("convert --server takes files, not folders (not supported yet); run it without --server.",
                  file=sys.stderr)
            return 2
        if args.param or args.output_format:
            print("--to and --param go with --tool; a preset brings its own.", file=sys.stderr)
            return 2
        return workflow_on_server(args, ProgressBar(sys.stderr))
    return convert_batch(args, settings, ProgressBar(sys.stderr), parse_param)


class ProgressBar:
    def __init__(self, stream: Any, width: int = 30) -> None:
        self.stream = stream
        self.width = width
        self.started = time.monotonic()
        self.last = -1

    def update(self, fraction: float) -> None:
        percent = int(fraction * 100)
        if percent == self.last:
            return
        self.last = percent
        filled = int(self.width * fraction)
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {percent:3d}%")
        self.stream.flush()

    def note(self, line: str) -> None:
        """Print ``line`` where the bar is, then draw the bar again below it."""
        self.stream.write(f"\r{line:<{self.width + 7}}\n")
        last, self.last = self.last, -1
        if last >= 0:
            self.update((last + 0.5) / 100)
        self.stream.flush()

    def finish(self, ok: bool) -> None:
        if ok:
            self.update(1.0)
        self.stream.write(f"  {time.monotonic() - self.started:.1f}s\n")
        self.stream.flush()
