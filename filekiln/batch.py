"""``filekiln convert`` on folders, or with a preset: each file (or each folder, for a merging tool)
run as one workflow by the real engine, in this process, the outputs keeping the folder tree.

    filekiln convert photos --recursive --tool image-convert --to webp --out web
    filekiln convert scans --preset "Scan to searchable PDF" --out pdfs

A file the first step's tool does not take is skipped (reported, not a failure). The exit code is 0
when every workflow ended DONE, 1 when any failed or the run was interrupted, 2 for a request that
cannot run at all (an unknown tool or preset, bad params, a named file the tool does not take).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filekiln.signals import caught
from localapi.config import Settings

POLL_SECONDS = 0.1


@dataclass(frozen=True)
class Item:
    """What one workflow gets: one file, or all of a folder's files for a merging tool."""

    paths: list[Path]
    label: str  # how the status lines name it: its path inside the folder given
    out_dir: Path  # where its outputs go, inside --out


class BadRequest(Exception):
    """A request that cannot run at all (exit code 2)."""


def walk(root: Path, recursive: bool) -> list[Path]:
    """The files in ``root`` (and its subfolders, when ``recursive``) in name order, hidden ones skipped."""
    found = root.rglob("*") if recursive else root.iterdir()
    return sorted(p for p in found
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts))


def collect(inputs: list[Path], tool: Any, out: Path, recursive: bool,
            merges: bool | None = None) -> tuple[list[Item], list[tuple[str, str]]]:
    """The workflows to run on ``inputs`` and the files skipped as ``(label, why)``.

    A folder's files that ``tool`` (the first step's) does not take are skipped; a file named on the
    command line that it does not take is a :class:`BadRequest`, as it is without folders. ``merges``
    (default: whether ``tool`` does): some step combines its inputs, so each folder's files, and the
    files named, go into one workflow (the steps before the merge run per file inside it).
    """
    merges = tool.merges_inputs if merges is None else merges
    from converters.inputs.sniff import sniff
    from localapi.core.errors import ServiceError
    from localapi.core.jobs.validation import check_input_file

    def refusal(path: Path) -> str | None:
        try:
            check_input_file(tool, path.name, sniff(path, path.name), path.stat().st_size)
        except ServiceError as exc:
            return exc.detail
        return None

    items: list[Item] = []
    skipped: list[tuple[str, str]] = []
    named: list[Path] = []
    for given in inputs:
        if given.is_dir():
            folders: dict[Path, list[Path]] = {}
            for path in walk(given, recursive):
                rel = path.relative_to(given)
                why = refusal(path)
                if why is not None:
                    skipped.append((rel.as_posix(), why))
                else:
                    folders.setdefault(rel.parent, []).append(path)
            for folder, paths in folders.items():
                if merges:
                    label = f"{given.name if folder == Path('.') else folder.as_posix()}/ ({len(paths)} files)"
                    items.append(Item(paths, label, out / folder))
                else:
                    items.extend(Item([p], p.relative_to(given).as_posix(), out / folder) for p in paths)
        elif given.is_file():
            why = refusal(given)
            if why is not None:
                raise BadRequest(why)
            named.append(given)
        else:
            raise BadRequest(f"No file or folder {given}.")
    if named:  # files named on the command line: one job for all of them with a merging tool, as without folders
        if merges:
            items.append(Item(named, ", ".join(p.name for p in named), out))
        else:
            items.extend(Item([p], p.name, out) for p in named)
    return items, skipped


def steps_asked(args: argparse.Namespace, parse_param: Callable[[str], tuple[str, Any]]) -> dict[str, Any]:
    """The workflow's steps as ``create`` takes them: ``{"preset": name}`` or ``{"steps": [one step]}``."""
    if args.preset is not None:
        if args.param or args.output_format:
            raise BadRequest("--to and --param go with --tool; a preset brings its own.")
        return {"preset": args.preset}
    return {"steps": [{"tool": args.tool, "params": dict(parse_param(p) for p in args.param),
                       "outputFormat": args.output_format}]}


def convert_batch(args: argparse.Namespace, settings: Settings, bar: Any,
                  parse_param: Callable[[str], tuple[str, Any]]) -> int:
    """``filekiln convert`` with folders or ``--preset``: check, collect, run, copy out; the exit code."""
    from localapi.core.errors import ServiceError
    from localapi.core.service import Service

    service = Service.open(settings)
    try:
        try:
            request = steps_asked(args, parse_param)
            specs, _ = service.workflows.resolve(request.get("steps"), request.get("preset"))
            checked = service.workflows.check_chain(specs, None)
            merges = any(step_tool.merges_inputs for step_tool, _, _ in checked)
            items, skipped = collect(args.files, checked[0][0], args.out, args.recursive, merges)
        except ServiceError as exc:
            details = "".join(f"\n  {field}: {'; '.join(msgs)}" for field, msgs in (exc.errors or {}).items())
            print(f"{exc.code}: {exc.detail}{details}", file=sys.stderr)
            return 2
        except BadRequest as exc:
            print(exc, file=sys.stderr)
            return 2
        for label, why in skipped:
            print(f"skipped {label}: {why}", file=sys.stderr)
        if not items:
            print("Nothing to convert.", file=sys.stderr)
            return 0
        service.start_workers()
        return Batch(service, bar).run(items, request)
    finally:
        service.close()


class Batch:
    """Runs the items as workflows, shows one progress bar for them all, and copies each one's outputs out."""

    def __init__(self, service: Any, bar: Any) -> None:
        from localapi.core.jobs import Caller

        self.service = service
        self.bar = bar
        self.caller = Caller()
        self.failed = 0

    def run(self, items: list[Item], request: dict[str, Any]) -> int:
        from localapi.core.errors import ServiceError

        running: dict[str, Item] = {}
        with caught(signal.SIGINT) as interrupted:
            for item in items:
                if interrupted.is_set():
                    break
                stored = [self.service.files.add(p, p.name, key_id=None, kind="upload", move=False)
                          for p in item.paths]
                try:
                    workflow = self.service.workflows.create(self.caller, [f.id for f in stored], **request)
                except ServiceError as exc:  # this file only: sizes, pixel limits, the tool's own checks
                    self._forget([f.id for f in stored])
                    self._say(f"failed {item.label}: {exc.detail}")
                    self.failed += 1
                    continue
                running[workflow.id] = item
            ended = len(items) - len(running)  # refused at creation, or never created (interrupted)
            while running and not interrupted.is_set():
                progress = 0
                for workflow in self.service.workflows.many(list(running)):  # a few reads for them all
                    if workflow.status.finished:
                        self._finish(workflow, running.pop(workflow.id))
                        ended += 1
                    else:
                        progress += workflow.progress
                self.bar.update(min((ended + progress / 100) / len(items), 1.0))
                interrupted.wait(POLL_SECONDS)
            if interrupted.is_set():
                for workflow_id in running:
                    self._cancel(workflow_id)
                self.bar.finish(False)
                print(f"Interrupted: {len(running)} canceled.", file=sys.stderr)
                return 1
        self.bar.finish(self.failed == 0)
        if self.failed:
            print(f"{self.failed} of {len(items)} failed.", file=sys.stderr)
        return 1 if self.failed else 0

    def _finish(self, workflow: Any, item: Item) -> None:
        from converters.base import free_name
        from localapi.core.states import JobStatus

        if workflow.status == JobStatus.DONE:
            item.out_dir.mkdir(parents=True, exist_ok=True)
            written = []
            for name, path in self.service.workflows.result_paths(workflow.id):
                target = free_name(item.out_dir / name)
                shutil.copyfile(path, target)
                written.append(target)
                print(target, flush=True)
            self._say(f"ok {item.label} -> {', '.join(str(t) for t in written)}")
        else:
            self._say(f"failed {item.label}: {workflow.error_message or workflow.error_code}")
            self.failed += 1
        # the copies are out: the store keeps nothing of a command-line run
        extra = [workflow.bundle_file_id] if workflow.bundle_file_id else []
        self._forget([*workflow.input_file_ids, *workflow.result_file_ids, *extra])

    def _cancel(self, workflow_id: str) -> None:
        from localapi.core.errors import ServiceError

        try:
            workflow = self.service.workflows.cancel(workflow_id, self.caller)
        except ServiceError:  # it ended meanwhile
            workflow = self.service.workflows.get(workflow_id, self.caller)
        self._forget(workflow.input_file_ids)

    def _forget(self, file_ids: list[str]) -> None:
        for file_id in file_ids:
            self.service.files.delete(file_id)

    def _say(self, line: str) -> None:
        """A status line above the progress bar, which is drawn again below it."""
        self.bar.note(line)


def workflow_on_server(args: argparse.Namespace, bar: Any) -> int:
    """``convert --preset NAME --server URL`` on files: one workflow through a running FileKiln's API."""
    from filekiln.client import FileKiln, FileKilnError, WorkflowFailed

    with FileKiln(args.server, key=args.key) as kiln:
        try:
            paths = kiln.run_workflow(args.files, preset=args.preset, out=args.out, progress=bar.update)
        except WorkflowFailed as exc:
            bar.finish(False)
            print(f"failed: {exc.error_message or 'canceled'} ({exc.error_code or 'canceled'})", file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # run_workflow has canceled it on the server
            bar.finish(False)
            print("failed: canceled (canceled)", file=sys.stderr)
            return 1
        except (FileKilnError, FileNotFoundError) as exc:
            if bar.last >= 0:
                bar.finish(False)
            print(exc, file=sys.stderr)
            return 2
    bar.finish(True)
    for path in paths:
        print(path)
    return 0
