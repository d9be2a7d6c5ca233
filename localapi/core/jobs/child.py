"""The child process that runs one conversion.

It reads a :class:`~localapi.core.jobs.messages.JobSpec` per line on stdin, runs the tool, and
reports on stdout: ``Progress`` while working, then ``Done`` or ``Failed`` (see
:mod:`localapi.core.jobs.messages`). The parent supervises it: cancel and timeouts kill this
process and everything it started.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

from converters.base import Cancelled, Context, ConversionError, InputFile, ToolEnv
from converters.catalogue import load_catalogue
from converters.inputs.safety import check_input
from localapi.core.jobs.messages import Done, Failed, JobSpec, Progress, Ready, Reply, encode_reply
from localapi.core.jobs.priority import lower_priority


def _die_with_parent() -> None:
    """Make sure a killed supervisor (kill -9) does not leave this conversion running."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:
            pass

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def _limit_memory(megabytes: int) -> None:
    if megabytes <= 0:
        return
    try:
        import resource
    except ImportError:  # Windows: the job object limit is not set here
        return
    limit = megabytes * 1024 * 1024
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):
        pass


class Reporter:
    def __init__(self) -> None:
        self._last = -1.0
        self._last_time = 0.0
        self._lock = threading.Lock()

    def send(self, reply: Reply) -> None:
        with self._lock:
            sys.stdout.write(encode_reply(reply) + "\n")
            sys.stdout.flush()

    def progress(self, fraction: float) -> None:
        fraction = min(max(float(fraction), 0.0), 1.0)
        t = time.monotonic()
        if fraction - self._last >= 0.01 or (fraction > self._last and t - self._last_time > 0.5):
            self._last, self._last_time = fraction, t
            self.send(Progress(round(fraction, 4)))


def _looks_like_oom(exc: BaseException) -> bool:
    """Engines written in C report a failed allocation in their own words (MuPDF: "malloc ...")."""
    text = f"{type(exc).__name__} {exc}".lower()
    return any(word in text for word in ("out of memory", "malloc", "cannot allocate", "bad_alloc", "memoryerror"))


def run(spec: JobSpec, reporter: Reporter) -> None:
    """Run one job and send its ``Done`` or ``Failed``; nothing a tool raises escapes."""
    with job_temp(Path(spec.out_dir).parent / TEMP):
        reply = _run(spec, reporter)
    reporter.send(reply)


TEMP = "tmp"  # in the job's work dir: the job's temporary files (Python's tempfile, and the engines')
TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")


@contextlib.contextmanager
def job_temp(folder: Path) -> Iterator[None]:
    """Temporary files made during the job go to ``folder``, inside the job's work dir, which the worker
    empties or removes when the job ends: a conversion killed on cancel or at a stop cannot clean up
    after itself, and would leave the document it was converting in the system's temp folder."""
    try:
        folder.mkdir(exist_ok=True)
    except OSError:  # a full disk, say: the job runs as before, and says what failed on its own
        yield
        return
    saved = tempfile.tempdir, {name: os.environ.get(name) for name in TEMP_VARIABLES}
    tempfile.tempdir = str(folder)
    os.environ.update(dict.fromkeys(TEMP_VARIABLES, str(folder)))  # the engines this job starts
    try:
        yield
    finally:
        tempfile.tempdir = saved[0]
        for name, value in saved[1].items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run(spec: JobSpec, reporter: Reporter) -> Done | Failed:
    tool = load_catalogue().get(spec.tool)
    if tool is None:
        return Failed("unknown_tool", f"No tool {spec.tool!r}.")
    env = ToolEnv(models_dir=Path(spec.models_dir) if spec.models_dir else None, settings=spec.settings,
                  slots={name: Path(path) for name, path in spec.slots.items()})
    ctx = Context(
        inputs=[InputFile(path=Path(i.path), format=i.format, name=i.name) for i in spec.inputs],
        params=tool.params.model_validate(spec.params),
        output_format=spec.output_format,
        out_dir=Path(spec.out_dir),
        progress=reporter.progress,
        env=env,
    )
    try:
        for item in ctx.inputs:
            check_input(item.path, item.format)
        tool.run(ctx)
    except ConversionError as exc:
        return Failed(exc.code, exc.message)
    except Cancelled:
        return Failed("canceled", "The job was canceled.")
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            return Failed("disk_full", "The disk is full; free some space and retry.")
        traceback.print_exc()
        return Failed("engine_error", f"{type(exc).__name__}: {exc}"[:500])
    except MemoryError:
        return Failed("out_of_memory", "The conversion needed more memory than allowed.")
    except Exception as exc:  # an engine bug, or an engine's own way of saying it ran out of memory
        traceback.print_exc()
        code = "out_of_memory" if _looks_like_oom(exc) else "engine_error"
        return Failed(code, f"{type(exc).__name__}: {exc}"[:500])
    return Done(ctx.notes)


def _warm_up() -> None:
    """Import what most jobs need while waiting for the spec: a warm child starts at once."""
    load_catalogue()
    for module in ("PIL.Image", "pymupdf"):
        try:
            __import__(module)
        except Exception:  # an optional engine may be missing; its tools say so
            pass


def main() -> int:
    """Serve jobs, one JSON line each on stdin, until stdin closes or the supervisor kills us."""
    _die_with_parent()
    lower_priority()  # again: the entry (filekiln _child) did it before these imports, -m ... child did not
    _warm_up()
    Reporter().send(Ready())  # the job's clock starts now, not while this process was starting
    limited = False
    for line in sys.stdin:
        if not line.strip():
            continue
        spec = JobSpec.decode(line)
        if not limited:
            _limit_memory(spec.memory_limit_mb)
            limited = True
        run(spec, Reporter())
    return 0


if __name__ == "__main__":
    sys.exit(main())
