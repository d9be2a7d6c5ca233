"""``filekiln doctor``: checks what FileKiln runs on, and says in words what is wrong and how to fix it.

Each check is ``ok``, ``warn`` (FileKiln runs, something is missing or low) or ``fail`` (it cannot run
as configured). The exit code is 1 when any check fails, else 0.
"""

from __future__ import annotations

import shutil
import socket
import sqlite3
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from localapi.config import Settings

LOW_DISK_BYTES = 1_000_000_000


@dataclass(frozen=True)
class Check:
    name: str
    state: str  # ok | warn | fail
    detail: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def run_checks(settings: Settings) -> list[Check]:
    checks = [check_data_dir(settings.data_dir)]
    if checks[0].state == "fail":
        return checks
    checks.append(check_postgres(settings.database_url) if settings.database_url.strip()
                  else check_database(settings.data_dir / "filekiln.db"))
    checks.append(check_queue(settings.data_dir / "queue.db", settings.queue_url))
    checks.append(check_storage(settings))
    checks.append(check_disk(settings.data_dir))
    checks.append(check_port(settings.host, settings.port))
    if any(c.state == "fail" for c in checks):
        return checks  # the tools are looked at through the service, which needs the database
    try:
        checks.extend(check_tools(settings))
    except Exception as exc:  # the service itself cannot start: that is the finding
        checks.append(Check("service", "fail", f"FileKiln cannot start on this data dir: {exc}"))
    return checks


def check_data_dir(data_dir: Path) -> Check:
    """The data dir exists (or can be made) and FileKiln can write files into it."""
    try:
        (data_dir / "files").mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=data_dir / "files", prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check("data dir", "fail", f"{data_dir} cannot be written ({exc.strerror or exc}); give FileKiln a "
                                         "folder it may write (--data-dir or FILEKILN_DATA_DIR).")
    return Check("data dir", "ok", str(data_dir))


def read_sqlite(path: Path) -> tuple[str, set[str], int]:
    """SQLite's quick check of ``path`` (read-only), its tables, and its job count (0 without a jobs table)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        verdict = conn.execute("pragma quick_check").fetchone()[0]
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
        jobs = conn.execute("select count(*) from jobs").fetchone()[0] if "jobs" in tables else 0
    finally:
        conn.close()
    return verdict, tables, jobs


def check_database(path: Path) -> Check:
    """The metadata database opens, passes SQLite's quick check, and holds FileKiln's tables."""
    if not path.exists():
        return Check("metadata database", "ok", f"{path} will be made at the first start")
    try:
        verdict, tables, jobs = read_sqlite(path)
    except sqlite3.Error as exc:
        return Check("metadata database", "fail", f"{path} cannot be read: {exc}. Restore it from a backup, or move "
                                                  "it away to start afresh (keys and jobs would be lost).")
    if verdict != "ok":
        return Check("metadata database", "fail", f"{path} is damaged ({verdict}); restore it from a backup.")
    missing = {"keys", "files", "jobs"} - tables
    if missing:
        absent = ", ".join(sorted(missing))
        return Check("metadata database", "fail", f"{path} is not FileKiln's database (no {absent} table).")
    return Check("metadata database", "ok", f"SQLite, {path}, {jobs} jobs kept")


def check_postgres(database_url: str) -> Check:
    """The database_url is one FileKiln can use, and the PostgreSQL it names lets FileKiln in; what it
    holds as it is found (the look at the tools that follows starts FileKiln, which makes or upgrades
    the tables)."""
    from localapi.config import SettingError, Settings
    from localapi.core.db import SCHEMA_HEAD, PostgresDatabase, open_database

    try:
        db = open_database(Settings(database_url=database_url), migrate=False)
    except SettingError as exc:
        return Check("metadata database", "fail", f"{exc} (database_url in settings.toml, or FILEKILN_DATABASE_URL)")
    assert isinstance(db, PostgresDatabase)
    try:
        if db.version is None:
            return Check("metadata database", "ok", f"PostgreSQL, {db.target}: empty; FileKiln makes its tables as "
                                                    "it starts")
        jobs = db.one("select count(*) as n from jobs")["n"]
    finally:
        db.close()
    upgrade = "" if db.version == SCHEMA_HEAD else f"; its schema ({db.version}) is upgraded as FileKiln starts"
    return Check("metadata database", "ok", f"PostgreSQL, {db.target}, {jobs} jobs kept{upgrade}")


def check_queue(path: Path, queue_url: str = "") -> Check:
    """Huey's queue file opens and passes the quick check (it can always be rebuilt from the job table);
    or, with a ``queue_url``, Redis answers."""
    if queue_url.strip():
        return check_redis_queue(path, queue_url)
    if not path.exists():
        return Check("queue", "ok", f"Huey on SQLite, {path} will be made at the first start")
    try:
        verdict, _, _ = read_sqlite(path)
    except sqlite3.Error as exc:
        return Check("queue", "fail", f"{path} cannot be read: {exc}. Delete it: FileKiln rebuilds the queue from "
                                      "the job table at the next start.")
    if verdict != "ok":
        return Check("queue", "fail", f"{path} is damaged; delete it: FileKiln rebuilds it from the job table.")
    return Check("queue", "ok", f"Huey on SQLite, {path}")


def check_redis_queue(path: Path, queue_url: str) -> Check:
    """The queue_url is one FileKiln can use, and the Redis it names answers (a PING)."""
    from localapi.config import SettingError
    from localapi.core.queue import JobQueue

    try:
        queue = JobQueue(path, queue_url)
    except SettingError as exc:
        return Check("queue", "fail", f"{exc} (queue_url in settings.toml, or FILEKILN_QUEUE_URL)")
    state = queue.describe()
    if not state["ok"]:
        return Check("queue", "fail", f"Huey on Redis, {state['target']}: {state['error']}. Start Redis there, or "
                                      "correct queue_url (settings.toml, or FILEKILN_QUEUE_URL).")
    return Check("queue", "ok", f"Huey on Redis, {state['target']} answers; {queue.pending()} messages waiting")


def check_storage(settings: Settings) -> Check:
    """Where the files' bytes are kept: the data dir, or a bucket that answers (storage_url)."""
    from localapi.config import SettingError
    from localapi.core.storage import open_blobs

    try:
        state = open_blobs(settings, settings.data_dir / "files").describe()
    except SettingError as exc:
        return Check("file store", "fail", f"{exc} (storage_url in settings.toml, or FILEKILN_STORAGE_URL)")
    if state["kind"] == "local":
        return Check("file store", "ok" if state["ok"] else "fail", f"the data dir, {state['target']}"
                     + ("" if state["ok"] else f": {state['error']}"))
    if not state["ok"]:
        return Check("file store", "fail", f"the bucket {state['target']}: {state['error']}. Check the s3_* settings "
                                           "(or the AWS_* variables) and that the bucket exists.")
    presigned = "presigned URLs" if settings.s3_presigned_downloads else "streamed through the API"
    return Check("file store", "ok", f"the bucket {state['target']} answers; downloads are {presigned}")


def check_disk(data_dir: Path) -> Check:
    free = shutil.disk_usage(data_dir).free
    text = f"{free / 1e9:.1f} GB free where the data dir is"
    if free < LOW_DISK_BYTES:
        return Check("disk", "warn", text + ": large conversions may fail with disk_full; free some space.")
    return Check("disk", "ok", text)


def check_port(host: str, port: int) -> Check:
    """Whether the API's address is free, taken by a FileKiln (which one), or by another program."""
    address = host if host not in ("0.0.0.0", "::") else "127.0.0.1"
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as probe:
        probe.settimeout(1)
        in_use = probe.connect_ex((address, port)) == 0
    if not in_use:
        return Check("API address", "ok", f"{host}:{port} is free")
    try:
        health = httpx.get(f"http://{address}:{port}/v1/health", timeout=3).json()
        return Check("API address", "ok", f"FileKiln {health.get('version', '?')} answers on {host}:{port}")
    except (httpx.HTTPError, ValueError):
        return Check("API address", "warn", f"another program uses {host}:{port}; start FileKiln on another port "
                                            "(--port, or port in settings.toml)")


def check_tools(settings: Settings) -> list[Check]:
    """Engines and models: a tool that cannot run says why (warn: the others run)."""
    from localapi.core.service import Service

    service = Service.open(settings)
    try:
        checks = []
        missing = [(name, info) for name, info in sorted(service.engines().items()) if not info["available"]]
        available = sum(1 for tool in service.catalogue if service.switches.tool_status(tool)[0])
        total = len(list(service.catalogue))
        checks.append(Check("tools", "ok" if available == total else "warn",
                            f"{available} of {total} tools can run here"))
        for tool in service.catalogue:
            ok, reason = service.switches.tool_status(tool)
            if not ok:
                checks.append(Check(f"tool {tool.id}", "warn", reason or "unavailable"))
        if missing:
            checks.append(Check("engines", "warn", "not installed: " + ", ".join(name for name, _ in missing)))
        for module, error in service.catalogue.broken.items():
            checks.append(Check(f"tools in {module}", "fail", f"could not be loaded: {error}"))
        checks.extend(check_workers(service))
        return checks
    finally:
        service.close()


def check_workers(service: Any) -> list[Check]:
    """The alive worker processes and what each leaves to others; a warning for queued jobs no alive worker takes."""
    from localapi.core.jobs.registry import health_view

    view = health_view(service.db, service.catalogue)
    processes, waiting = view["workerProcesses"], view["waitingForWorker"]
    checks = []
    if not processes:
        checks.append(Check("workers", "ok", "no worker process is running now; jobs run once 'filekiln serve', "
                                             "'filekiln worker' or the desktop app runs"))
    for p in processes:
        leaves = f"; leaves to others: {', '.join(p['cannotRun'])}" if p["cannotRun"] else "; runs every tool"
        part = f"; runs in part only: {', '.join(p['inPart'])}" if p["inPart"] else ""
        checks.append(Check(f"worker {p['host']} pid {p['pid']}", "ok", f"alive, {p['slots']} slots{leaves}{part}"))
    if waiting:
        jobs = sum(waiting.values())
        tools = ", ".join(f"{tool} ({n})" for tool, n in sorted(waiting.items()))
        who = "no worker process is running" if not processes else "no alive worker can run their tools"
        checks.append(Check("queued jobs", "warn", f"{jobs} queued job(s) wait for a worker: {who}: {tools}. Start "
                                                   "'filekiln worker' where those tools' engines are installed."))
    return checks


def report(checks: list[Check]) -> str:
    marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}
    return "\n".join(f"{marks[c.state]}  {c.name}: {c.detail}" for c in checks)


def exit_code(checks: list[Check]) -> int:
    return 1 if any(c.state == "fail" for c in checks) else 0


def as_json(checks: list[Check]) -> list[dict[str, Any]]:
    return [c.to_json() for c in checks]
