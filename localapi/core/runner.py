"""Supervise one conversion in a child process: progress, cancel, timeout, kill."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

CANCEL_CHECK_INTERVAL = 0.2


def child_command() -> list[str]:
    """How to start a conversion child, from a source tree or a frozen build."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "_child"]
    return [sys.executable, "-m", "localapi.core.child"]


@dataclass
class Outcome:
    status: str  # done | failed | canceled
    error_code: str | None = None
    message: str | None = None
    notes: list[str] = field(default_factory=list)


class ChildPool:
    """Children started ahead of time, each used for exactly one job.

    A child spends most of its start-up importing Python and the engines; starting
    it before the job arrives takes that off every job's latency, while each job
    still gets a fresh process (a crash or leak never outlives its job).
    """

    def __init__(self, size: int, log_dir: Path) -> None:
        self.size = size
        self.log_dir = log_dir
        self._idle: list[tuple[subprocess.Popen[bytes], Path]] = []
        self._lock = threading.Lock()
        self._closed = False
        log_dir.mkdir(parents=True, exist_ok=True)
        # Children die with the *thread* that started them (PR_SET_PDEATHSIG is per thread on Linux),
        # so every pooled child is started by this one thread, which lives as long as the pool.
        self._wanted = threading.Event()
        self._spawner = threading.Thread(target=self._spawn_loop, daemon=True, name="child-pool")
        self._spawner.start()

    def _spawn_loop(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            with self._lock:
                if self._closed:
                    return
                while len(self._idle) < self.size:
                    self._idle.append(self._spawn())

    def _spawn(self) -> tuple[subprocess.Popen[bytes], Path]:
        log_path = self.log_dir / f"child-{time.monotonic_ns()}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(child_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                    start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        return proc, log_path

    def take(self) -> tuple[subprocess.Popen[bytes], Path] | None:
        """A started child, or None when none is ready (the caller then starts its own)."""
        taken = None
        with self._lock:
            while self._idle:
                proc, log_path = self._idle.pop()
                if proc.poll() is None:
                    taken = proc, log_path
                    break
                log_path.unlink(missing_ok=True)
        self.fill()
        return taken

    def fill(self) -> None:
        """Ask the spawner thread to top the pool up."""
        self._wanted.set()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        self._wanted.set()
        for proc, log_path in idle:
            kill_tree(proc.pid)
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
            log_path.unlink(missing_ok=True)


def kill_tree(pid: int) -> None:
    """Kill a process and everything it started, now."""
    try:
        parent = psutil.Process(pid)
        victims = [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        victims = []
    if hasattr(os, "killpg"):
        try:
            os.killpg(pid, signal.SIGKILL)  # the child leads its own session
        except (ProcessLookupError, PermissionError):
            pass
    for proc in victims:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(victims, timeout=2)


def run_supervised(
    spec: dict[str, Any],
    *,
    log_path: Path,
    timeout: float,
    on_progress: Callable[[float], None],
    should_cancel: Callable[[], bool],
    on_tick: Callable[[], None] = lambda: None,
    pool: ChildPool | None = None,
    on_start: Callable[[int], None] = lambda pid: None,
) -> Outcome:
    """Run ``spec`` in a child process and wait for it, reporting progress as it comes.

    The child's stderr ends up in ``log_path``.
    """
    messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
    taken = pool.take() if pool is not None else None
    if taken is not None:
        proc, child_log = taken
    else:  # started from the calling (worker) thread, which outlives the job
        child_log = log_path
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                child_command(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
    assert proc.stdin is not None and proc.stdout is not None
    stdout = proc.stdout
    on_start(proc.pid)

    def read() -> None:
        for line in stdout:
            try:
                messages.put(json.loads(line))
            except ValueError:
                continue  # stray output from an engine
        messages.put(None)

    reader = threading.Thread(target=read, daemon=True, name=f"child-{proc.pid}")
    reader.start()
    try:
        proc.stdin.write(json.dumps(spec).encode("utf-8"))
        proc.stdin.close()
    except BrokenPipeError:
        pass

    deadline = time.monotonic() + timeout
    final: dict[str, Any] | None = None
    next_check = 0.0
    try:
        while True:
            try:
                message = messages.get(timeout=CANCEL_CHECK_INTERVAL / 2)
            except queue.Empty:
                message = {}
            if message is None:
                break
            if "progress" in message:
                on_progress(float(message["progress"]))
            elif "done" in message or "error" in message:
                final = message
            now = time.monotonic()
            if now >= next_check:
                next_check = now + CANCEL_CHECK_INTERVAL
                on_tick()
                if should_cancel():
                    kill_tree(proc.pid)
                    return Outcome("canceled")
            if now > deadline:
                kill_tree(proc.pid)
                return Outcome("failed", "timeout", f"The conversion did not finish within {timeout:.0f} seconds.")
        proc.wait(timeout=10)
    except BaseException:
        kill_tree(proc.pid)
        raise
    finally:
        reader.join(timeout=2)
        stdout.close()
        if child_log != log_path:
            try:
                os.replace(child_log, log_path)
            except OSError:
                child_log.unlink(missing_ok=True)

    if final is not None and final.get("done"):
        return Outcome("done", notes=[str(n) for n in final.get("notes") or []])
    if final is not None:
        code = str(final.get("error"))
        if code == "canceled":
            return Outcome("canceled")
        return Outcome("failed", code, str(final.get("message")))
    if proc.returncode is not None and proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name if -proc.returncode in signal.valid_signals() else "?"
        return Outcome("failed", "engine_crashed", f"The conversion process was killed by signal {name}.")
    return Outcome("failed", "engine_crashed", f"The conversion process exited unexpectedly (code {proc.returncode}).")
