"""Stop signals reach the commands that wait for them, whichever thread the kernel hands them to.

The kernel may deliver a signal sent to a process to any of its threads; CPython then runs the
Python handler in the main thread only when that thread next runs Python code. These tests aim
the signal at a thread other than the main one, which is what made ``filekiln worker`` ignore a
SIGTERM now and then.
"""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT, process_env

TGKILL = {"x86_64": 234, "aarch64": 131}  # the syscall that sends a signal to one thread of a process


def signal_thread(pid: int, tid: int, signum: int) -> None:
    number = TGKILL.get(platform.machine())
    if number is None:
        pytest.skip(f"no tgkill syscall number known for {platform.machine()}")
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.syscall(number, pid, tid, signum) == 0, os.strerror(ctypes.get_errno())


def run_python(code: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_a_signal_taken_by_another_thread_wakes_the_wait() -> None:
    done = run_python("""
        import signal, threading, time
        from filekiln.signals import caught

        def aim_at_me():
            time.sleep(0.3)
            signal.pthread_kill(threading.get_ident(), signal.SIGTERM)  # this thread takes it, not main
            time.sleep(30)  # still alive: the process ends only if the main thread saw the signal

        with caught() as stop:
            threading.Thread(target=aim_at_me, daemon=True).start()
            woke = stop.wait()  # no timeout: only the signal ends it
            print(woke, stop.signum)
    """)
    assert done.returncode == 0, done.stderr
    woke, signum = done.stdout.split()
    assert (woke, int(signum)) == ("True", signal.SIGTERM)


def test_a_timed_wait_ends_without_a_signal_and_the_old_handlers_come_back() -> None:
    done = run_python("""
        import signal, time
        from filekiln.signals import caught

        before = signal.getsignal(signal.SIGINT)  # default_int_handler; SIG_IGN when started in the background
        with caught(signal.SIGINT) as stop:
            started = time.monotonic()
            print(stop.wait(0.3), stop.is_set(), time.monotonic() - started >= 0.3)
        print(signal.getsignal(signal.SIGINT) is before, signal.set_wakeup_fd(-1))
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "True", "True", "-1"]


def test_a_worker_stops_when_the_signal_lands_in_any_of_its_threads(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "filekiln", "worker", "--data-dir", str(data)], cwd=ROOT,
                            env=process_env(data), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        assert "FileKiln worker running" in proc.stdout.readline()
        threads = sorted(int(t) for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid)
        assert threads, "the worker runs its job threads beside the main one"
        signal_thread(proc.pid, threads[-1], signal.SIGTERM)
        assert proc.wait(timeout=60) == 0  # before the fix it never exited
        assert "FileKiln worker stopped." in proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
