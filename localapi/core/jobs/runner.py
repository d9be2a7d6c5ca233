"""Supervise one conversion in a child process: progress, cancel, timeout, kill."""

from __future__ import annotations

import logging
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from converters.engines.procs import kill_tree
from localapi.core.jobs.messages import Done, Failed, JobSpec, Progress, Ready, Reply, decode_reply
from localapi.core.states import JobStatus

log = logging.getLogger("filekiln.runner")

CANCEL_CHECK_INTERVAL = 0.2


def child_command() -> list[str]:
    """How to start a conversion child, from a source tree or a frozen build: the app's own entry, which
    lowers the child's priority before it imports anything heavy (localapi/core/jobs/priority.py)."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "_child"]
    return [sys.executable, "-m", "filekiln", "_child"]


@dataclass
class Outcome:
    """How a conversion ended, as the worker records it: DONE, FAILED or CANCELED."""

    status: JobStatus
    error_code: str | None = None
    message: str | None = None
    notes: list[str] = field(default_factory=list)


MAX_JOBS_PER_CHILD = 1000  # each child retires after a random count between half this and this
# a child started beyond the workers' own: when one retires, the next job takes a warm one, not one
# still importing (some 0.5-3 s, which a run of small jobs would otherwise pay at every retirement)
SPARE_CHILDREN = 1
CLOSE_WAIT_SECONDS = 1.0  # after SIGKILL, how long a job's end waits for the process to be gone
# how long a child may take to start (import Python and the engines) before its job fails; a tool's
# timeout counts from the child's Ready, so a slow start on a busy machine does not eat into it
START_SECONDS = 120.0
MAX_CHILD_RSS = 1024**3  # a child that grew past this is not given another job


class Child:
    """A conversion process and the reader of its reports. It may serve several jobs in a row."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(child_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                         start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.messages: queue.Queue[Reply | None] = queue.Queue()  # None: the child's stdout closed
        self.jobs = 0
        self.ready = False  # it has said Ready (read by the supervisor of its first job)
        self._ps: psutil.Process | None = None
        # retirements spread out, so that two children rarely need replacing within one start-up time
        self.max_jobs = random.randint(MAX_JOBS_PER_CHILD // 2, MAX_JOBS_PER_CHILD)
        threading.Thread(target=self._read, daemon=True, name=f"child-{self.proc.pid}").start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            reply = decode_reply(line)
            if reply is not None:  # anything else is stray output from an engine
                self.messages.put(reply)
        self.messages.put(None)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, spec: JobSpec) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(spec.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it died: the reader reports the end
        self.jobs += 1

    def reusable(self) -> bool:
        if not self.alive() or self.jobs >= self.max_jobs:
            return False
        try:
            if self._ps is None:  # kept: a new psutil.Process reads the process's stat file first
                self._ps = psutil.Process(self.pid)
            return bool(self._ps.memory_info().rss < MAX_CHILD_RSS)
        except psutil.NoSuchProcess:
            return False

    def stderr_tail(self, size: int = 2000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - size))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self) -> None:
        kill_tree(self.pid)
        try:
            self.proc.wait(timeout=CLOSE_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            # Killed, but the kernel has not finished tearing it down (a stalled disk, a starved CPU):
            # the job's end is not held up for that; a thread reaps it when it is gone.
            threading.Thread(target=self._release, daemon=True, name=f"reap-{self.pid}").start()
            return
        self._release()

    def _release(self) -> None:
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self.log_path.unlink(missing_ok=True)


class ChildPool:
    """Conversion processes started ahead of time and kept between small jobs.

    A child spends most of its start-up importing Python and the engines; starting
    it before the job arrives, and letting a healthy child take the next job
    (up to ``MAX_JOBS_PER_CHILD``, while under ``MAX_CHILD_RSS``), takes that off
    every job's latency. A child whose job was canceled, timed out or hit an
    unexpected engine error is never reused.
    """

    def __init__(self, size: int, log_dir: Path, *, ahead: bool = True) -> None:
        # children started before any job asks: one per worker and SPARE_CHILDREN more; with ``ahead``
        # false none is, and the pool keeps only the children jobs started and gave back
        self.keep = size + SPARE_CHILDREN if ahead else 0
        self.log_dir = log_dir
        self._idle: list[Child] = []
        self._busy = 0  # children lent out to jobs
        self._lock = threading.Lock()
        self._closed = False
        log_dir.mkdir(parents=True, exist_ok=True)
        # Children die with the *thread* that started them (PR_SET_PDEATHSIG is per thread on Linux),
        # so every pooled child is started by this one thread, which lives as long as the pool.
        self._wanted = threading.Event()
        self._spawner = threading.Thread(target=self._spawn_loop, daemon=True, name="child-pool")
        self._spawner.start()

    def new_child(self) -> Child:
        return Child(self.log_dir / f"child-{time.monotonic_ns()}.log")

    def _spawn_loop(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            with self._lock:
                if self._closed:
                    return
                while self._short():
                    self._idle.append(self.new_child())

    def _short(self) -> bool:
        """Whether the pool holds fewer children than it keeps (the caller holds the lock)."""
        return len(self._idle) + self._busy < self.keep

    def take(self) -> Child | None:
        """A started child, or None when none is ready (the caller then starts its own)."""
        taken = None
        with self._lock:
            while self._idle:
                child = self._idle.pop(0)  # the oldest: the most likely to have finished warming up
                if child.alive():
                    taken = child
                    break
                child.close()
            self._busy += 1  # a child the caller starts itself counts too
            short = self._short()
        if short:  # a child was missing or dead; else an idle one became a busy one, and none is to start
            self.fill()
        return taken

    def take_warm(self) -> Child | None:
        """A child that has said Ready, or None: for a worker about to claim a job, which the claim then
        records as the child's (see :meth:`put_back` for a claim that found no job)."""
        with self._lock:
            for n, child in enumerate(self._idle):
                if child.ready and child.alive():
                    del self._idle[n]
                    self._busy += 1
                    return child
        return None

    def put_back(self, child: Child) -> None:
        """Return a child from :meth:`take_warm` that was given no job."""
        with self._lock:
            self._busy = max(self._busy - 1, 0)
            if not self._closed:
                self._idle.insert(0, child)
                return
        child.close()

    def give_back(self, child: Child | None) -> None:
        """Return a lent child after its job (None: it was closed); a healthy one serves again."""
        with self._lock:
            self._busy = max(self._busy - 1, 0)
            if child is not None and not self._closed and child.reusable():
                self._idle.append(child)
                return
        if child is not None:
            child.close()
        self.fill()

    def fill(self) -> None:
        """Ask the spawner thread to top the pool up."""
        self._wanted.set()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        self._wanted.set()
        for child in idle:
            child.close()


def run_supervised(
    spec: JobSpec,
    *,
    log_path: Path,
    timeout: float,
    on_progress: Callable[[float], None],
    should_cancel: Callable[[], bool],
    on_tick: Callable[[], None] = lambda: None,
    pool: ChildPool | None = None,
    on_start: Callable[[int], None] = lambda pid: None,
    child: Child | None = None,
) -> Outcome:
    """Run ``spec`` in a child process and wait for its answer, reporting progress as it comes.

    ``child``: one the caller took from ``pool`` already (:meth:`ChildPool.take_warm`), and recorded;
    else one is taken from the pool, or without a pool started here (from the calling thread, which
    outlives the job, its stderr going to ``log_path``), and ``on_start`` is told its pid.
    """
    assigned = child is not None
    if child is None:
        child = pool.take() if pool is not None else None
    if child is None:
        child = Child(log_path) if pool is None else pool.new_child()
    child.send(spec)  # the child starts at once; the supervisor records it meanwhile
    if not assigned:
        on_start(child.pid)
    outcome, reuse = _supervise(child, timeout, on_progress, should_cancel, on_tick)
    if outcome.status == JobStatus.FAILED and outcome.error_code in ("engine_error", "engine_crashed"):
        log.warning("conversion child %d failed (%s); its last output:\n%s", child.pid, outcome.message,
                    child.stderr_tail())
    if pool is None:
        _finish(child)
    elif reuse:
        pool.give_back(child)
    else:
        child.close()
        pool.give_back(None)
    return outcome


def _finish(child: Child) -> None:
    """A child started for one job: tell it there is no more work and let it exit."""
    if child.proc.stdin is not None:
        try:
            child.proc.stdin.close()
        except OSError:
            pass
    try:
        child.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        kill_tree(child.pid)
        child.proc.wait()
    if child.proc.stdout is not None:
        child.proc.stdout.close()


def _supervise(child: Child, timeout: float, on_progress: Callable[[float], None],
               should_cancel: Callable[[], bool], on_tick: Callable[[], None]) -> tuple[Outcome, bool]:
    """Wait for the child's answer to one job: (outcome, whether the child may take another job).

    The job's ``timeout`` runs from the moment the child is ready; a child still starting has
    ``START_SECONDS`` to get there."""
    sent = time.monotonic()
    deadline = sent + timeout if child.ready else sent + START_SECONDS
    # the first look comes a check interval in: the claim and the start just wrote the heartbeat, and
    # most small jobs are over by then (a cancel meanwhile is seen then, or stops the result being kept)
    next_check = sent + CANCEL_CHECK_INTERVAL
    try:
        while True:
            try:
                message = child.messages.get(timeout=CANCEL_CHECK_INTERVAL / 2)
            except queue.Empty:
                message = Progress(-1.0)  # nothing new: a tick
            match message:
                case None:
                    return _died(child), False
                case Ready():
                    child.ready = True
                    deadline = time.monotonic() + timeout
                case Progress(fraction) if fraction >= 0:
                    on_progress(fraction)
                case Done(notes):
                    return Outcome(JobStatus.DONE, notes=notes), True
                case Failed("canceled", _):
                    return Outcome(JobStatus.CANCELED), False
                case Failed(code, text):
                    return Outcome(JobStatus.FAILED, code, text), code not in ("engine_error", "out_of_memory")
            now = time.monotonic()
            if now > deadline:
                kill_tree(child.pid)
                text = (f"The conversion did not finish within {timeout:.0f} seconds." if child.ready else
                        f"The conversion process did not start within {START_SECONDS:.0f} seconds.")
                return Outcome(JobStatus.FAILED, "timeout", text), False
            if now >= next_check:
                next_check = now + CANCEL_CHECK_INTERVAL
                on_tick()
                if should_cancel():
                    kill_tree(child.pid)
                    return Outcome(JobStatus.CANCELED), False
    except BaseException:
        kill_tree(child.pid)
        raise


def _died(child: Child) -> Outcome:
    try:
        code = child.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        kill_tree(child.pid)
        code = child.proc.wait()
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else "?"
        return Outcome(JobStatus.FAILED, "engine_crashed", f"The conversion process was killed by signal {name}.")
    return Outcome(JobStatus.FAILED, "engine_crashed", f"The conversion process exited unexpectedly (code {code}).")
