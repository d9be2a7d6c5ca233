"""A file put in the store exists for FileKiln only once it is recorded, in the caller's transaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from localapi.config import Settings
from localapi.core.db import open_database
from localapi.core.errors import FileNotFound
from localapi.core.files import FileStore


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    db = open_database(Settings(data_dir=tmp_path))
    return FileStore(db, tmp_path / "files", retention_seconds=3600)


def result(tmp_path: Path, name: str = "page.png") -> Path:
    source = tmp_path / name
    source.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
    return source


def test_a_put_file_is_recorded_with_the_transaction_it_joins(store: FileStore, tmp_path: Path) -> None:
    put = store.put(result(tmp_path), "page.png", key_id=None, kind="result", job_id="job_1")
    assert store.path_of(put.id).read_bytes().startswith(b"\x89PNG") and put.size_bytes == 108
    with pytest.raises(FileNotFound):
        store.get(put.id, any_owner=True)  # its bytes are there, but it is not a file yet
    with store.db.transaction() as conn:
        store.record(conn, put)
    assert store.get(put.id, any_owner=True) == put


def test_a_transaction_that_rolls_back_records_nothing(store: FileStore, tmp_path: Path) -> None:
    put = store.put(result(tmp_path), "page.png", key_id=None, kind="result")
    with pytest.raises(RuntimeError), store.db.transaction() as conn:
        store.record(conn, put)
        raise RuntimeError("the job was canceled meanwhile")
    with pytest.raises(FileNotFound):
        store.get(put.id, any_owner=True)
    store.discard(put)
    with pytest.raises(FileNotFoundError):  # the bytes went with it
        store.path_of(put.id)


def test_add_is_put_and_record(store: FileStore, tmp_path: Path) -> None:
    added = store.add(result(tmp_path), "../x/page.png", key_id=None, kind="upload")
    assert store.get(added.id, any_owner=True) == added
    assert added.original_name == "page.png" and added.format == "png" and added.mime_type == "image/png"
