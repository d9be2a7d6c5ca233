"""View models, tested without windows: rowCount, data, and what they filter."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QModelIndex, Qt

from desktop.controllers.batches import BatchTracker
from desktop.engines import engine_rows
from desktop.models.files import FileListModel, FormatRole, scan_files
from desktop.models.jobs import JobRow, JobsModel, ProgressRole, format_elapsed
from desktop.models.keys import KeysModel
from desktop.models.tools import ToolIdRole, ToolInfo, ToolTreeModel, tools_for_formats
from localapi.core.db import SqliteDatabase as Database
from localapi.core.keys import KeyService
from localapi.core.states import JobStatus
from tests.conftest import png_bytes


def tool(tool_id: str, category: str, accepts: tuple[str, ...], available: bool = True) -> ToolInfo:
    return ToolInfo(tool_id, category, tool_id.replace("-", " ").title(), f"{tool_id} does things", accepts,
                    ("pdf",), {}, False, 10**9, available, None if available else "missing engine")


TOOLS = [tool("pdf-compress", "pdf", ("pdf",)), tool("pdf-merge", "pdf", ("pdf", "png", "jpg")),
         tool("image-convert", "images", ("png", "jpg")), tool("ocr-pdf", "ocr", ("pdf", "png"), available=False)]


def test_tools_for_formats_needs_every_file_accepted() -> None:
    assert [t.id for t in tools_for_formats(TOOLS, {"pdf"})] == ["pdf-compress", "pdf-merge", "ocr-pdf"]
    assert [t.id for t in tools_for_formats(TOOLS, {"pdf", "png"})] == ["pdf-merge", "ocr-pdf"]
    assert tools_for_formats(TOOLS, {"png", None}) == []
    assert len(tools_for_formats(TOOLS, None)) == len(TOOLS)


def test_tools_search_matches_words_in_any_order() -> None:
    assert [t.id for t in tools_for_formats(TOOLS, None, "merge PDF")] == ["pdf-merge"]
    assert [t.id for t in tools_for_formats(TOOLS, None, "images")] == ["image-convert"]


def test_tool_tree_groups_by_category_and_disables_unavailable_tools(qapp: object) -> None:
    model = ToolTreeModel(TOOLS)
    model.set_formats({"png"})
    groups = {model.index(r, 0).data(): [model.index(c, 0, model.index(r, 0)).data(ToolIdRole)
                                          for c in range(model.rowCount(model.index(r, 0)))]
              for r in range(model.rowCount())}
    assert groups == {"PDF": ["pdf-merge"], "Images": ["image-convert"], "OCR": ["ocr-pdf"]}
    ocr = model.index(0, 0, model.index(2, 0))
    assert not ocr.flags() & Qt.ItemFlag.ItemIsEnabled
    assert "missing engine" in ocr.data(Qt.ItemDataRole.ToolTipRole)
    model.set_query("convert")
    assert model.visible_ids() == ["image-convert"]


def test_file_list_model_shows_name_size_and_sniffed_type(qapp: object, tmp_path: Path) -> None:
    (tmp_path / "photo.dat").write_bytes(png_bytes())
    (tmp_path / "notes.txt").write_text("hello")
    model = FileListModel(lambda p: "png" if p.suffix == ".dat" else None)
    model.add_entries(scan_files([tmp_path], [], model._sniff))
    assert model.rowCount() == 2 and model.columnCount() == 3
    rows = {model.index(r, 0).data(): r for r in range(2)}
    photo = rows["photo.dat"]
    assert model.index(photo, 2).data() == "PNG" and model.index(photo, 0).data(FormatRole) == "png"
    assert model.index(rows["notes.txt"], 2).data() == "unknown"
    assert model.index(photo, 1).data().endswith("bytes")
    assert model.add_entries(scan_files([tmp_path / "photo.dat"], [], model._sniff)) == 0  # no duplicates
    model.remove_rows([photo])
    assert [e.path.name for e in model.entries] == ["notes.txt"]


def row(job_id: str, status: JobStatus = JobStatus.QUEUED, progress: int = 0, created: float = 1.0) -> JobRow:
    return JobRow(job_id, "image-convert", "Convert image", "a.png", "This app", status, progress, created)


def test_jobs_model_applies_snapshots_in_place(qapp: object) -> None:
    model = JobsModel(clock=lambda: 100.0)
    inserted: list[int] = []
    removed: list[int] = []
    model.rowsInserted.connect(lambda parent, first, last: inserted.append(first))
    model.rowsRemoved.connect(lambda parent, first, last: removed.append(first))
    model.modelReset.connect(lambda: pytest.fail("a live update must not reset the table"))
    model.apply([row("b", created=2), row("a")])
    model.apply([row("c", created=3), row("b", JobStatus.PROCESSING, 40, 2), row("a", JobStatus.DONE, 100)])
    assert [r.id for r in model.rows] == ["c", "b", "a"]
    assert model.index(1, JobsModel.PROGRESS_COLUMN).data(ProgressRole) == 40
    assert model.index(1, 3).data() == "Converting 40%"
    assert model.active_count == 2
    model.apply([row("c", created=3), row("a", JobStatus.DONE, 100)])
    assert [r.id for r in model.rows] == ["c", "a"] and removed == [1]
    assert inserted == [0, 1, 0]


def test_elapsed_time_reads_naturally() -> None:
    assert format_elapsed(5.7) == "5 s"
    assert format_elapsed(125) == "2:05"
    assert format_elapsed(3725) == "1:02:05"
    assert format_elapsed(None) == ""


def test_failed_jobs_say_what_went_wrong_in_words_with_details() -> None:
    failed = JobRow("j", "pdf-compress", "Compress PDF", "a.pdf", "This app", JobStatus.FAILED, 12, 1.0,
                    error_code="password_protected", error_message="needs a password: raw engine text")
    assert failed.status_label.startswith("Failed: The file is protected by a password")
    assert "raw engine text" in failed.error_details and "password_protected" in failed.error_details


def test_batch_tracker_reports_a_batch_once_when_all_its_jobs_end() -> None:
    tracker = BatchTracker()
    tracker.add("b", ["j1", "j2"])
    assert tracker.update({}) == []  # not seen yet: still waiting
    assert tracker.update({"j1": JobStatus.DONE, "j2": JobStatus.PROCESSING}) == []
    [summary] = tracker.update({"j1": JobStatus.DONE, "j2": JobStatus.FAILED})
    assert (summary.done, summary.failed) == (1, 1) and summary.message == "1 done, 1 failed."
    assert tracker.update({"j1": JobStatus.DONE, "j2": JobStatus.FAILED}) == []


def test_batch_tracker_counts_a_job_removed_after_it_was_seen_as_canceled() -> None:
    tracker = BatchTracker()
    tracker.add("b", ["j1", "j2"])
    assert tracker.update({"j1": JobStatus.DONE, "j2": JobStatus.QUEUED}) == []
    [summary] = tracker.update({"j1": JobStatus.DONE})
    assert (summary.done, summary.canceled) == (1, 1) and summary.message == "1 done, 1 canceled."


def test_keys_model_lists_keys_with_use_and_status(qapp: object, tmp_path: Path) -> None:
    keys = KeyService(Database(tmp_path / "filekiln.db"))
    model = KeysModel(keys)
    assert model.rowCount() == 0
    key, secret = model.create("backup", 5)
    model.create("sync", None)
    assert model.rowCount() == 2
    first = [model.index(0, c).data() for c in range(model.columnCount())]
    assert first[0] == "backup" and first[1] == key.prefix + "…" and first[3] == "never"
    assert first[4] == "0 of 5" and first[5] == "active"
    assert all(secret not in str(model.index(r, c).data()) for r in range(2) for c in range(6))
    model.revoke(key.id)
    assert model.index(0, 5).data().startswith("revoked")
    assert model.index(0, 0, QModelIndex()).data(Qt.ItemDataRole.FontRole).strikeOut()


def test_engine_rows_cover_reported_engines_and_the_optional_ones() -> None:
    models = [{"kind": "OCR language", "name": "deu", "where": "/data/models/tessdata", "source": "models folder",
               "tools": ["OCR to text"]},
              {"kind": "Whisper model", "name": "tiny.en", "where": None, "source": "", "tools": ["Transcribe speech"]}]
    rows = engine_rows({"engines": {"Pillow": {"available": True, "version": "11.0"},
                                    "typst": {"available": False, "version": None}},
                        "brokenModules": {"converters.tools.media.video": "ImportError: no av"}},
                       {"Pillow": ["Convert image"]}, models, {},
                       which=lambda name: "/usr/bin/soffice" if name == "soffice" else None)
    by = {(r.name, r.version): r for r in rows}
    assert by["Pillow", "11.0"].available and by["Pillow", "11.0"].used_by == "Convert image"
    assert not by["typst", "—"].available and by["typst", "—"].status == "missing"
    assert by["LibreOffice", "—"].available and not by["Calibre", "—"].available
    ocr = by["OCR language", "deu"]
    assert ocr.available and ocr.used_by == "OCR to text" and ocr.note == "/data/models/tessdata (models folder)"
    whisper = by["Whisper model", "tiny.en"]
    assert not whisper.available and whisper.status == "not installed" and "Models list" in whisper.note
    assert not by["Tools in video", "—"].available and "no av" in by["Tools in video", "—"].note


def test_the_engines_panel_shows_the_models_the_tools_really_use(tmp_path: Path) -> None:
    """An empty models folder, yet tiny.en, u2netp and English OCR data come with installed packages:
    the rows say so, by tool title, because those tools do run."""
    from localapi.config import Settings
    from localapi.core.service import Service

    service = Service.open(Settings(data_dir=tmp_path / "data"))
    try:
        uses = {(m["kind"], m["name"]): m for m in service.models_in_use()}
        rows = {(r.name, r.version): r for r in engine_rows({}, {}, service.models_in_use(), {})}
        for kind, name, tool_id in (("Whisper model", "tiny.en", "transcribe"),
                                    ("background model", "u2netp", "ai-remove-background"),
                                    ("OCR language", "eng", "ocr-pdf")):
            tool = service.catalogue.get(tool_id)
            assert tool is not None and tool.available(service.switches.tool_env), tool_id
            assert uses[kind, name]["where"] and tool.title in uses[kind, name]["tools"]
            row = rows[kind[:1].upper() + kind[1:], name]
            assert row.available and row.status == "in use" and tool.title in row.used_by
        llm = rows["Language model", "(none chosen)"]
        assert not llm.available and "Settings" in llm.note
    finally:
        service.close()


def test_the_clock_refreshes_only_the_elapsed_time_of_running_jobs(qapp: object) -> None:
    now = [100.0]
    model = JobsModel(clock=lambda: now[0])
    running = JobRow("b", "image-convert", "Convert image", "a.png", "This app", JobStatus.PROCESSING, 40, 2.0,
                     started_at=50.0)
    model.apply([running, row("a", JobStatus.DONE, 100)])
    changed: list[tuple[int, int, int, int]] = []
    model.dataChanged.connect(lambda first, last, roles=(): changed.append(
        (first.row(), first.column(), last.row(), last.column())))
    now[0] = 175.0
    model.refresh_elapsed()
    assert changed == [(0, JobsModel.ELAPSED_COLUMN, 0, JobsModel.ELAPSED_COLUMN)]
    assert model.index(0, JobsModel.ELAPSED_COLUMN).data() == "2:05"
