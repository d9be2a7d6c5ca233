"""Running engine executables: a timeout, a checked exit code, and the whole process tree killed on the way out.

Command lines are built by pure functions next to each engine; this module only runs them. Every process is
started in a new session (process group) so that a timeout or a cancel kills what it spawned too —
``soffice`` forks ``soffice.bin``, Calibre forks workers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from converters.base import Cancelled, ConversionError

if TYPE_CHECKING:
    import psutil

POLL_SECONDS = 0.2


@dataclass(frozen=True)
class Finished:
    """What a finished command left behind."""

    returncode: int
    stdout: str
    stderr: str


def popen_kwargs() -> dict[str, object]:
    """Arguments that put a child in its own process group, on every platform."""
    if os.name == "nt":
        return {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0x200)}
    return {"start_new_session": True}


def kill_tree(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """Kill ``proc``, its process group and every descendant still alive; never raises."""
    import psutil

    try:
        descendants = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    if os.name != "nt":
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for child in [*descendants]:
        try:
            child.kill()
        except psutil.Error:
            pass
    try:
        proc.kill()
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def wait_gone(procs: Sequence[psutil.Process], timeout: float) -> None:
    """Wait up to ``timeout`` s until killed ``procs`` have exited.

    A zombie has exited. ``psutil.wait_procs`` waits for it to be reaped as well, which is up to its
    parent: an orphan waits for init (seconds in some containers), and a grandchild whose parent is a
    live process that never calls ``wait`` (a pooled conversion child) is never reaped at all.
    """
    pending = list(procs)
    deadline = time.monotonic() + timeout
    while pending:
        pending = [p for p in pending if _running(p)]
        if not pending or time.monotonic() >= deadline:
            return
        time.sleep(0.01)


def _running(proc: psutil.Process) -> bool:
    import psutil

    try:
        return bool(proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def run_command(
    cmd: Sequence[str],
    *,
    timeout: float,
    cancelled: Callable[[], bool] = lambda: False,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    engine: str = "",
) -> Finished:
    """Run ``cmd`` to completion and return its output; raise on timeout, cancel or a non-zero exit.

    A timeout raises ``ConversionError("timeout")``; a cancel raises :class:`Cancelled`; a non-zero exit
    raises ``ConversionError("engine_failed")`` with the tail of stderr. Either way the process tree is killed.
    """
    name = engine or Path(cmd[0]).name
    try:
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **popen_kwargs(),  # type: ignore[call-overload]
        )
    except OSError as exc:
        raise ConversionError("engine_missing", f"{name} could not be started: {exc}") from exc
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                out, err = proc.communicate(timeout=POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                if cancelled():
                    raise Cancelled() from None
                if time.monotonic() > deadline:
                    raise ConversionError("timeout", f"{name} did not finish within {timeout:.0f} s") from None
    except BaseException:
        kill_tree(proc)
        raise
    stdout = out.decode("utf-8", "replace")
    stderr = err.decode("utf-8", "replace")
    if proc.returncode != 0:
        raise ConversionError("engine_failed", f"{name} failed (exit {proc.returncode}): {tail(stderr or stdout)}")
    return Finished(proc.returncode, stdout, stderr)


def tail(text: str, limit: int = 400) -> str:
    """The last meaningful part of an engine's output, for an error message."""
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]
