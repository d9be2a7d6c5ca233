"""The bucket store's parts against a real SeaweedFS: what a worker on another machine does with a job's
inputs (fetch into its scratch dir), reads at any offset, and what a missing object gives."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from localapi.config import Settings
from localapi.core.db import new_id
from localapi.core.storage import BucketBlobs
from tests.seaweed import Seaweed, needs_weed

pytestmark = needs_weed


def blobs(seaweed: Seaweed, root: Path, prefix: str, cache_mb: int = 64) -> BucketBlobs:
    s = seaweed.settings("filekiln", prefix)
    settings = Settings(data_dir=root, storage_url=s["storage_url"], s3_endpoint_url=s["s3_endpoint_url"],
                        s3_region=s["s3_region"], s3_access_key_id=s["s3_access_key_id"],
                        s3_secret_access_key=s["s3_secret_access_key"], storage_cache_mb=cache_mb)
    return BucketBlobs(settings, root / "cache")


def test_a_worker_elsewhere_fetches_inputs_into_its_scratch_dir(tmp_path: Path, seaweed: Seaweed) -> None:
    api, worker = blobs(seaweed, tmp_path / "api", "fetch"), blobs(seaweed, tmp_path / "worker", "fetch")
    payload = os.urandom(300_000)
    source = tmp_path / "upload.part"
    source.write_bytes(payload)
    file_id = new_id("file")
    assert api.put(source, file_id, move=True) == len(payload)
    assert not source.exists() and (tmp_path / "api" / "cache" / file_id).read_bytes() == payload
    scratch = tmp_path / "worker" / "jobs" / "job_1" / "in"
    fetched = worker.fetch(file_id, scratch)
    assert fetched.parent == scratch and fetched.read_bytes() == payload
    assert list((tmp_path / "worker" / "cache").iterdir()) == [], "a job's input is not cached by the worker"
    with pytest.raises(FileNotFoundError):
        worker.fetch(new_id("file"), scratch)
    assert sorted(p.name for p in scratch.iterdir()) == [file_id], "a failed fetch leaves no partial file"


def test_an_object_reads_like_a_file_from_any_offset(tmp_path: Path, seaweed: Seaweed) -> None:
    store = blobs(seaweed, tmp_path, "reader")
    payload = bytes(range(256)) * 4000
    source = tmp_path / "r.part"
    source.write_bytes(payload)
    file_id = new_id("file")
    store.put(source, file_id, move=False)
    assert source.exists(), "a copy leaves its source"
    with store.open(file_id) as f:
        assert f.read(10) == payload[:10]
        f.seek(500_000)
        assert f.read(7) == payload[500_000:500_007] and f.tell() == 500_007
        f.seek(len(payload))
        assert f.read(100) == b""
        f.seek(3)
        assert io.BytesIO(f.read()).getvalue() == payload[3:]
    with pytest.raises(FileNotFoundError):
        store.open(new_id("file"))
    store.delete(file_id)
    with pytest.raises(FileNotFoundError):
        store.open(file_id)
    assert seaweed.keys("filekiln", "reader/") == []
