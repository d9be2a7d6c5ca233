"""The key that seals jobs' passwords: the data dir's params.key, or one shared by every process of an
install through the params_key setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from localapi.config import SettingError
from localapi.core.jobs.sealed import ParamsUnreadable, Sealer


def test_processes_with_data_dirs_of_their_own_share_a_key_through_the_setting(tmp_path: Path) -> None:
    key = Fernet.generate_key().decode()
    api = Sealer(tmp_path / "api" / "params.key", key)
    worker = Sealer(tmp_path / "worker" / "params.key", key)
    assert worker.unseal(api.seal({"password": "hunter2"})) == {"password": "hunter2"}
    assert not (tmp_path / "api" / "params.key").exists()  # the setting's key is used, no file made


def test_without_the_setting_each_data_dir_keeps_its_own(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = Sealer(tmp_path / "a" / "params.key"), Sealer(tmp_path / "b" / "params.key")
    sealed = a.seal({"password": "hunter2"})
    with pytest.raises(ParamsUnreadable, match="params_key"):  # another key cannot read it, and says so
        b.unseal(sealed)
    assert Sealer(tmp_path / "a" / "params.key").unseal(sealed) == {"password": "hunter2"}


@pytest.mark.parametrize("bad", ["not a key", "Zm9v", "é" * 44])
def test_a_params_key_that_is_not_a_key_is_refused_in_words(tmp_path: Path, bad: str) -> None:
    with pytest.raises(SettingError, match="params_key is not a key"):
        Sealer(tmp_path / "params.key", bad)
