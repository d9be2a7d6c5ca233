"""Hostile fonts against a real server: a WOFF2 that claims a 4 GB font, table directories pointing
outside the file, truncation, random bytes behind a WOFF2 signature, glyph counts nothing backs,
compression bombs. Each is refused when the job is created, or fails with a clear code; the worker
stays usable and no job leaves its folder behind."""

from __future__ import annotations

import random
import struct
import time
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import Server, assert_problem, failed_job, upload, wait_job
from tests.converters.test_font_tools import (
    REAL,
    fonttools_sample,
    patched,
    sfnt_tables,
    table_offsets,
    woff2_bytes,
    woff_bytes,
)

CLEAR_CODES = {"damaged_input", "input_too_large"}


def create(client: httpx.Client, name: str, data: bytes, tool: str = "font-convert", fmt: str = "ttf",
           params: dict[str, Any] | None = None) -> httpx.Response:
    ref = upload(client, name, data)
    return client.post("/jobs", json={"tool": tool, "inputFileIds": [ref["id"]], "params": params or {},
                                      "outputFormat": fmt})




def assert_nothing_left(server: Server) -> None:
    deadline = time.monotonic() + 5  # the supervisor removes a job's folder right after recording its end
    while any((server.data_dir / "jobs").glob("job_*")):
        assert time.monotonic() < deadline, "a job's work folder was left behind"
        time.sleep(0.02)


def assert_still_converts(client: httpx.Client) -> None:
    """An honest font still converts: no worker is stuck on what came before."""
    job = create(client, "honest.ttf", fonttools_sample(REAL["ttf"]).read_bytes(), fmt="woff2")
    assert job.status_code == 201, job.text
    done = wait_job(client, job.json()["id"], timeout=120)
    assert done["status"] == "DONE", done


def good_ttf() -> bytes:
    return fonttools_sample(REAL["ttf"]).read_bytes()


def maxp_claiming(glyphs: int) -> bytes:
    data = good_ttf()
    offset, length = table_offsets(data)["maxp"]
    return patched(data, "maxp", 4, ">H", glyphs)[offset:offset + length]


def test_a_woff2_claiming_a_4_gb_font_is_refused_at_job_creation(server: Server, client: httpx.Client) -> None:
    honest = fonttools_sample(REAL["woff2"]).read_bytes()
    claiming = bytearray(honest)
    struct.pack_into(">I", claiming, 16, 0xFFFF_FFFF)  # totalSfntSize
    for tool, fmt in (("font-convert", "ttf"), ("font-preview", "png")):
        body = assert_problem(create(client, "huge.woff2", bytes(claiming), tool, fmt), 422, "input_too_large")
        assert "4,096 MB" in body["detail"]
    assert client.get("/jobs").json()["items"] == []  # refused before any job existed
    assert_still_converts(client)
    assert_nothing_left(server)


def test_broken_table_directories_are_refused_at_job_creation(server: Server, client: httpx.Client) -> None:
    data = good_ttf()
    outside = bytearray(data)
    count = struct.unpack(">H", data[4:6])[0]
    for n in range(count):  # the 'glyf' entry points a megabyte past the end of a 2 KB file
        if data[12 + 16 * n:16 + 16 * n] == b"glyf":
            struct.pack_into(">I", outside, 12 + 16 * n + 8, 1_000_000)
    cases = {
        "outside.ttf": (bytes(outside), "'glyf' table lies outside the file"),
        "truncated.ttf": (data[: len(data) // 2], "lies outside the file"),
        "numglyphs.ttf": (patched(data, "maxp", 4, ">H", 65535), "65,535 glyphs"),
        "numglyphs.woff": (woff_bytes({**sfnt_tables(fonttools_sample(REAL["ttf"])), "maxp": maxp_claiming(65535)}),
                           "65,535 glyphs"),
    }
    for name, (content, words) in cases.items():
        for tool, fmt in (("font-convert", "otf"), ("font-preview", "pdf")):
            body = assert_problem(create(client, name, content, tool, fmt), 422, "damaged_input")
            assert words in body["detail"], (name, body)
            assert str(server.data_dir) not in body["detail"]
    assert client.get("/jobs").json()["items"] == []
    assert_still_converts(client)
    assert_nothing_left(server)


def test_random_bytes_behind_a_woff2_signature(server: Server, client: httpx.Client) -> None:
    """Behind the bare signature the header's sizes are random (mostly a font of gigabytes); behind a real
    WOFF2 header the table directory and the Brotli stream are. Either way: a clear code, at creation or
    from the job, never a crash."""
    honest = fonttools_sample(REAL["woff2"]).read_bytes()
    seen: set[str] = set()
    for seed in range(6):
        rng = random.Random(seed)
        noise = bytes(rng.getrandbits(8) for _ in range(4000))
        for name, content in ((f"magic-{seed}.woff2", b"wOF2" + noise),
                              (f"header-{seed}.woff2", fixed_length(honest[:48] + noise))):
            for tool, fmt in (("font-convert", "woff"), ("font-preview", "png")):
                r = create(client, name, content, tool, fmt)
                if r.status_code == 422:
                    code = r.json()["code"]
                    assert code in CLEAR_CODES, r.text
                else:
                    code = failed_job(client, r, CLEAR_CODES)["errorCode"]
                seen.add(code)
    assert seen == CLEAR_CODES  # both the header's sizes and the directory's damage were met
    assert_still_converts(client)
    assert_nothing_left(server)


def fixed_length(data: bytes) -> bytes:
    """``data`` with the WOFF2 header's length field telling the truth, so the checks go further in."""
    out = bytearray(data)
    struct.pack_into(">I", out, 8, len(out))
    struct.pack_into(">I", out, 16, 4096)  # a plausible totalSfntSize
    return bytes(out)


def test_what_only_decompression_reveals_fails_the_job(server: Server, client: httpx.Client) -> None:
    """A WOFF2's glyph counts and a stream's real size are known only by decompressing: the job runs and
    fails, after decompressing no more than a few hundred KB past what the font declares."""
    tables = sfnt_tables(fonttools_sample(REAL["ttf"]))
    cases = {
        "numglyphs.woff2": (woff2_bytes({**tables, "maxp": maxp_claiming(65535)}), "damaged_input", "65,535"),
        "bomb.woff2": (woff2_bytes(tables, extra=256 * 1024**2), "input_too_large", "decompression bomb"),
        "bomb.woff": (woff_bytes(tables, bomb=("zzzz", 512 * 1024, 256 * 1024**2)), "input_too_large",
                      "decompression bomb"),
    }
    for name, (content, code, words) in cases.items():
        assert len(content) < 1024**2, name  # small uploads
        for tool, fmt in (("font-convert", "ttf"), ("font-preview", "png")):
            job = failed_job(client, create(client, name, content, tool, fmt), {code})
            assert words in job["errorMessage"], job
    assert_still_converts(client)
    assert_nothing_left(server)


def test_a_deeply_nested_composite_is_refused(server: Server, client: httpx.Client, tmp_path: Path) -> None:
    """30 levels of glyphs made of two copies of the level below: a billion copies of one triangle if drawn.
    A 2 KB file; fontTools itself would recurse through all of them to work out the bounds."""
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.ttGlyphPen import TTGlyphPen

    order = [".notdef", *(f"level{n}" for n in range(31))]
    pen = TTGlyphPen(None)
    pen.moveTo((0, 0))
    pen.lineTo((0, 100))
    pen.lineTo((100, 0))
    pen.closePath()
    glyphs: dict[str, Any] = {".notdef": pen.glyph(), "level0": pen.glyph()}
    for n in range(1, 31):
        pen = TTGlyphPen(glyphs)
        pen.addComponent(f"level{n - 1}", (1, 0, 0, 1, 0, 0))
        pen.addComponent(f"level{n - 1}", (1, 0, 0, 1, 1, 0))
        glyphs[f"level{n}"] = pen.glyph()
    for glyph in glyphs.values():  # bounds given, not computed: computing them is what would never end
        glyph.xMin, glyph.yMin, glyph.xMax, glyph.yMax = 0, 0, 130, 100
    builder = FontBuilder(1000, isTTF=True)
    builder.font.recalcBBoxes = False
    builder.setupGlyphOrder(order)
    builder.setupCharacterMap({0x41: "level30"})
    builder.setupGlyf(glyphs, calcGlyphBounds=False)
    builder.setupHorizontalMetrics({name: (500, 0) for name in order})
    builder.setupHorizontalHeader(ascent=800, descent=-200)
    builder.setupNameTable({"familyName": "Nested", "styleName": "Regular"})
    builder.setupOS2()
    builder.setupPost()
    path = tmp_path / "nested.ttf"
    builder.save(str(path))
    assert path.stat().st_size < 4096
    for tool, fmt in (("font-convert", "otf"), ("font-preview", "png")):
        job = failed_job(client, create(client, "nested.ttf", path.read_bytes(), tool, fmt), {"damaged_input"})
        assert "level" in job["errorMessage"] and "nest too deeply" in job["errorMessage"], job
    assert_still_converts(client)
    assert_nothing_left(server)
