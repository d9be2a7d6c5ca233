"""What comes in: drops (``paths_from_mime_data``), the folder filter and walking folders, and sizes."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QUrl

from desktop.models.files import expand_paths, human_size, parse_filter
from desktop.views.drop_zone import paths_from_mime_data


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


def test_sizes_read_naturally() -> None:
    assert human_size(999) == "999 bytes"
    assert human_size(1_500_000) == "1.5 MB"
    assert human_size(None) == ""
