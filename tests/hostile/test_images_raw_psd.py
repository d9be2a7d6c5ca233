"""Hostile camera RAW and Photoshop files against a real server: headers declaring gigantic canvases or sensors,
channels that would take gigabytes, layer counts nothing backs, files cut short, random bytes behind each RAW
signature. Each is refused when the job is created (Photoshop headers are read there) or fails with a clear
code in the job's own process (LibRaw reads RAW headers only there); the worker stays usable."""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Server, assert_problem, failed_job, upload, wait_job
from tests.converters import raw_psd_samples as samples

CLEAR_CODES = {"damaged_input", "input_too_large"}


@pytest.fixture(scope="module")
def client(shared_server: Server) -> Iterator[httpx.Client]:
    with shared_server.client(shared_server.create_key()) as c:
        yield c


def create(client: httpx.Client, name: str, data: bytes, fmt: str = "png",
           params: dict[str, Any] | None = None, tool: str = "image-convert") -> httpx.Response:
    ref = upload(client, name, data)
    return client.post("/jobs", json={"tool": tool, "inputFileIds": [ref["id"]], "params": params or {},
                                      "outputFormat": fmt})




def assert_still_converts(client: httpx.Client, tmp_path: Path) -> None:
    honest = samples.bayer_dng(tmp_path / "honest.dng").read_bytes()
    done = wait_job(client, create(client, "honest.dng", honest).json()["id"], timeout=120)
    assert done["status"] == "DONE", done


def psd_header(width: int, height: int, *, channels: int = 3, depth: int = 8, version: int = 1) -> bytes:
    return b"8BPS" + struct.pack(">H6xHIIHH", version, channels, height, width, depth, 3)


def with_ifd0(data: bytes, values: dict[int, int]) -> bytes:
    """A little-endian TIFF/DNG with the SHORT or LONG values of IFD0's ``values`` tags replaced."""
    patched = bytearray(data)
    for index in range(struct.unpack_from("<H", data, 8)[0]):
        entry = 10 + 12 * index
        tag, kind = struct.unpack_from("<HH", data, entry)
        if tag in values:
            struct.pack_into("<H" if kind == 3 else "<I", patched, entry + 8, values[tag])
    return bytes(patched)


def test_photoshop_bombs_are_refused_at_job_creation(client: httpx.Client, tmp_path: Path) -> None:
    layered = samples.layered_psd(tmp_path / "layers.psd").read_bytes()
    sections = layered[26:]
    many = bytearray(layered)  # the layer info's count says 32,767 (the most the field holds); 3 records follow
    struct.pack_into(">h", many, _layer_count_at(layered), 32767)
    cases = {
        # 30,000 x 30,000 declared, and nothing behind the header's empty sections
        "canvas.psd": (psd_header(30000, 30000) + bytes(16), "900 megapixels"),
        "canvas.psb": (psd_header(300000, 300000, version=2) + bytes(24), "90000 megapixels"),
        # 49 megapixels is within the limit, but 56 channels of 32 bits are 11 GB
        "channels.psd": (psd_header(7000, 7000, channels=56, depth=32) + sections, "56 channels of 32 bits"),
        "layers.psd": (bytes(many), "32,767 layers"),
    }
    jobs_before = len(client.get("/jobs").json()["items"])
    for name, (content, words) in cases.items():
        for tool, fmt in (("image-convert", "png"), ("image-resize", "keep"), ("image-to-pdf", "pdf")):
            params = {"percent": 50} if tool == "image-resize" else {}
            body = assert_problem(create(client, name, content, fmt, params, tool), 422, "input_too_large")
            assert words in body["detail"], (name, body)
    assert len(client.get("/jobs").json()["items"]) == jobs_before  # refused before any job existed
    assert_still_converts(client, tmp_path)


def _layer_count_at(psd: bytes) -> int:
    """Where the layer info's count field is: after the header, two length-prefixed sections and two lengths."""
    at = 26
    for _ in range(2):
        at += 4 + struct.unpack_from(">I", psd, at)[0]
    return at + 8


def test_a_16_bit_layer_block_declaring_thousands_of_layers(client: httpx.Client, tmp_path: Path) -> None:
    source = samples.pytoshop_sample("16bit5x5.psd").read_bytes()
    declared = bytearray(source)
    struct.pack_into(">h", declared, source.index(b"8BIMLr16") + 12, 20000)
    body = assert_problem(create(client, "deep.psd", bytes(declared), params={"layers": "each"}), 422,
                          "input_too_large")
    assert "20,000 layers" in body["detail"]


def test_damaged_photoshop_files_fail_cleanly(client: httpx.Client, tmp_path: Path) -> None:
    layered = samples.layered_psd(tmp_path / "layers.psd").read_bytes()
    for name, content in (("cut.psd", layered[: len(layered) // 4]), ("header.psd", layered[:30]),
                          ("noise.psd", layered[:26] + random.Random(1).randbytes(3000))):
        for params in ({}, {"layers": "each"}):
            response = create(client, name, content, params=params)
            if response.status_code == 422:
                code = response.json()["code"]
            else:
                code = failed_job(client, response, CLEAR_CODES)["errorCode"]
            assert code == "damaged_input", (name, code)
    # cut inside the merged image at the end: the layers are whole, the flattened picture is not
    half = layered[: len(layered) // 2]
    job = failed_job(client, create(client, "half.psd", half), {"damaged_input"})
    assert "Decompressed length" in job["errorMessage"] or "cannot be" in job["errorMessage"]
    done = wait_job(client, create(client, "half.psd", half, params={"layers": "each"}).json()["id"])
    assert done["status"] == "DONE", done
    assert len(client.get(f"/jobs/{done['id']}/result").json()["files"]) == 3
    assert_still_converts(client, tmp_path)


def test_raw_bombs_and_damage_fail_in_the_job(client: httpx.Client, tmp_path: Path) -> None:
    """LibRaw's sizes are checked before any sensor data is read: a 40,000 x 40,000 DNG is input_too_large.
    Cut-short files and random bytes behind each RAW signature are damaged_input."""
    honest = samples.bayer_dng(tmp_path / "bands.dng").read_bytes()
    giant = with_ifd0(honest, {256: 40000, 257: 40000, 322: 40000, 323: 40000})
    job = failed_job(client, create(client, "giant.dng", giant, "jpg"), {"input_too_large"})
    assert "1600 megapixels" in job["errorMessage"]
    failed_job(client, create(client, "preview.dng", giant, "jpg", {"rawPreview": True}), {"input_too_large"})
    rng = random.Random(7)
    damaged = {
        "cut.dng": honest[: len(honest) // 3],
        "canon.cr2": samples.hachoir_cr2().read_bytes(),  # a real CR2, cut short at 96 KB
        "noise.cr2": b"II*\x00\x10\x00\x00\x00CR\x02\x00" + rng.randbytes(5000),
        "noise.cr3": b"\x00\x00\x00\x18ftypcrx \x00\x00\x00\x01crx isom" + rng.randbytes(5000),
        "noise.raf": b"FUJIFILMCCD-RAW 0201FF383501" + rng.randbytes(5000),
        "noise.orf": b"IIRO\x08\x00\x00\x00" + rng.randbytes(5000),
        "noise.rw2": b"IIU\x00\x08\x00\x00\x00" + rng.randbytes(5000),
    }
    for name, content in damaged.items():
        failed_job(client, create(client, name, content, "webp"), CLEAR_CODES)
    assert_still_converts(client, tmp_path)
