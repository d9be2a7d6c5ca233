"""LibreOffice instances kept warm: a pool per process, and a slot per worker that outlives one job."""

from __future__ import annotations

import atexit
import json
import os
import queue
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from converters.base import Cancelled, ConversionError, ResidentEngine, ToolEnv
from converters.engines.office.locate import (
    DEFAULT_MAX_CONVERSIONS,
    START_SECONDS,
    bridge_command,
    find_soffice,
    font_env,
    listen_command,
    profile_base,
    release_pipes,
    seed_profile,
)
from converters.engines.procs import POLL_SECONDS, kill_tree, popen_kwargs


class OfficeInstance:
    """One warm soffice plus its bridge. Not thread-safe by itself: the pool hands it to one caller at a time."""

    def __init__(self, soffice: str, python: str, profile: Path, max_conversions: int, env: dict[str, str],
                 state_file: Path | None = None) -> None:
        self.state_file = state_file  # set in slot mode: soffice outlives this process
        self._adopted: int | None = None  # pid of a slot's soffice started by an earlier job
        self.soffice = soffice
        self.python = python
        self.profile = profile
        self.max_conversions = max_conversions
        self.tmp_dir = temp_dir_of(profile)  # its temporary files, in the data dir beside its profile
        self.env = {**env, "TMPDIR": str(self.tmp_dir), "TMP": str(self.tmp_dir), "TEMP": str(self.tmp_dir)}
        self._pipe: str | None = None
        self.conversions = 0
        self.starts = 0
        self._office: subprocess.Popen[bytes] | None = None
        self._bridge: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._next_id = 0

    @property
    def running(self) -> bool:
        office_alive = (self._office is not None and self._office.poll() is None) or (
            self._adopted is not None and _alive(self._adopted))
        return office_alive and self._bridge is not None and self._bridge.poll() is None

    def _adopt(self) -> str | None:
        """The pipe of this slot's soffice when one is still running."""
        if self.state_file is None or not self.state_file.is_file():
            return None
        try:
            state = json.loads(self.state_file.read_text())
            pid, pipe = int(state["pid"]), str(state["pipe"])
        except (OSError, ValueError, KeyError):
            return None
        if not _is_our_office(pid, pipe):
            self.state_file.unlink(missing_ok=True)
            return None
        self._adopted = pid
        return pipe

    def start(self) -> None:
        self.stop(keep_office=True)
        pipe = self._adopt()
        if pipe is None:
            self.stop()
            seed_profile(self.profile)
            self.tmp_dir.mkdir(parents=True, exist_ok=True)
            pipe = f"filekiln-{os.getpid()}-{uuid.uuid4().hex[:12]}"
            self._office = subprocess.Popen(
                listen_command(self.soffice, self.profile, pipe),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=self.env, **popen_kwargs(die_with_parent=False),  # type: ignore[call-overload]
            )
            if self.state_file is not None:
                write_state(self.state_file, self._office.pid, pipe)
        self._pipe = pipe
        log = open(self.profile / "bridge.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            self._bridge = subprocess.Popen(
                bridge_command(self.python, pipe),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, encoding="utf-8",
                bufsize=1, **popen_kwargs(die_with_parent=False),  # type: ignore[call-overload]
            )
        finally:
            log.close()
        self._lines = queue.Queue()
        threading.Thread(target=self._pump, args=(self._bridge, self._lines), daemon=True).start()
        self.starts += 1
        self.conversions = 0
        deadline = time.monotonic() + START_SECONDS
        while True:
            line = self._next_line(deadline, lambda: False)
            if line is None:
                self.stop()
                raise ConversionError("engine_failed", "LibreOffice did not start (see bridge.log in its profile)")
            if json.loads(line).get("ready"):
                return

    @staticmethod
    def _pump(bridge: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert bridge.stdout is not None
        for line in bridge.stdout:
            lines.put(line)
        lines.put(None)

    def _next_line(self, deadline: float, cancelled: Callable[[], bool]) -> str | None:
        """The bridge's next line; ``None`` when it died; raises on cancel or timeout."""
        while True:
            if cancelled():
                raise Cancelled()
            if time.monotonic() > deadline:
                raise TimeoutError
            try:
                return self._lines.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue

    def stop(self, keep_office: bool = False) -> None:
        """Stop the bridge and, unless ``keep_office`` (a slot's instance at a job's clean end), soffice."""
        procs = [self._bridge] if keep_office else [self._bridge, self._office]
        for proc in procs:
            if proc is not None and proc.poll() is None:
                kill_tree(proc)
        if self._bridge is not None and self._bridge.stdin is not None:
            try:
                self._bridge.stdin.close()
            except OSError:
                pass
        self._bridge = None
        if not keep_office:
            if self._adopted is not None:
                kill_tree(self._adopted)
            if self.state_file is not None:
                self.state_file.unlink(missing_ok=True)
            self._office = None
            self._adopted = None
            shutil.rmtree(self.tmp_dir, ignore_errors=True)
            release_pipes(self._pipe)
            self._pipe = None

    def convert(
        self,
        request: dict[str, Any],
        timeout: float,
        progress: Callable[[float], None],
        cancelled: Callable[[], bool],
    ) -> int:
        """Run one conversion; return the page count LibreOffice reported (0 when unknown)."""
        if not self.running:
            self.start()
        assert self._bridge is not None and self._bridge.stdin is not None
        self._next_id += 1
        request = {**request, "id": self._next_id}
        try:
            self._bridge.stdin.write(json.dumps(request) + "\n")
            self._bridge.stdin.flush()
        except OSError as exc:
            self.stop()
            raise ConversionError("engine_failed", f"LibreOffice stopped answering: {exc}") from exc
        deadline = time.monotonic() + timeout
        try:
            while True:
                line = self._next_line(deadline, cancelled)
                if line is None:
                    self.stop()
                    raise ConversionError("engine_failed", "LibreOffice crashed while converting the document")
                message = json.loads(line)
                if message.get("id") != self._next_id:
                    continue
                if "ok" in message:
                    break
                if "pages" in message:
                    progress(0.2)  # loaded and paginated; the export follows
                elif "progress" in message:
                    progress(0.2 + 0.8 * float(message["progress"]))
        except TimeoutError:
            self.stop()  # a hung conversion: kill it, the next caller gets a fresh instance
            raise ConversionError("timeout", f"LibreOffice did not finish within {timeout:.0f} s") from None
        except Cancelled:
            self.stop()
            raise
        self.conversions += 1
        if self.conversions >= self.max_conversions:
            self.stop()
        if not message["ok"]:
            self.stop()  # after a failure, start clean
            raise ConversionError(str(message.get("code", "engine_failed")), str(message.get("message", "")))
        return int(message.get("pages", 0))


class OfficePool:
    """A few warm instances; each conversion borrows one exclusively."""

    def __init__(self, instances: list[OfficeInstance]) -> None:
        self.instances = instances
        self._free = list(instances)
        self._cond = threading.Condition()

    def borrow(self, cancelled: Callable[[], bool]) -> OfficeInstance:
        with self._cond:
            while not self._free:
                if cancelled():
                    raise Cancelled()
                self._cond.wait(POLL_SECONDS)
            return self._free.pop()

    def give_back(self, instance: OfficeInstance) -> None:
        with self._cond:
            self._free.append(instance)
            self._cond.notify()

    def close(self) -> None:
        for instance in self.instances:
            if instance.state_file is not None and instance.running:
                instance.stop(keep_office=True)  # the slot's soffice waits for the next job
                continue
            instance.stop()
            shutil.rmtree(instance.profile, ignore_errors=True)


_POOLS: dict[tuple[str, str, str], OfficePool] = {}
_POOLS_LOCK = threading.Lock()


def _sweep_stale_profiles(base: Path) -> None:
    """Remove profiles left by worker processes that died without cleaning up."""
    import psutil

    if not base.is_dir():
        return
    for entry in base.glob("profile-*-*"):
        try:
            pid = int(entry.name.split("-")[1])
        except ValueError:
            continue
        if pid != os.getpid() and not psutil.pid_exists(pid):
            shutil.rmtree(entry, ignore_errors=True)


def get_pool(env: ToolEnv, soffice: str, python: str, font_dirs: Sequence[Path]) -> OfficePool:
    """This process's pool for ``soffice`` (created on first need, closed at exit)."""
    base = profile_base(env)
    slot = env.slots.get(OFFICE.name)
    key = (soffice, python, str(slot or base))
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None and slot:
            limit = max(1, int(env.settings.get("office_max_conversions", DEFAULT_MAX_CONVERSIONS)))
            slot_dir = Path(str(slot))
            slot_dir.mkdir(parents=True, exist_ok=True)
            pool = _POOLS[key] = OfficePool([OfficeInstance(
                soffice, python, slot_dir / "profile", limit, font_env(font_dirs), state_file=slot_dir / "state.json")])
        if pool is None:
            _sweep_stale_profiles(base)
            size = max(1, int(env.settings.get("office_instances", 1)))
            limit = max(1, int(env.settings.get("office_max_conversions", DEFAULT_MAX_CONVERSIONS)))
            proc_env = font_env(font_dirs)
            instances = [
                OfficeInstance(soffice, python, base / f"profile-{os.getpid()}-{i}", limit, proc_env)
                for i in range(size)
            ]
            pool = _POOLS[key] = OfficePool(instances)
        return pool


def write_state(path: Path, pid: int, pipe: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"pid": pid, "pipe": pipe}))
    os.replace(tmp, path)


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _is_our_office(pid: int, pipe: str) -> bool:
    """``pid`` is still the soffice that listens on ``pipe`` (pids are reused)."""
    import psutil

    try:
        return _alive(pid) and any(pipe in part for part in psutil.Process(pid).cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def stop_slot(slot_dir: Path) -> bool:
    """End the soffice a worker slot keeps between jobs; True if one was running."""
    state = slot_dir / "state.json"
    try:
        data = json.loads(state.read_text())
        pid, pipe = int(data["pid"]), str(data["pipe"])
    except (OSError, ValueError, KeyError):
        return False
    running = _is_our_office(pid, pipe)
    if running:
        kill_tree(pid, wait=5)  # not our child: its parent (maybe a pooled job child) may never reap it
    state.unlink(missing_ok=True)
    shutil.rmtree(temp_dir_of(slot_dir / "profile"), ignore_errors=True)
    release_pipes(pipe)
    return running


def temp_dir_of(profile: Path) -> Path:
    return profile.with_name(f"{profile.name}.tmp")


@atexit.register
def close_pools() -> None:
    """Stop every instance this process started and delete their profiles."""
    with _POOLS_LOCK:
        for pool in _POOLS.values():
            pool.close()
        _POOLS.clear()


# a worker keeps one soffice per slot between document jobs; found where LibreOffice is installed or configured
OFFICE = ResidentEngine("office", stop_slot, lambda env: find_soffice(env.settings) is not None)
