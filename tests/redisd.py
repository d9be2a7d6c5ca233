"""A real redis-server for tests, on a free loopback port in a temp dir, with no persistence."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REDIS_SERVER = shutil.which("redis-server")
needs_redis = pytest.mark.skipif(
    REDIS_SERVER is None,
    reason="redis-server is not installed here (Debian/Ubuntu: apt-get install redis-server; .ci/run installs it)")
QUEUE_KEY = "huey.redis.filekiln"


@dataclass
class RedisServer:
    """A redis-server of this test's own: no persistence, in a temp dir, on a loopback port."""

    port: int
    workdir: Path
    extra: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert REDIS_SERVER is not None
        log = open(self.workdir / "redis.log", "ab")  # noqa: SIM115 - kept open for the server's lifetime
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir), *self.extra], stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: self._answers(), what=f"redis-server on port {self.port}", timeout=30)

    def _answers(self) -> bool:
        try:
            return bool(self.client().ping())
        except Exception:
            assert self.process is not None and self.process.poll() is None, (self.workdir / "redis.log").read_text()
            return False

    def client(self) -> Any:
        import redis

        password = dict(zip(self.extra[::2], self.extra[1::2], strict=False)).get("--requirepass")
        return redis.Redis(host="127.0.0.1", port=self.port, password=password, socket_timeout=5)

    def stop(self, kill: bool = False) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill() if kill else self.process.terminate()
            self.process.wait(timeout=30)


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


