# trimesh's exporters carry no annotations; calls into them are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""``model-convert``: STL, OBJ, PLY, OFF, GLB, glTF and 3MF into one another, with trimesh."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from pydantic import Field

from converters.base import CamelParams, Context, ConversionError, Engine, InputFile, Tool, ToolEnv, atomic_output
from converters.inputs.limits import PRECHECK_MAX_BYTES
from converters.tools.geometry.models import (
    CREATION_JSON_MAX,
    MAX_FILE_BYTES,
    MODEL_FORMATS,
    TRIMESH,
    Refusing,
    inspect,
    load_model,
    model_errors,
)

if TYPE_CHECKING:
    import trimesh

SCENE_TARGETS = ("glb", "gltf", "3mf", "obj")  # hold several named parts; the others get one merged mesh
Unit = Literal["auto", "micron", "millimeter", "centimeter", "meter", "inch", "foot"]


class ModelConvertParams(CamelParams):
    encoding: Literal["binary", "ascii"] = Field(
        "binary", description="STL and PLY: binary (compact) or ASCII text. Other formats ignore it.",
        json_schema_extra={"x-enumLabels": {"binary": "Binary (compact)", "ascii": "ASCII text"}},
    )
    source_unit: Unit = Field(
        "auto", description="The unit of a model whose file states none (STL, OBJ, PLY, OFF). auto: the unit "
                            "stays unknown, and a 3MF is written in millimetres, its default. Coordinates are "
                            "never rescaled; the unit is only recorded where the output can hold it.",
        title="Unit of the model",
        json_schema_extra={
            "x-enumLabels": {
                "auto": "Not stated",
                "micron": "Micrometres",
                "millimeter": "Millimetres",
                "centimeter": "Centimetres",
                "meter": "Metres",
                "inch": "Inches",
                "foot": "Feet",
            },
        },
    )


class ModelTool(Tool):
    """Base of the mesh tools: trimesh, the ``3d`` category, the mesh formats in, headers checked at creation."""

    category: ClassVar[str] = "3d"
    accepts: ClassVar[tuple[str, ...]] = MODEL_FORMATS
    engines: ClassVar[tuple[Engine, ...]] = (TRIMESH,)
    max_input_size_bytes: ClassVar[int] = MAX_FILE_BYTES
    timeout_seconds: ClassVar[float] = 600.0

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        for source in inputs:
            cheap = source.format not in ("obj", "3mf") and source.path.stat().st_size <= PRECHECK_MAX_BYTES
            if source.format in MODEL_FORMATS and cheap:  # headers (and a glTF's JSON) only
                inspect(source.path, source.format, env, json_max=CREATION_JSON_MAX)


class ModelConvert(ModelTool):
    id = "model-convert"
    title = "Convert 3D model"
    description = (
        "Convert 3D models between STL (binary or ASCII), OBJ, PLY, OFF, GLB, glTF and 3MF. A model of several "
        "parts stays several parts in GLB, glTF, 3MF and OBJ, and is merged into one mesh for STL, PLY and OFF. "
        "Coordinates are kept as they are; the model's unit is carried into 3MF and glTF and noted in the others "
        "where they allow a comment. Files the model refers to (materials, textures, buffers) are never read."
    )
    produces = ("stl", "obj", "ply", "off", "glb", "gltf", "3mf")
    params = ModelConvertParams

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: ModelConvertParams = ctx.params
        target = ctx.output_format
        if target not in self.produces:
            raise ConversionError("unsupported_format", f"trimesh cannot write {target!r} models; choose one of "
                                                        f"{', '.join(self.produces)}.")
        loaded = load_model(source.path, source.format, source.name, ctx.env, ctx.check_cancelled)
        ctx.notes.extend(f"{source.name}: {note}" for note in loaded.declared.notes)
        progress(0.5)
        ctx.check_cancelled()
        unit = loaded.units or (None if params.source_unit == "auto" else params.source_unit)
        scene = loaded.scene
        if unit is not None:
            scene.units = unit
        parts = len(scene.graph.nodes_geometry)
        if parts > 1 and target not in SCENE_TARGETS:
            ctx.notes.append(f"{source.name}: its {parts} parts were merged into one mesh ({target.upper()} holds "
                             "one).")
        with model_errors(f"{source.name} could not be written as {target.upper()}"):
            data = export(scene, target, params.encoding, unit)
        progress(0.85)
        ctx.check_cancelled()
        check_written(data, target)
        out = ctx.output_path(source.name or source.path.name, target)
        with atomic_output(out) as tmp:
            tmp.write_bytes(data)
        progress(1.0)


def export(scene: trimesh.Scene, target: str, encoding: str, unit: str | None) -> bytes:
    """The scene in ``target``'s format; ``unit`` (3MF's spelling) recorded where the format can hold it."""
    from trimesh.exchange import gltf, obj, off, ply, stl, threemf

    comment = f"units: {unit}" if unit else "units: unknown"
    if target == "glb":
        return bytes(scene.export(file_type="glb"))
    if target == "gltf":
        return bytes(gltf.export_gltf(scene, embed_buffers=True)["model.gltf"])
    if target == "3mf":
        return with_3mf_unit(bytes(threemf.export_3MF(scene)), unit or "millimeter")
    if target == "obj":
        return str(obj.export_obj(scene, header=comment, include_texture=False)).encode()
    mesh = merged(scene)
    if target == "stl" and encoding == "ascii":
        return str(stl.export_stl_ascii(mesh)).encode()
    if target == "stl":
        binary = bytearray(stl.export_stl(mesh))
        binary[:80] = f"FileKiln {comment}".encode().ljust(80, b" ")  # never "solid ...": that means ASCII
        return bytes(binary)
    if target == "ply":
        data = bytes(ply.export_ply(mesh, encoding=encoding))
        end = data.index(b"end_header")
        header = re.sub(rb"comment [^\n]*\n", f"comment {comment}\n".encode(), data[:end], count=1)
        return header + data[end:]
    if target == "off":
        text = str(off.export_off(mesh))
        first, rest = text.split("\n", 1)
        return f"{first}\n# {comment}\n{rest}".encode()
    raise ConversionError("unsupported_format", f"trimesh cannot write {target!r} models.")


def merged(scene: trimesh.Scene) -> trimesh.Trimesh:
    """Every part placed by its transform, as one mesh."""
    import trimesh

    if len(scene.geometry) == 1 and len(scene.graph.nodes_geometry) == 1:
        node = scene.graph.nodes_geometry[0]
        transform, key = scene.graph[node]
        mesh = scene.geometry[key].copy()
        mesh.apply_transform(transform)
        return mesh
    mesh = scene.to_mesh()
    if not isinstance(mesh, trimesh.Trimesh):
        raise ConversionError("damaged_input", "The model's parts could not be merged into one mesh.")
    return mesh


def with_3mf_unit(data: bytes, unit: str) -> bytes:
    """trimesh writes every 3MF in millimetres: the model's own unit is put in its place."""
    if unit == "millimeter":
        return data
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            content = src.read(info)
            if info.filename.lower().endswith(".model"):
                content = content.replace(b'unit="millimeter"', f'unit="{unit}"'.encode(), 1)
            dst.writestr(info, content)
    return out.getvalue()


def check_written(data: bytes, target: str) -> None:
    """Read the written model back with trimesh: what does not reopen is never handed out."""
    import trimesh

    kind = "stl" if target == "stl" else target
    try:
        scene = trimesh.load_scene(io.BytesIO(data), file_type=kind, process=False,
                                   resolver=cast(Any, Refusing()))
        faces = sum(len(g.faces) for g in scene.geometry.values() if hasattr(g, "faces"))
    except Exception as exc:  # noqa: BLE001 - reported as the engine's failure
        message = f"The {target.upper()} written does not read back: {exc}"
        raise ConversionError("engine_failed", message[:300]) from None
    if faces == 0:
        raise ConversionError("engine_failed", f"The {target.upper()} written holds no triangles.")
