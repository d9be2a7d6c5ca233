"""The 3D and CAD tools on real files: models written by trimesh in every format it writes, numpy-stl's test
STLs and ezdxf's integration drawings (their sdists), drawings written by ezdxf. Every input format x every
output format, read back by trimesh; previews checked pixel by pixel; DXF as SVG, PDF and PNG."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
import pymupdf
import pytest
import trimesh
from PIL import Image

from converters.base import ConversionError
from converters.inputs.sniff import sniff
from tests.converters.runtool import params_error, run_tool
from tests.samples_cache import sdist_files

READS = ["stl", "stl_ascii", "obj", "ply", "ply_ascii", "off", "glb", "gltf", "3mf"]
WRITES = ["stl", "obj", "ply", "off", "glb", "gltf", "3mf"]
NUMPY_STL = "3.2.0"
EZDXF = "1.4.5"


def sample_scene() -> trimesh.Scene:
    """Two parts, one moved by its node: a 10 x 20 x 30 box and a ball of radius 5 at x = 30."""
    scene = trimesh.Scene()
    scene.add_geometry(trimesh.creation.box(extents=(10, 20, 30)), node_name="box", geom_name="box")
    ball = trimesh.creation.icosphere(subdivisions=2, radius=5)
    scene.add_geometry(ball, node_name="ball", geom_name="ball", transform=trimesh.transformations.translation_matrix(
        (30, 0, 0)))
    scene.units = "millimeters"
    return scene


FACES = 12 + 320
BOUNDS = np.array([[-5, -10, -15], [35, 10, 15]], dtype=float)


def write_model(folder: Path, kind: str) -> Path:
    from trimesh.exchange import gltf

    scene = sample_scene()
    merged = scene.to_mesh()
    ext = kind.split("_")[0]
    data: bytes | str
    if kind in ("stl", "off", "ply"):
        data = merged.export(file_type=kind)
    elif kind in ("stl_ascii",):
        data = merged.export(file_type="stl_ascii")
    elif kind == "ply_ascii":
        data = merged.export(file_type="ply", encoding="ascii")
    elif kind == "gltf":
        data = gltf.export_gltf(scene, embed_buffers=True)["model.gltf"]
    else:
        data = scene.export(file_type=kind)
    path = folder / f"sample-{kind}.{ext}"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("models")
    return {kind: write_model(folder, kind) for kind in READS}


def reopened(path: Path) -> tuple[int, int, np.ndarray]:
    """(vertices, triangles, bounds) of ``path`` as trimesh reads it on its own, instances placed."""
    scene = trimesh.load_scene(str(path), process=False)
    mesh = scene.to_mesh()
    return len(mesh.vertices), len(mesh.faces), mesh.bounds


def test_every_model_is_sniffed(models: dict[str, Path]) -> None:
    for kind, path in models.items():
        assert sniff(path, "no-name") == kind.split("_")[0], kind


@pytest.mark.parametrize("target", WRITES)
@pytest.mark.parametrize("kind", READS)
def test_format_matrix(models: dict[str, Path], kind: str, target: str, tmp_path: Path) -> None:
    run = run_tool("model-convert", [models[kind]], tmp_path / "out", output_format=target)
    [out] = run.outputs
    assert out.suffix == f".{target}" and sniff(out, out.name) == target
    vertices, faces, bounds = reopened(out)
    assert faces == FACES
    np.testing.assert_allclose(bounds, BOUNDS, atol=1e-4)
    unmerged = target == "stl" or kind.startswith("stl")  # STL keeps three corners per triangle
    assert vertices == (3 * FACES if unmerged else 8 + 162)


def test_ascii_stl_and_ply_on_request(models: dict[str, Path], tmp_path: Path) -> None:
    for target in ("stl", "ply"):
        [out] = run_tool("model-convert", [models["glb"]], tmp_path / target, {"encoding": "ascii"}, target).outputs
        head = out.read_bytes()[:200]
        assert head.startswith(b"solid" if target == "stl" else b"ply\nformat ascii")
        assert reopened(out)[1] == FACES


def test_parts_stay_parts_where_the_target_holds_them(models: dict[str, Path], tmp_path: Path) -> None:
    [glb] = run_tool("model-convert", [models["3mf"]], tmp_path / "glb", output_format="glb").outputs
    assert len(trimesh.load_scene(str(glb)).geometry) == 2
    run = run_tool("model-convert", [models["3mf"]], tmp_path / "stl", output_format="stl")
    assert any("2 parts were merged" in note for note in run.notes)


def test_units_are_carried_and_never_rescale(models: dict[str, Path], tmp_path: Path) -> None:
    scene = sample_scene()
    scene.units = "inches"
    source = tmp_path / "inches.3mf"
    source.write_bytes(with_unit(scene.export(file_type="3mf"), "inch"))
    [out] = run_tool("model-convert", [source], tmp_path / "3mf", output_format="3mf").outputs
    assert b'unit="inch"' in zipfile.ZipFile(out).read("3D/3dmodel.model")
    np.testing.assert_allclose(reopened(out)[2], BOUNDS, atol=1e-4)
    [obj] = run_tool("model-convert", [source], tmp_path / "obj", output_format="obj").outputs
    assert obj.read_text().startswith("# units: inch")
    [stl] = run_tool("model-convert", [models["stl"]], tmp_path / "stl", {"sourceUnit": "centimeter"}, "3mf").outputs
    assert b'unit="centimeter"' in zipfile.ZipFile(stl).read("3D/3dmodel.model")


def with_unit(data: bytes, unit: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            content = src.read(info)
            dst.writestr(info, content.replace(b'unit="millimeter"', f'unit="{unit}"'.encode()))
    return out.getvalue()


def test_a_target_trimesh_cannot_write_is_refused(models: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        run_tool("model-convert", [models["stl"]], tmp_path, output_format="dae")
    assert caught.value.code == "unsupported_format"


# --------------------------------------------------------------------------- previews


def ink(image: Image.Image, background: tuple[int, int, int]) -> np.ndarray:
    """Where the picture is not the background."""
    pixels = np.asarray(image.convert("RGB")).astype(int)
    return np.abs(pixels - np.array(background)).sum(axis=2) > 30


def silhouette(image: Image.Image) -> tuple[int, int]:
    rows, cols = np.nonzero(ink(image, (255, 255, 255)))
    return int(cols.max() - cols.min() + 1), int(rows.max() - rows.min() + 1)


def tall_box(folder: Path) -> Path:
    path = folder / "box.stl"
    path.write_bytes(trimesh.creation.box(extents=(10, 20, 40)).export(file_type="stl"))
    return path


@pytest.mark.parametrize(("view", "ratio"), [("front", 10 / 40), ("side", 20 / 40), ("top", 10 / 20)])
def test_each_view_shows_the_box_from_its_side(view: str, ratio: float, tmp_path: Path) -> None:
    [png] = run_tool("model-thumbnail", [tall_box(tmp_path)], tmp_path / "out", {"view": view, "size": 256}).outputs
    image = Image.open(png)
    assert image.size == (256, 256) and image.mode == "RGB"
    width, height = silhouette(image)
    assert abs(width / height - ratio) < 0.04, (width, height)
    assert max(width, height) > 256 * 0.8  # the model fills the picture
    assert ink(image, (255, 255, 255))[128, 128]  # the middle is the model
    assert not ink(image, (255, 255, 255))[:8, :8].any()  # the corners are background


def test_iso_view_shades_three_faces_differently(tmp_path: Path) -> None:
    [png] = run_tool("model-thumbnail", [tall_box(tmp_path)], tmp_path / "out", {"size": 200}).outputs
    pixels = np.asarray(Image.open(png).convert("RGB")).reshape(-1, 3)
    colours, counts = np.unique(pixels, axis=0, return_counts=True)
    big = colours[counts > 500]
    assert len(big) >= 4  # background and three lit faces


def test_transparent_background_and_colours(models: dict[str, Path], tmp_path: Path) -> None:
    run = run_tool("model-thumbnail", [models["glb"]], tmp_path / "out",
                   {"background": "transparent", "colour": "#ff0000", "size": 128})
    image = Image.open(run.outputs[0])
    assert image.mode == "RGBA"
    alpha = np.asarray(image)[..., 3]
    assert alpha[0, 0] == 0 and (alpha == 255).sum() > 1000
    solid = np.asarray(image)[alpha == 255][:, :3].astype(int)
    assert (solid[:, 0] >= solid[:, 1]).all() and (solid[:, 1] == solid[:, 2]).all()  # shades of red
    assert "background" in params_error("model-thumbnail", {"background": "red"})


def test_a_model_of_millions_of_triangles_is_drawn_from_a_sample(tmp_path: Path) -> None:
    ball = trimesh.creation.icosphere(subdivisions=8)  # 1,310,720 triangles
    path = tmp_path / "ball.stl"
    path.write_bytes(ball.export(file_type="stl"))
    run = run_tool("model-thumbnail", [path], tmp_path / "out", {"view": "front", "size": 256})
    assert any("an even sample" in note for note in run.notes)
    covered = ink(Image.open(run.outputs[0]), (255, 255, 255))
    yy, xx = np.mgrid[:256, :256]
    disc = (xx - 127.5) ** 2 + (yy - 127.5) ** 2 < (256 * 0.44 * 0.95) ** 2 / 4 * 4
    assert covered[disc].mean() > 0.99  # no holes where the sample thins out
    assert not covered[~((xx - 127.5) ** 2 + (yy - 127.5) ** 2 < (256 * 0.5) ** 2)].any()


# --------------------------------------------------------------------------- DXF


def drawing(folder: Path, binary: bool = False) -> Path:
    """Lines, circles, text and a block placed twice, written by ezdxf; a paper-space layout 'Sheet'."""
    import ezdxf

    doc = ezdxf.new("R2010", setup=True)
    msp = doc.modelspace()
    msp.add_line((0, 0), (200, 100), dxfattribs={"lineweight": 50})
    msp.add_circle((100, 50), 40)
    msp.add_text("FileKiln", height=10).set_placement((20, 80))
    block = doc.blocks.new("MARK")
    block.add_line((-5, -5), (5, 5))
    block.add_line((-5, 5), (5, -5))
    msp.add_blockref("MARK", (180, 20))
    msp.add_blockref("MARK", (20, 20))
    sheet = doc.layouts.new("Sheet")
    sheet.add_circle((50, 50), 25)
    path = folder / ("drawing-bin.dxf" if binary else "drawing.dxf")
    doc.saveas(path, fmt="bin" if binary else "asc")
    return path


@pytest.mark.parametrize("binary", [False, True])
def test_dxf_to_svg_has_paths(binary: bool, tmp_path: Path) -> None:
    source = drawing(tmp_path, binary)
    assert sniff(source, "x") == "dxf"
    [svg] = run_tool("cad-convert", [source], tmp_path / "out", output_format="svg").outputs
    root = ET.parse(svg).getroot()
    paths = [e for e in root.iter() if e.tag.endswith("path")]
    assert len(paths) >= 4  # line, circle, two block copies (text is filled paths too)


def test_dxf_to_pdf_has_drawings(tmp_path: Path) -> None:
    [pdf] = run_tool("cad-convert", [drawing(tmp_path)], tmp_path / "out", {"page": "a4"}, "pdf").outputs
    with pymupdf.open(pdf) as doc:
        page = doc[0]
        assert page.rect.width > page.rect.height  # a wide drawing on a landscape sheet
        assert abs(page.rect.width - 297 * 72 / 25.4) < 1
        assert len(page.get_drawings()) >= 3


def test_dxf_to_png_has_ink_on_either_background(tmp_path: Path) -> None:
    source = drawing(tmp_path)
    for background, paper in (("white", (255, 255, 255)), ("black", (0, 0, 0))):
        [png] = run_tool("cad-convert", [source], tmp_path / background, {"background": background, "dpi": 72},
                         "png").outputs
        image = Image.open(png)
        marked = ink(image, paper)
        assert 0.002 < marked.mean() < 0.3, background
        assert tuple(image.convert("RGB").getpixel((0, 0))) == paper


def test_a_paper_space_layout_by_name(tmp_path: Path) -> None:
    source = drawing(tmp_path)
    [svg] = run_tool("cad-convert", [source], tmp_path / "out", {"layout": "Sheet"}, "svg").outputs
    assert any(e.tag.endswith("path") for e in ET.parse(svg).getroot().iter())
    with pytest.raises(ConversionError) as caught:
        run_tool("cad-convert", [source], tmp_path / "none", {"layout": "Nope"}, "svg")
    assert caught.value.code == "invalid_params" and "'Sheet'" in caught.value.message


# --------------------------------------------------------------------------- real-world samples


def reference(path: Path) -> trimesh.Trimesh:
    """The STL as trimesh reads it alone; a binary one with stray bytes at its end (HalfDonut.stl has one)
    cut to the triangles its header counts, which trimesh does not do by itself."""
    data = path.read_bytes()
    count = int.from_bytes(data[80:84], "little")
    if 0 < len(data) - (84 + 50 * count) < 50:
        data = data[:84 + 50 * count]
    return trimesh.load_scene(io.BytesIO(data), file_type="stl", process=False).to_mesh()


def test_numpy_stls_real_samples(tmp_path: Path) -> None:
    files = sdist_files("numpy-stl", NUMPY_STL, "*/tests/stl_*/*.stl")
    converted = 0
    for n, path in enumerate(files):
        [out] = run_tool("model-convert", [path], tmp_path / f"{n}", output_format="3mf").outputs
        mesh = reference(path)
        assert reopened(out)[1] == len(mesh.faces), path.name
        np.testing.assert_allclose(reopened(out)[2], mesh.bounds, rtol=1e-5, atol=1e-4)
        [png] = run_tool("model-thumbnail", [path], tmp_path / f"{n}-png", {"size": 96}).outputs
        assert ink(Image.open(png), (255, 255, 255)).mean() > 0.02, path.name
        converted += 1
    assert converted == len(files) == 16


def test_ezdxf_integration_drawings(tmp_path: Path) -> None:
    """ezdxf's own test drawings, R12 to R2018, binary and some damaged on purpose: most draw; the rest fail
    with a clear code."""
    files = sdist_files("ezdxf", EZDXF, "*/integration_tests/data/*.dxf")
    drawn, refused = 0, []
    for n, path in enumerate(files):
        try:
            [svg] = run_tool("cad-convert", [path], tmp_path / f"{n}", output_format="svg").outputs
        except ConversionError as exc:
            assert exc.code in ("damaged_input", "no_output"), (path.name, exc.code, exc.message)
            refused.append(path.name)
            continue
        ET.parse(svg)
        drawn += 1
    assert drawn >= 26 and len(files) == 35, refused  # the rest are empty drawings made to test structure
