"""Settings: defaults, then ``settings.toml`` in the data dir, then the environment, then flags."""

from __future__ import annotations

import functools
import ipaddress
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import platformdirs

DEFAULT_PORT = 8741
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


def default_data_dir() -> Path:
    env = os.environ.get("FILEKILN_DATA_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("FileKiln", appauthor=False))


@functools.lru_cache(maxsize=256)
def is_loopback_host(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class SettingError(Exception):
    """A setting FileKiln cannot work with; the message says which, and why, in words."""


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=default_data_dir)
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    workers: int = 2
    # conversion processes are started with the workers, one for each and a spare, so that the first jobs
    # do not wait for one to import Python and the engines; false: each is started for the first job that
    # finds none free, and kept for the next (less CPU at start for a server that may run few jobs)
    warm_children: bool = True
    # a key (or the desktop and CLI, as one caller) runs at most this many jobs at once; 0: any free worker
    max_running_jobs_per_key: int = 0
    retention_days: float = 7.0
    strict_auth: bool = False
    # GET /metrics counts every key's jobs for every key (else each key's own): for an install whose keys
    # are all its owner's, watched by a dashboard
    metrics_all_keys: bool = False
    # event streams (GET /events, /jobs/{id}/events, /workflows/{id}/events) open at once per key, and per
    # address for the job streams opened without a key: each holds a connection and a file descriptor
    max_event_streams_per_key: int = 256
    max_event_streams_per_client: int = 256
    download_ttl_seconds: int = 3600
    max_upload_bytes: int = 5 * 1000**3
    # writes (POST, DELETE) per key or anonymous client: above what one machine's server can take (a
    # small job is two writes, and a sequential script makes some 200 a second on a fast desktop)
    rate_limit_per_second: float = 1000.0
    rate_limit_burst: int = 2000
    read_rate_limit_per_second: float = 1000.0  # reads (GET, HEAD), in a bucket of their own
    read_rate_limit_burst: int = 2000
    # proxies whose X-Forwarded-For is believed (IPs or networks); none by default, so that a client
    # cannot choose the address its anonymous rate limit is counted under
    trusted_proxies: tuple[str, ...] = ()
    idempotency_hours: float = 24.0
    job_memory_limit_mb: int = 4096
    purge_interval_seconds: float = 600.0
    # how often idle workers and the event feed look at the database anyway: jobs and job changes reach them
    # at once through the doorbell, the bells and Redis, so this is the fallback for a lost datagram or a
    # process less than a second old. 0.5 s keeps an idle server under 1 % of a core (2.5 % at 50 ms)
    poll_interval_seconds: float = 0.5
    # the metadata database (keys, files, jobs, workflows, webhooks ...): empty for filekiln.db in the data dir;
    # postgresql://user:password@host:port/database for PostgreSQL, shared by API and worker processes
    database_url: str = ""
    # the key that seals jobs' passwords until they run: empty for params.key in the data dir; processes on
    # several machines share one (a Fernet key: Fernet.generate_key())
    params_key: str = ""
    # the job queue: empty for Huey on SQLite in the data dir; redis://[:password@]host:port/db (or
    # rediss://) for Huey on Redis, shared by API and worker processes on several machines
    queue_url: str = ""
    # where the stored files' bytes are kept: empty for the data dir; s3://bucket/prefix for an S3-compatible
    # bucket, reached with the s3_* settings or, where they are empty, the standard AWS_* variables
    storage_url: str = ""
    s3_endpoint_url: str = ""
    s3_region: str = ""
    s3_access_key_id: str = ""
    s3_secret_access_key: str = ""
    s3_presigned_downloads: bool = False  # download links are the bucket's presigned URLs, not the API's
    storage_cache_mb: int = 1024  # local copies of a bucket's files each process keeps
    log_level: str = "info"
    access_log: bool = False  # a line per request (redacted) in the log; off by default, as its cost is per request
    http_parser: str = "auto"  # httptools (fast, in C) when installed, else h11; or name one of them
    # a client's request line and headers must arrive within this, and a body may pause at most this long
    # between two reads (localapi/http/protocol.py); then 408 request_timeout and the connection closes
    request_head_seconds: float = 10.0
    request_body_idle_seconds: float = 20.0
    # how often a serving process marks its Idempotency-Key claims as still held (localapi/core/idempotency.py)
    idempotency_heartbeat_seconds: float = 10.0
    # tool-related settings (llm_provider, libreoffice_path ...): every other key of settings.toml
    tools: Mapping[str, Any] = field(default_factory=dict)
    # per-tool timeout overrides in seconds, e.g. {"video-convert": 7200}
    tool_timeouts: Mapping[str, float] = field(default_factory=dict)
    # webhooks (docs/api.md, Webhooks): targets beyond loopback (host names, IPs or networks such as
    # 10.1.2.0/24), the time an attempt may take, and the waits between attempts (6 attempts over ~1 h)
    webhook_allowed_hosts: tuple[str, ...] = ()
    webhook_timeout_seconds: float = 10.0
    webhook_retry_seconds: tuple[float, ...] = (10.0, 60.0, 300.0, 900.0, 2400.0)

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def loopback_only(self) -> bool:
        return is_loopback_host(self.host)

    @property
    def keys_everywhere(self) -> bool:
        """Binding beyond loopback requires keys on every call."""
        return self.strict_auth or not self.loopback_only

    def with_overrides(self, **values: Any) -> Settings:
        return replace(self, **{k: v for k, v in values.items() if v is not None})


def load_settings(data_dir: Path | None = None, **overrides: Any) -> Settings:
    """Build settings for ``data_dir``: file, then ``FILEKILN_*`` variables, then overrides."""
    base = Settings(data_dir=(data_dir or default_data_dir()).expanduser().resolve())
    values: dict[str, Any] = {}
    settings_file = base.data_dir / "settings.toml"
    if settings_file.is_file():
        with open(settings_file, "rb") as f:
            values.update(tomllib.load(f))
    for f_ in fields(Settings):
        env = os.environ.get(f"FILEKILN_{f_.name.upper()}")
        if env is not None and f_.name != "data_dir":
            values[f_.name] = env
    values.update({k: v for k, v in overrides.items() if v is not None})
    known = {f_.name for f_ in fields(Settings)}
    typed: dict[str, Any] = {"tools": {k: v for k, v in values.items() if k not in known}}
    for f_ in fields(Settings):
        if f_.name == "tool_timeouts" and isinstance(values.get(f_.name), dict):
            typed[f_.name] = {str(k): float(v) for k, v in values[f_.name].items()}
        elif f_.name in values and f_.name not in ("data_dir", "tools", "tool_timeouts"):
            current = getattr(base, f_.name)
            raw = values[f_.name]
            if isinstance(current, bool):
                typed[f_.name] = raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes", "on")
            elif isinstance(current, tuple):  # a TOML list, or comma-separated in FILEKILN_<NAME>
                items = [i.strip() for i in raw.split(",") if i.strip()] if isinstance(raw, str) else list(raw)
                typed[f_.name] = tuple(float(i) if f_.name.endswith("_seconds") else str(i) for i in items)
            else:
                typed[f_.name] = type(current)(raw)
    return replace(base, **typed)
