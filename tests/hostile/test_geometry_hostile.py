"""Hostile 3D models and drawings against a real server: counts that lie about the file, counts past the
limit, 3MF bombs, and models that name other files or URLs (OBJ mtllib and textures, glTF buffers and images,
DXF pictures and XREFs). Each is refused at creation or fails with a clear code; a loopback listener never sees
a connection and no output holds the bytes of a canary file outside the job's folder."""

from __future__ import annotations

import base64
import io
import json
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trimesh

from tests.conftest import Server, assert_problem, upload, wait_job
from tests.converters.test_geometry_tools import drawing, sample_scene
from tests.hostile.canary import Listener, listening

CANARY = b"GEOMETRY-CANARY-7f3a"



@pytest.fixture(scope="module")
def api_key(shared_server: Server) -> str:
    return shared_server.create_key()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    yield from listening()


@pytest.fixture(scope="module")
def canary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside every job's, holding what a model could name: a material, a picture, a buffer."""
    folder = tmp_path_factory.mktemp("canary")
    (folder / "canary.mtl").write_bytes(b"newmtl m\nKd 1 0 0\nmap_Kd canary.png\n# " + CANARY + b"\n")
    (folder / "canary.png").write_bytes(b"\x89PNG\r\n\x1a\n" + CANARY)
    (folder / "canary.bin").write_bytes(CANARY * 100)
    return folder


def create(client: httpx.Client, name: str, data: bytes, tool: str, fmt: str,
           params: dict[str, Any] | None = None) -> httpx.Response:
    ref = upload(client, name, data)
    return client.post("/jobs", json={"tool": tool, "inputFileIds": [ref["id"]], "params": params or {},
                                      "outputFormat": fmt})


def outcome(client: httpx.Client, response: httpx.Response) -> dict[str, Any]:
    """The job's end (or the refusal at creation, as a pseudo-job) and, when it made any, its outputs' bytes."""
    if response.status_code != 201:
        body = response.json()
        return {"status": "REFUSED", "errorCode": body["code"], "errorMessage": body["detail"], "outputs": []}
    job = wait_job(client, response.json()["id"], timeout=120)
    job["outputs"] = []
    if job["status"] == "DONE":
        files = client.get(f"/jobs/{job['id']}/result").json()["files"]
        job["outputs"] = [httpx.get(f["downloadUrl"]).content for f in files]
    assert "Traceback" not in (job.get("errorMessage") or ""), job
    return job


def assert_no_canary(job: dict[str, Any]) -> None:
    for data in job["outputs"]:
        assert CANARY not in data and base64.b64encode(CANARY)[:16] not in data


# --------------------------------------------------------------------------- counts and bombs


def test_a_binary_stl_whose_count_lies_is_refused(client: httpx.Client) -> None:
    honest = bytearray(trimesh.creation.box().export(file_type="stl"))
    for claimed in (0xFFFF_FFFF, 11, 13):
        struct.pack_into("<I", honest, 80, claimed)
        r = create(client, "box.stl", bytes(honest), "model-convert", "obj")
        assert_problem(r, 415, "unsupported_format")  # not an STL by its size: never reaches trimesh


def test_a_ply_declaring_billions_of_vertices_is_refused_at_creation(client: httpx.Client) -> None:
    body = trimesh.creation.box().export(file_type="ply")
    end = body.index(b"end_header")
    for count, code in ((3_000_000_000, "damaged_input"), (5_000_000, "damaged_input")):  # no bytes behind them
        header = body[:end].replace(b"element vertex 8", f"element vertex {count}".encode())
        r = create(client, "huge.ply", header + body[end:], "model-thumbnail", "png")
        problem = assert_problem(r, 422, code)
        assert f"{count:,}" in problem["detail"]


def test_the_triangle_limit_holds_for_counts_and_for_instances(client: httpx.Client) -> None:
    off = b"OFF\n3 20000000 0\n0 0 0\n1 0 0\n0 1 0\n" + b"3 0 1 2\n" * 10
    assert_problem(create(client, "many.off", off, "model-convert", "stl"), 422, "damaged_input")
    # a glTF placing one triangle under 12 million nodes: small, but it would draw past the limit
    scene = trimesh.Scene()
    tri = trimesh.Trimesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
    scene.add_geometry(tri, node_name="t", geom_name="t")
    doc = json.loads(trimesh.exchange.gltf.export_gltf(scene, embed_buffers=True)["model.gltf"])
    doc["accessors"][doc["meshes"][0]["primitives"][0]["indices"]]["count"] = 3 * 12_000_000
    r = create(client, "nodes.gltf", json.dumps(doc).encode(), "model-convert", "glb")
    assert "12,000,000" in assert_problem(r, 422, "input_too_large")["detail"]


def test_a_3mf_bomb_and_a_3mf_of_too_many_entries(client: httpx.Client) -> None:
    model = sample_scene().export(file_type="3mf")
    bomb = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(model)) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
        dst.writestr("Metadata/padding.bin", b"\0" * (300 * 1024**2))
    many = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(model)) as src, zipfile.ZipFile(many, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
        for n in range(1500):
            dst.writestr(f"Metadata/{n}.txt", b"")
    for name, data in (("bomb.3mf", bomb.getvalue()), ("many.3mf", many.getvalue())):
        job = outcome(client, create(client, name, data, "model-convert", "stl"))
        assert job["status"] in ("FAILED", "REFUSED") and job["errorCode"] == "input_too_large", job


# --------------------------------------------------------------------------- references to other files


def test_obj_materials_and_textures_are_never_read(client: httpx.Client, canary: Path, listener: Listener) -> None:
    body = trimesh.creation.box().export(file_type="obj")
    for ref in (str(canary / "canary.mtl"), "../../../canary.mtl", f"{listener.url}/canary.mtl"):
        data = f"mtllib {ref}\nusemtl m\n".encode() + body.encode()
        for tool, fmt in (("model-convert", "glb"), ("model-convert", "obj"), ("model-thumbnail", "png")):
            job = outcome(client, create(client, "ref.obj", data, tool, fmt))
            assert job["status"] == "DONE", job
            assert_no_canary(job)
    assert listener.hits == []


def test_gltf_external_buffers_are_refused_and_images_left_out(client: httpx.Client, canary: Path,
                                                               listener: Listener) -> None:
    scene = sample_scene()
    doc = json.loads(trimesh.exchange.gltf.export_gltf(scene, embed_buffers=True)["model.gltf"])
    for uri in (str(canary / "canary.bin"), f"file://{canary / 'canary.bin'}", f"{listener.url}/canary.bin"):
        external = json.loads(json.dumps(doc))
        external["buffers"][0]["uri"] = uri
        r = create(client, "external.gltf", json.dumps(external).encode(), "model-convert", "glb")
        assert "another file" in assert_problem(r, 422, "unsafe_input")["detail"]
    pictured = json.loads(json.dumps(doc))
    pictured["images"] = [{"uri": str(canary / "canary.png")}, {"uri": f"{listener.url}/canary.png"}]
    pictured["textures"] = [{"source": 0}, {"source": 1}]
    pictured["materials"] = [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]
    for primitive in pictured["meshes"][0]["primitives"]:
        primitive["material"] = 0
    for tool, fmt in (("model-convert", "glb"), ("model-convert", "gltf"), ("model-thumbnail", "png")):
        job = outcome(client, create(client, "pictured.gltf", json.dumps(pictured).encode(), tool, fmt))
        assert job["status"] == "DONE", job
        assert_no_canary(job)
    assert listener.hits == []


def test_dxf_pictures_and_xrefs_are_never_read(client: httpx.Client, canary: Path, listener: Listener,
                                               tmp_path: Path) -> None:
    import ezdxf

    doc = ezdxf.readfile(drawing(tmp_path))
    msp = doc.modelspace()
    for n, ref in enumerate((str(canary / "canary.png"), f"{listener.url}/canary.png")):
        image_def = doc.add_image_def(filename=ref, size_in_pixel=(64, 64))
        msp.add_image(image_def, insert=(n * 70, 0), size_in_units=(60, 60))
    doc.add_xref_def(str(canary / "canary.dxf"), "OUTSIDE")
    msp.add_blockref("OUTSIDE", (0, 0))
    path = tmp_path / "refs.dxf"
    doc.saveas(path)
    (canary / "canary.dxf").write_bytes(path.read_bytes().replace(b"FileKiln", CANARY))
    for fmt in ("svg", "pdf", "png"):
        job = outcome(client, create(client, "refs.dxf", path.read_bytes(), "cad-convert", fmt))
        assert job["status"] == "DONE", job
        assert_no_canary(job)
    assert listener.hits == []


def test_nested_block_references_are_refused_before_drawing(client: httpx.Client, tmp_path: Path) -> None:
    import ezdxf

    doc = ezdxf.new()
    doc.blocks.new("L0").add_line((0, 0), (1, 1))
    for level in range(1, 8):  # 10 copies of the level below, 7 deep: 10 million lines
        block = doc.blocks.new(f"L{level}")
        for n in range(10):
            block.add_blockref(f"L{level - 1}", (n, 0))
    doc.modelspace().add_blockref("L7", (0, 0))
    path = tmp_path / "nested.dxf"
    doc.saveas(path)
    job = outcome(client, create(client, "nested.dxf", path.read_bytes(), "cad-convert", "svg"))
    assert job["status"] == "FAILED" and job["errorCode"] == "input_too_large", job
