"""Running engine executables: a timeout, a checked exit code, and the whole process tree killed on the way out.

Command lines are built by pure functions next to each engine; this module only runs them. Every process is
started in a new session (process group) so that a timeout or a cancel kills what it spawned too —
``soffice`` forks ``soffice.bin``, Calibre forks workers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


def popen_kwargs(die_with_parent: bool = True) -> dict[str, object]:
    """Arguments that put a child in its own process group, on every platform.

    On Linux the child is also told to die with the thread that started it (``PR_SET_PDEATHSIG``), so an
    engine that starts a session of its own never outlives a conversion that was killed. A process meant to
    outlive its starter (a worker slot's LibreOffice) passes ``die_with_parent=False``.
    """
    if os.name == "nt":
        return {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0x200)}
    kwargs: dict[str, object] = {"start_new_session": True}
    if die_with_parent and sys.platform.startswith("linux") and _LIBC is not None:
        kwargs["preexec_fn"] = _die_with_parent
    return kwargs


def _load_libc() -> Any:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _load_libc() if sys.platform.startswith("linux") else None
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Runs in the forked child before exec: async-signal-safe work only (one system call)."""
    assert _LIBC is not None
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def kill_tree(target: int | subprocess.Popen[Any], *, wait: float = 2.0) -> None:
    """Kill a process, its process group and every descendant still alive, now; never raises.

    ``target`` leads its own process group (every process FileKiln starts does). First its
    descendants are listed, for those that left the group (an engine that starts a session of its
    own): once the target is dead they are orphans, and nothing leads to them any more. Listing
    reads ``/proc``, which can stall for seconds on a loaded machine while a victim is busy in the
    kernel, so it gets ``LIST_BUDGET`` seconds on a thread of its own: then the group is signalled
    whatever the list's state, and the list's members are killed as soon as it is done. The caller
    waits at most ``wait`` seconds for the victims to be gone (exited, not necessarily reaped).
    """
    pid = target if isinstance(target, int) else target.pid
    sweep = _Sweep(pid)
    sweep.listed.wait(LIST_BUDGET)
    if os.name != "nt":
        try:
            os.killpg(pid, signal.SIGKILL)  # even when the leader itself is gone, its group may not be
        except (ProcessLookupError, PermissionError):
            pass
    try:
        if isinstance(target, int):
            os.kill(pid, signal.SIGKILL)
        else:
            target.kill()
    except OSError:
        pass
    sweep.killed.set()
    sweep.done.wait(wait)
    if not isinstance(target, int):
        try:
            target.wait(timeout=0.1)  # reap it now if it is gone; never hold the caller up for it
        except subprocess.TimeoutExpired:
            pass


LIST_BUDGET = 0.5  # seconds kill_tree waits for the list of descendants before it signals the group anyway


class _Sweep:
    """Lists ``pid``'s descendants, then (once the group has been signalled) kills them and waits them out."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.listed = threading.Event()
        self.killed = threading.Event()
        self.done = threading.Event()
        threading.Thread(target=self._run, daemon=True, name=f"sweep-{pid}").start()

    def _run(self) -> None:
        import psutil

        try:
            try:
                victims = [psutil.Process(self.pid)]
                victims.extend(victims[0].children(recursive=True))
            except psutil.Error:
                victims = []
            self.listed.set()
            self.killed.wait()
            for victim in victims[1:]:
                try:
                    victim.kill()
                except psutil.Error:
                    pass
            wait_gone(victims, timeout=WAIT_GONE_SECONDS)
        finally:
            self.listed.set()
            self.done.set()


WAIT_GONE_SECONDS = 5.0


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


@contextlib.contextmanager
def scratch_dir() -> Iterator[Path]:
    """A private work directory outside ``out_dir`` (engines leave media and temp files in it)."""
    with tempfile.TemporaryDirectory(prefix="filekiln-doc-") as tmp:
        yield Path(tmp)

