"""The desktop's pure helpers: drops, folders, names on disk, settings files."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QUrl

from desktop.helpers import (
    curl_example,
    dump_toml,
    expand_paths,
    format_elapsed,
    friendly_error,
    human_size,
    humanize_name,
    parse_filter,
    paths_from_mime_data,
    resolve_target,
)


def test_paths_from_mime_data_keeps_local_files_and_drops_remote_urls(tmp_path: Path) -> None:
    a = tmp_path / "a.png"
    a.write_bytes(b"x")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(a)), QUrl("https://example.com/b.png"), QUrl.fromLocalFile(str(tmp_path))])
    assert paths_from_mime_data(mime) == [a, tmp_path]


def test_paths_from_mime_data_without_urls_is_empty() -> None:
    mime = QMimeData()
    mime.setText("/etc/passwd")
    assert paths_from_mime_data(mime) == []


def test_parse_filter_accepts_globs_and_bare_extensions() -> None:
    assert parse_filter("*.PDF; png, .jpg") == ["*.pdf", "*.png", "*.jpg"]
    assert parse_filter("  ") == []


def test_expand_paths_walks_folders_with_the_filter_but_keeps_named_files(tmp_path: Path) -> None:
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / ".hidden").mkdir()
    for name in ("a.pdf", "b.txt", "sub/c.PDF", "sub/deeper/d.pdf", ".hidden/e.pdf", "sub/.f.pdf"):
        (tmp_path / name).write_text("x")
    named = tmp_path / "b.txt"
    found = expand_paths([tmp_path, named], parse_filter("*.pdf"))
    assert [p.relative_to(tmp_path).as_posix() for p in found] == ["a.pdf", "sub/c.PDF", "sub/deeper/d.pdf", "b.txt"]


def test_expand_paths_drops_duplicates_and_respects_the_limit(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"{i}.png").write_text("x")
    assert len(expand_paths([tmp_path, tmp_path / "0.png"])) == 5
    assert len(expand_paths([tmp_path], limit=3)) == 3


@pytest.mark.parametrize(("policy", "expected"), [
    ("rename", "photo (3).jpg"), ("overwrite", "photo.jpg"), ("skip", None)])
def test_resolve_target_follows_the_clash_policy(tmp_path: Path, policy: str, expected: str | None) -> None:
    (tmp_path / "photo.jpg").write_text("old")
    (tmp_path / "photo (2).jpg").write_text("older")
    target = resolve_target(tmp_path, "photo.jpg", policy)
    assert (target.name if target else None) == expected


def test_resolve_target_never_overwrites_an_input(tmp_path: Path) -> None:
    source = tmp_path / "scan.pdf"
    source.write_text("original")
    for policy in ("overwrite", "skip"):
        target = resolve_target(tmp_path, "scan.pdf", policy, protected=[source])
        assert target == tmp_path / "scan (2).pdf"


def test_resolve_target_without_a_clash_is_the_plain_name(tmp_path: Path) -> None:
    assert resolve_target(tmp_path, "new.png", "skip") == tmp_path / "new.png"


def test_sizes_and_durations_read_naturally() -> None:
    assert human_size(999) == "999 bytes"
    assert human_size(1_500_000) == "1.5 MB"
    assert format_elapsed(5.7) == "5 s"
    assert format_elapsed(125) == "2:05"
    assert format_elapsed(3725) == "1:02:05"
    assert format_elapsed(None) == ""


def test_humanize_name_turns_json_names_into_labels() -> None:
    assert humanize_name("sampleRate") == "Sample rate"
    assert humanize_name("imageDpi") == "Image DPI"
    assert humanize_name("targetSizeKb") == "Target size (KB)"
    assert humanize_name("pages") == "Pages"


def test_friendly_error_prefers_words_over_codes() -> None:
    assert "password" in friendly_error("password_protected", "PDF needs a password (raw)")
    assert friendly_error("something_new", "raw message") == "raw message"
    assert friendly_error(None, None) == "The conversion failed."


def test_dump_toml_round_trips_through_tomllib() -> None:
    values = {"port": 9000, "retention_days": 2.5, "strict_auth": True, "host": 'a"b\\c',
              "tool_timeouts": {"video-convert": 7200.0}, "list": ["x", 1]}
    assert tomllib.loads(dump_toml(values)) == values


def test_curl_example_uses_the_base_url_and_a_placeholder() -> None:
    text = curl_example("http://127.0.0.1:9999/v1")
    assert "BASE=http://127.0.0.1:9999/v1" in text and "YOUR_API_KEY" in text
