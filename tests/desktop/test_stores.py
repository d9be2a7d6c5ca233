"""What the app remembers on disk (``desktop.store``): presets, preferences, settings.toml, deliveries."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from desktop.store import Delivery, DeliveryStore, Prefs, PresetStore, SettingsFile, copy_results, dump_toml
from desktop.store.deliveries import resolve_target
from localapi.config import load_settings


def test_presets_are_saved_chosen_and_deleted_per_tool(tmp_path: Path) -> None:
    path = tmp_path / "presets.json"
    store = PresetStore(path)
    store.save("pdf-compress", "Email", {"level": "extreme"}, "pdf")
    store.save("pdf-compress", "archive", {"level": "low"}, "pdf")
    store.save("image-convert", "web", {"quality": 70}, "webp")
    again = PresetStore(path)
    assert again.names("pdf-compress") == ["archive", "Email"]
    assert again.get("pdf-compress", "Email") == {"params": {"level": "extreme"}, "outputFormat": "pdf"}
    again.delete("pdf-compress", "Email")
    assert PresetStore(path).names("pdf-compress") == ["archive"]
    assert PresetStore(path).names("image-convert") == ["web"]


def test_the_last_choice_is_remembered_per_tool(tmp_path: Path) -> None:
    store = PresetStore(tmp_path / "presets.json")
    assert store.last("image-convert") is None
    store.set_last("image-convert", {"quality": 50}, "jpg")
    assert PresetStore(tmp_path / "presets.json").last("image-convert") == {
        "params": {"quality": 50}, "outputFormat": "jpg"}


def test_a_damaged_presets_file_starts_empty(tmp_path: Path) -> None:
    path = tmp_path / "presets.json"
    path.write_text("{not json")
    assert PresetStore(path).names("x") == []


def test_prefs_round_trip_and_ignore_bad_values(tmp_path: Path) -> None:
    path = tmp_path / "desktop.json"
    Prefs(output_folder="/tmp/out", clash_policy="skip", theme="dark", keep_running_in_tray=False).save(path)
    prefs = Prefs.load(path)
    assert (prefs.output_folder, prefs.clash_policy, prefs.theme, prefs.keep_running_in_tray) == (
        "/tmp/out", "skip", "dark", False)
    path.write_text(json.dumps({"clash_policy": "explode", "theme": 3, "unknown": 1}))
    prefs = Prefs.load(path)
    assert (prefs.clash_policy, prefs.theme) == ("rename", "system")


def test_settings_file_changes_only_the_given_keys_and_the_service_reads_them(tmp_path: Path) -> None:
    (tmp_path / "settings.toml").write_text('strict_auth = true\nlibreoffice_path = "/opt/lo"\n'
                                            '[tool_timeouts]\n"video-convert" = 7200\n')
    SettingsFile(tmp_path / "settings.toml").update({"retention_days": 2.5, "workers": 3, "llm_provider": "openai",
                                                     "llm_endpoint": None})
    settings = load_settings(tmp_path)
    assert settings.retention_days == 2.5 and settings.workers == 3 and settings.strict_auth
    assert settings.tools["llm_provider"] == "openai" and settings.tools["libreoffice_path"] == "/opt/lo"
    assert settings.tool_timeouts == {"video-convert": 7200.0}
    assert not list(tmp_path.glob("*.tmp"))


def test_dump_toml_round_trips_through_tomllib() -> None:
    values = {"port": 9000, "retention_days": 2.5, "strict_auth": True, "host": 'a"b\\c',
              "tool_timeouts": {"video-convert": 7200.0}, "list": ["x", 1]}
    assert tomllib.loads(dump_toml(values)) == values


def test_deliveries_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "deliveries.json"
    store = DeliveryStore.open(path)
    store.add(Delivery("job_1", str(tmp_path / "out"), "rename", "b1", (str(tmp_path / "in.png"),)))
    store.add(Delivery("job_2", str(tmp_path), "skip"))
    store.finish("job_2", [tmp_path / "x.pdf"], [])
    again = DeliveryStore.open(path)
    first, second = again.get("job_1"), again.get("job_2")
    assert first is not None and first.pending and first.batch == "b1"
    assert second is not None and not second.pending and second.delivered == (str(tmp_path / "x.pdf"),)
    again.remove(["job_2"])
    assert DeliveryStore.open(path).get("job_2") is None and DeliveryStore.open(path).job_ids() == ["job_1"]


def test_copy_results_renames_on_a_clash_and_protects_inputs(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "f1").write_text("new photo")
    (store / "f2").write_text("new scan")
    out = tmp_path / "out"
    out.mkdir()
    (out / "photo.jpg").write_text("old photo")
    (out / "scan.pdf").write_text("the input itself")
    written, skipped = copy_results([("photo.jpg", store / "f1"), ("scan.pdf", store / "f2")], out, "overwrite",
                                    protected=[out / "scan.pdf"])
    assert [p.name for p in written] == ["photo.jpg", "scan-2.pdf"] and skipped == []
    assert (out / "photo.jpg").read_text() == "new photo"
    assert (out / "scan.pdf").read_text() == "the input itself"
    written, skipped = copy_results([("photo.jpg", store / "f1")], out, "skip")
    assert written == [] and skipped == ["photo.jpg"]
    assert not list(out.glob(".filekiln-*"))


@pytest.mark.parametrize(("policy", "expected"), [
    ("rename", "photo-3.jpg"), ("overwrite", "photo.jpg"), ("skip", None)])
def test_resolve_target_follows_the_clash_policy(tmp_path: Path, policy: str, expected: str | None) -> None:
    (tmp_path / "photo.jpg").write_text("old")
    (tmp_path / "photo-2.jpg").write_text("older")
    target = resolve_target(tmp_path, "photo.jpg", policy)
    assert (target.name if target else None) == expected


def test_resolve_target_never_overwrites_an_input(tmp_path: Path) -> None:
    source = tmp_path / "scan.pdf"
    source.write_text("original")
    for policy in ("overwrite", "skip"):
        target = resolve_target(tmp_path, "scan.pdf", policy, protected=[source])
        assert target == tmp_path / "scan-2.pdf"


def test_resolve_target_without_a_clash_is_the_plain_name(tmp_path: Path) -> None:
    assert resolve_target(tmp_path, "new.png", "skip") == tmp_path / "new.png"
