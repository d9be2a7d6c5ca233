"""The Python client's workflow calls against a real server: chains, presets, and how a failure reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from filekiln.client import FileKiln, WorkflowFailed
from tests.conftest import Server, png_bytes


def write_png(path: Path, size: tuple[int, int] = (40, 30)) -> Path:
    path.write_bytes(png_bytes(*size))
    return path


def test_run_workflow_runs_a_two_step_chain_and_downloads_each_output(
        server: Server, api_key: str, tmp_path: Path) -> None:
    inputs = [write_png(tmp_path / "wide.png", (80, 40)), write_png(tmp_path / "tall.png", (30, 60))]
    seen: list[float] = []
    with FileKiln(server.base_url, key=api_key) as kiln:
        paths = kiln.run_workflow(inputs, steps=[
            {"tool": "image-resize", "params": {"width": 20, "height": 20}, "outputFormat": "png"},
            {"tool": "image-convert", "outputFormat": "webp"}], out=tmp_path / "out", progress=seen.append)
    assert sorted(p.name for p in paths) == ["tall.webp", "wide.webp"]
    sizes = {}
    for path in paths:
        assert path.parent == tmp_path / "out"
        with Image.open(path) as img:
            assert img.format == "WEBP"
            sizes[path.name] = img.size
    assert sizes == {"wide.webp": (20, 10), "tall.webp": (10, 20)}
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)


def test_run_workflow_with_a_preset(server: Server, api_key: str, tmp_path: Path) -> None:
    photo = write_png(tmp_path / "photo.png")
    with FileKiln(server.base_url, key=api_key) as kiln:
        assert "Web images" in [p["name"] for p in kiln.presets()]
        [path] = kiln.run_workflow([photo], preset="Web images")
    assert path == tmp_path / "photo.webp"  # beside the input by default
    with Image.open(path) as img:
        assert img.format == "WEBP" and img.size == (40, 30)  # never enlarged


def test_a_failed_workflow_raises_workflow_failed_with_its_code(server: Server, api_key: str, tmp_path: Path) -> None:
    single = write_png(tmp_path / "single.png")
    with FileKiln(server.base_url, key=api_key) as kiln:
        with pytest.raises(WorkflowFailed) as failed:  # step 2 asks for page 5 of the one-page PDF step 1 makes
            kiln.run_workflow([single], steps=[
                {"tool": "image-to-pdf"}, {"tool": "pdf-extract-pages", "params": {"pages": "5"}}], out=tmp_path)
        error = failed.value
        assert error.error_code and error.code == error.error_code
        assert error.failed_step == 2 and "Step 2 (pdf-extract-pages)" in (error.error_message or "")
        assert kiln.workflow(error.workflow_id)["status"] == "FAILED"
    assert list(tmp_path.glob("*.pdf")) == []


def test_create_workflow_then_wait_for_it_then_read_its_result(server: Server, api_key: str, tmp_path: Path) -> None:
    with FileKiln(server.base_url, key=api_key) as kiln:
        ref = kiln.upload(write_png(tmp_path / "x.png"))
        created = kiln.create_workflow([ref["id"]], steps=[{"tool": "image-convert", "outputFormat": "jpg"}],
                                       tag="batch-1")
        assert created["id"].startswith("wf_") and created["tag"] == "batch-1"
        workflow = created
        while workflow["status"] not in ("DONE", "FAILED", "CANCELED"):
            workflow = kiln.workflow(created["id"], wait=30)
        assert workflow["status"] == "DONE", workflow
        result = kiln.workflow_result(created["id"])
        assert [f["name"] for f in result["files"]] == ["x.jpg"]
