"""What job creation reads of a hostile file: the checks run in the API process (and in the desktop's and
the watch folders'), which has no memory cap, so they read a bounded head and leave parsing the whole
file to the conversion, which runs under the job's cap. Measured with tracemalloc over the very call the
API makes (``localapi.core.jobs.validation.precheck``)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from converters.base import InputFile, ToolEnv
from converters.catalogue import load_catalogue
from localapi.core.errors import InvalidParams
from localapi.core.jobs.validation import precheck

MB = 1024**2
BOUND = 24 * MB  # what a creation check may allocate, whatever the file's size


def peak_of_precheck(tool_id: str, path: Path, fmt: str, params: dict[str, object] | None = None) -> int:
    tool = load_catalogue().get(tool_id)
    assert tool is not None
    model = tool.params.model_validate(params or {})
    tracemalloc.start()
    try:
        precheck(tool, model, [InputFile(path, fmt, path.name)], ToolEnv())
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("body", [b"<g/>", b"<t>&e;</t>"], ids=["16 MB of groups", "16 MB of entity references"])
def test_a_16_mb_svg_is_measured_from_its_head(tmp_path: Path, body: bytes) -> None:
    path = tmp_path / "big.svg"
    with open(path, "wb") as f:
        f.write(b'<?xml version="1.0"?>\n<!DOCTYPE svg [<!ENTITY e "flat text">]>\n'
                b'<svg xmlns="http://www.w3.org/2000/svg" width="100" height="80">')
        for _ in range(16):
            f.write(body * (MB // len(body)))
        f.write(b"</svg>")
    assert peak_of_precheck("vector-convert", path, "svg", {"width": 200}) < BOUND


def test_an_svg_whose_root_is_too_large_to_render_is_still_refused_at_creation(tmp_path: Path) -> None:
    path = tmp_path / "huge.svg"
    path.write_bytes(b'<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="100000">'
                     + b"<g/>" * (4 * MB) + b"</svg>")
    with pytest.raises(InvalidParams) as caught:
        peak_of_precheck("vector-convert", path, "svg")
    assert caught.value.code == "input_too_large"


def test_a_32_mb_gltf_is_left_for_the_conversion(tmp_path: Path) -> None:
    path = tmp_path / "big.gltf"
    nodes = [{"name": f"node {n}", "children": []} for n in range(800_000)]
    path.write_text(json.dumps({"asset": {"version": "2.0"}, "nodes": nodes}))
    assert path.stat().st_size > 30 * MB
    assert peak_of_precheck("model-convert", path, "gltf", {}) < BOUND
