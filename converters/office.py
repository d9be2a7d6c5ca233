"""LibreOffice, done right: warm headless instances, one conversion at a time each, hardened profiles.

A worker process keeps a small pool (``office_instances``, default 1) of long-lived ``soffice --headless``
instances, started on first need. Each has its own profile directory under the data dir (never the user's
own LibreOffice profile), seeded with settings that never run macros and never load linked content. A
conversion holds its instance exclusively; the instance is restarted after ``office_max_conversions``
conversions, after a failure, and after a conversion that hit its timeout (it is killed, process group and
all). FileKiln talks to the instance through :mod:`converters.office_bridge`, run by a Python that has the
``uno`` module (LibreOffice's bundled one, or Debian's ``python3-uno``).

Where no such Python exists, each conversion runs a fresh ``soffice --headless --convert-to`` with a
throw-away hardened profile instead: slower (a cold start per file) but equally isolated.

Settings read (all optional): ``libreoffice_path``, ``office_python``, ``office_profile_dir``,
``office_instances``, ``office_max_conversions``, ``office_timeout_seconds``, ``office_mode``
(``warm`` | ``cold``), ``office_slot_dir``.

Job processes are short-lived, so the job engine gives each of its workers a *slot*
(``office_slot_dir``): the soffice started there outlives the job that started it and is adopted
by the next job of that worker (its pid and pipe are in ``state.json``). Only the bridge is per
job. The engine ends a slot's soffice with :func:`stop_slot` when a job did not finish cleanly,
and all of them when the workers stop.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from converters.base import Cancelled, ConversionError, ToolEnv
from converters.procs import POLL_SECONDS, kill_tree, popen_kwargs, run_command, wait_gone

BRIDGE = Path(__file__).with_name("office_bridge.py")
START_SECONDS = 90.0
DEFAULT_TIMEOUT = 300.0
DEFAULT_MAX_CONVERSIONS = 100

INSTALL_HINT = (
    "Install LibreOffice (Debian/Ubuntu: apt install libreoffice-writer-nogui libreoffice-calc-nogui "
    "libreoffice-impress-nogui python3-uno; Windows/macOS: libreoffice.org) or set libreoffice_path in settings."
)

_CANDIDATES = (
    "/usr/bin/soffice",
    "/usr/lib/libreoffice/program/soffice",
    "/opt/libreoffice/program/soffice",
    "/Applications/LibreOffice.app/Contents/MacOS/soffice",
    r"C:\Program Files\LibreOffice\program\soffice.exe",
)

# Registry settings for every profile FileKiln makes. Macro security "very high" with macros disabled
# outright; links (OLE, DDE, linked graphics, fields) never updated in Writer and Calc; every document is
# an untrusted referer, which makes LibreOffice refuse to resolve its external references at all.
_REGISTRY: tuple[tuple[str, str, str, str], ...] = (
    ("/org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel", "int", "3"),
    ("/org.openoffice.Office.Common/Security/Scripting", "DisableMacrosExecution", "boolean", "true"),
    ("/org.openoffice.Office.Common/Security/Scripting", "BlockUntrustedRefererLinks", "boolean", "true"),
    ("/org.openoffice.Office.Common/Security/Scripting", "RemovePersonalInfoOnSaving", "boolean", "true"),
    ("/org.openoffice.Office.Writer/Content/Update", "Link", "int", "2"),
    ("/org.openoffice.Office.Writer/Content/Update", "Field", "boolean", "false"),
    ("/org.openoffice.Office.Calc/Content/Update", "Link", "int", "2"),
    ("/org.openoffice.Office.Common/Misc", "FirstRun", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "UseLocking", "boolean", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "AutoSave", "boolean", "false"),
    ("/org.openoffice.Office.Recovery/AutoSave", "Enabled", "boolean", "false"),
    ("/org.openoffice.Office.Recovery/RecoveryInfo", "Enabled", "boolean", "false"),
    ("/org.openoffice.Office.Common/Java", "Enable", "boolean", "false"),
)


def registry_xcu() -> str:
    """The ``registrymodifications.xcu`` that hardens a FileKiln-made profile."""
    items = "\n".join(
        f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>'
        for path, name, _kind, value in _REGISTRY
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
        'xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        f"{items}\n</oor:items>\n"
    )


def seed_profile(profile: Path) -> None:
    """Create (or re-harden) a profile directory: our registry settings win over whatever LibreOffice left."""
    user = profile / "user"
    user.mkdir(parents=True, exist_ok=True)
    (user / "registrymodifications.xcu").write_text(registry_xcu(), encoding="utf-8")


def soffice_flags(profile: Path) -> list[str]:
    """Flags every headless soffice gets: no UI, no restore, no first-run, our own profile."""
    return [
        "--headless",
        "--invisible",
        "--nocrashreport",
        "--nodefault",
        "--nologo",
        "--nofirststartwizard",
        "--norestore",
        "--nolockcheck",
        f"-env:UserInstallation={profile.resolve().as_uri()}",
    ]


def listen_command(soffice: str, profile: Path, pipe: str) -> list[str]:
    """Command line of a warm instance listening on a named pipe for the bridge."""
    return [soffice, *soffice_flags(profile), f"--accept=pipe,name={pipe};urp;StarOffice.ComponentContext"]


def bridge_command(python: str, pipe: str, connect_seconds: float = START_SECONDS) -> list[str]:
    """Command line of the UNO bridge process."""
    return [python, str(BRIDGE), pipe, str(int(connect_seconds))]


def cold_command(soffice: str, profile: Path, source: Path, out_dir: Path, convert_to: str) -> list[str]:
    """Command line of a one-shot conversion (the fallback when no UNO Python is available)."""
    return [soffice, *soffice_flags(profile), "--convert-to", convert_to, "--outdir", str(out_dir), str(source)]


def find_soffice(settings: Mapping[str, Any]) -> str | None:
    """The LibreOffice executable: the ``libreoffice_path`` setting, then PATH, then the usual install places."""
    configured = settings.get("libreoffice_path")
    if configured:
        path = Path(str(configured))
        if path.is_dir():
            for name in ("soffice", "soffice.exe", "program/soffice", "program/soffice.exe"):
                if (path / name).is_file():
                    return str(path / name)
            return None
        return str(path) if path.is_file() else shutil.which(str(configured))
    for name in ("soffice", "libreoffice"):
        found = shutil.which(name)
        if found:
            return found
    return next((c for c in _CANDIDATES if Path(c).is_file()), None)


def uno_python_candidates(soffice: str) -> list[str]:
    """Pythons that may have ``uno``: LibreOffice's bundled one first, then the system's."""
    program = Path(soffice).resolve().parent
    bundled = [program / "python", program / "python.exe", program.parent / "Resources" / "python"]
    found = [str(p) for p in bundled if p.is_file()]
    for name in ("/usr/bin/python3", "python3"):
        path = name if Path(name).is_file() else shutil.which(name)
        if path and path not in found:
            found.append(path)
    return found


@cache
def _has_uno(python: str) -> bool:
    try:
        done = subprocess.run([python, "-c", "import uno"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def find_uno_python(settings: Mapping[str, Any], soffice: str) -> str | None:
    """The Python that runs the bridge, or ``None`` (then conversions run cold)."""
    configured = settings.get("office_python")
    candidates = [str(configured)] if configured else uno_python_candidates(soffice)
    return next((py for py in candidates if _has_uno(py)), None)


def profile_base(env: ToolEnv) -> Path:
    """Where profiles live: ``office_profile_dir``, else ``office/`` in the data dir, else the temp dir."""
    configured = env.settings.get("office_profile_dir")
    if configured:
        return Path(str(configured))
    if env.models_dir is not None:
        return env.models_dir.parent / "office"
    return Path(tempfile.gettempdir()) / "filekiln-office"


def font_env(font_dirs: Sequence[Path]) -> dict[str, str]:
    """The environment of soffice: headless rendering, plus FileKiln's bundled fonts on its font path."""
    env = dict(os.environ)
    env["SAL_USE_VCLPLUGIN"] = "svp"
    if font_dirs:
        extra = os.pathsep.join(str(d) for d in font_dirs)
        env["SAL_FONTPATH"] = f"{extra}{os.pathsep}{env['SAL_FONTPATH']}" if env.get("SAL_FONTPATH") else extra
    return env


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
        self.env = env
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
            pipe = f"filekiln-{os.getpid()}-{uuid.uuid4().hex[:12]}"
            self._office = subprocess.Popen(
                listen_command(self.soffice, self.profile, pipe),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=self.env, **popen_kwargs(),  # type: ignore[call-overload]
            )
            if self.state_file is not None:
                write_state(self.state_file, self._office.pid, pipe)
        log = open(self.profile / "bridge.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            self._bridge = subprocess.Popen(
                bridge_command(self.python, pipe),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, encoding="utf-8",
                bufsize=1, **popen_kwargs(),  # type: ignore[call-overload]
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
                _kill_pid(self._adopted)
            if self.state_file is not None:
                self.state_file.unlink(missing_ok=True)
            self._office = None
            self._adopted = None

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
    slot = env.settings.get("office_slot_dir")
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


def _kill_pid(pid: int) -> None:
    import psutil

    try:
        proc = psutil.Process(pid)
        victims = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for victim in victims:
        try:
            victim.kill()
        except psutil.NoSuchProcess:
            pass
    wait_gone(victims, timeout=5)  # not our child: its parent (maybe a pooled job child) may never reap it


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
        _kill_pid(pid)
    state.unlink(missing_ok=True)
    return running


@atexit.register
def close_pools() -> None:
    """Stop every instance this process started and delete their profiles."""
    with _POOLS_LOCK:
        for pool in _POOLS.values():
            pool.close()
        _POOLS.clear()


# Export filters by (family, target format); the family comes from the input format.
FAMILY = {
    "doc": "writer", "docx": "writer", "odt": "writer", "rtf": "writer", "txt": "writer", "html": "writer",
    "xls": "calc", "xlsx": "calc", "ods": "calc", "csv": "calc",
    "ppt": "impress", "pptx": "impress", "odp": "impress",
}
FILTERS = {
    ("writer", "pdf"): "writer_pdf_Export",
    ("calc", "pdf"): "calc_pdf_Export",
    ("impress", "pdf"): "impress_pdf_Export",
    ("writer", "docx"): "MS Word 2007 XML",
    ("writer", "odt"): "writer8",
    ("writer", "rtf"): "Rich Text Format",
    ("writer", "txt"): "Text (encoded)",
    ("writer", "html"): "HTML (StarWriter)",
    ("calc", "csv"): "Text - txt - csv (StarCalc)",
    ("calc", "xlsx"): "Calc MS Excel 2007 XML",
    ("calc", "ods"): "calc8",
    ("impress", "pptx"): "Impress MS PowerPoint 2007 XML",
    ("impress", "odp"): "impress8",
}
# CSV is read as UTF-8, comma-separated, double-quoted; written the same way.
CSV_OPTIONS = "44,34,76,1"
STORE_OPTIONS = {("writer", "txt"): "UTF8", ("calc", "csv"): CSV_OPTIONS}
LOAD_FILTERS = {"csv": ("Text - txt - csv (StarCalc)", CSV_OPTIONS)}


def office_convert(
    env: ToolEnv,
    source: Path,
    source_format: str,
    target: Path,
    target_format: str,
    progress: Callable[[float], None],
    cancelled: Callable[[], bool],
    font_dirs: Sequence[Path] = (),
) -> int:
    """Convert ``source`` to ``target`` with LibreOffice; return the page count when known.

    LibreOffice saves into a folder of its own beside ``target`` (it keeps lock and temp
    files next to the document it writes), and the result is moved into place: a killed
    or failed conversion leaves nothing behind. Raises ``ConversionError("engine_missing")``
    when LibreOffice is not installed.
    """
    staging = target.parent / f".office-{uuid.uuid4().hex}"
    staging.mkdir()
    try:
        staged = staging / target.name
        pages = _office_convert(env, source, source_format, staged, target_format, progress, cancelled, font_dirs)
        if staged.exists():
            os.replace(staged, target)
        return pages
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _office_convert(
    env: ToolEnv,
    source: Path,
    source_format: str,
    target: Path,
    target_format: str,
    progress: Callable[[float], None],
    cancelled: Callable[[], bool],
    font_dirs: Sequence[Path] = (),
) -> int:
    soffice = find_soffice(env.settings)
    if soffice is None:
        raise ConversionError("engine_missing", f"This format needs LibreOffice, which was not found. {INSTALL_HINT}")
    family = FAMILY.get(source_format)
    filter_name = FILTERS.get((family or "", target_format))
    if family is None or filter_name is None:
        raise ConversionError("unsupported_format", f"LibreOffice cannot convert {source_format} to {target_format}")
    timeout = float(env.settings.get("office_timeout_seconds", DEFAULT_TIMEOUT))
    python = None if env.settings.get("office_mode") == "cold" else find_uno_python(env.settings, soffice)
    if python is None:
        return _cold_convert(env, soffice, source, source_format, target, target_format, timeout, cancelled, font_dirs)
    load_filter, load_options = LOAD_FILTERS.get(source_format, (None, None))
    request = {
        "input": str(source.resolve()),
        "output": str(target.resolve()),
        "filter": filter_name,
        "load_filter": load_filter,
        "load_options": load_options,
        "store_options": STORE_OPTIONS.get((family, target_format)),
    }
    pool = get_pool(env, soffice, python, font_dirs)
    instance = pool.borrow(cancelled)
    try:
        try:
            return instance.convert(request, timeout, progress, cancelled)
        except ConversionError as exc:
            if exc.code != "engine_failed":
                raise
            # The instance failed under us (it may have been broken by an earlier document): once more, fresh.
            return instance.convert(request, timeout, progress, cancelled)
    finally:
        pool.give_back(instance)


def _cold_convert(
    env: ToolEnv,
    soffice: str,
    source: Path,
    source_format: str,
    target: Path,
    target_format: str,
    timeout: float,
    cancelled: Callable[[], bool],
    font_dirs: Sequence[Path],
) -> int:
    """One fresh soffice for one file, with its own throw-away hardened profile."""
    base = profile_base(env)
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base, prefix="cold-") as tmp:
        work = Path(tmp)
        profile = work / "profile"
        seed_profile(profile)
        out_dir = work / "out"
        out_dir.mkdir()
        convert_to = target_format
        family = FAMILY[source_format]
        if (family, target_format) in STORE_OPTIONS:
            convert_to = f"{target_format}:{FILTERS[(family, target_format)]}:{STORE_OPTIONS[(family, target_format)]}"
        run_command(
            cold_command(soffice, profile, source.resolve(), out_dir, convert_to),
            timeout=timeout, cancelled=cancelled, env=font_env(font_dirs), engine="LibreOffice",
        )
        produced = sorted(out_dir.iterdir())
        if not produced:
            raise ConversionError("damaged_input", "LibreOffice could not convert the document")
        shutil.move(str(produced[0]), target)
    return 0


def office_available(env: ToolEnv) -> bool:
    """Whether LibreOffice can be used here."""
    return find_soffice(env.settings) is not None

