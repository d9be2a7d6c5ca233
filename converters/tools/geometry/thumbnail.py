"""``model-thumbnail``: a PNG preview of a 3D model, drawn in software (:mod:`.render`), no GPU needed."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from converters.base import CamelParams, Context, Engine, InputFile, atomic_output
from converters.tools.geometry.convert import ModelTool
from converters.tools.geometry.models import TRIMESH, load_model, model_errors

if TYPE_CHECKING:
    import numpy as np
    import trimesh
    from numpy.typing import NDArray

Y_UP = ("glb", "gltf", "obj")  # glTF says so; most OBJ exporters follow; STL, 3MF, PLY and OFF are mostly Z-up
_COLOUR = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")


def parse_colour(text: str) -> tuple[int, int, int, int]:
    """``#rgb``, ``#rrggbb``, ``#rrggbbaa`` or ``transparent`` as RGBA."""
    if text == "transparent":
        return (255, 255, 255, 0)
    digits = text[1:]
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    if len(digits) == 6:
        digits += "ff"
    r, g, b, a = (int(digits[i:i + 2], 16) for i in range(0, 8, 2))
    return (r, g, b, a)


def _check_colour(value: str) -> str:
    if value != "transparent" and not _COLOUR.match(value):
        raise ValueError("a colour as #rrggbb (or #rgb, #rrggbbaa), or 'transparent'")
    return value


Colour = Annotated[str, AfterValidator(_check_colour)]


class ModelThumbnailParams(CamelParams):
    size: int = Field(512, ge=64, le=2048, description="Width and height of the square picture, in pixels.")
    background: Colour = Field("#ffffff", description="Background colour as #rrggbb, or 'transparent'.")
    colour: Colour = Field("#78a0d2", description="The model's colour (as #rrggbb), shaded by the light.")
    view: Literal["iso", "front", "top", "side"] = Field(
        "iso", description="Where the model is seen from: iso (three-quarter, from the front right and above), "
                           "front, top, or side (from the right).",
        json_schema_extra={"x-enumLabels": {"iso": "Three-quarter", "front": "Front", "top": "Top", "side": "Side"}},
    )
    up_axis: Literal["auto", "y", "z"] = Field(
        "auto", description="Which axis points up in the model. auto: Y for glTF, GLB and OBJ, Z for STL, 3MF, "
                            "PLY and OFF, as their usual tools write them.",
        json_schema_extra={"x-enumLabels": {"auto": "By file type", "y": "Y axis", "z": "Z axis"}},
    )


class ModelThumbnail(ModelTool):
    id = "model-thumbnail"
    title = "3D model preview"
    description = (
        "A shaded picture of a 3D model (STL, OBJ, PLY, OFF, GLB, glTF, 3MF) as PNG, seen from a three-quarter "
        "view, the front, the top or the side. Drawn without a graphics card; a model of millions of triangles "
        "is drawn from an even sample of them."
    )
    produces = ("png",)
    params = ModelThumbnailParams
    engines: ClassVar[tuple[Engine, ...]] = (TRIMESH,)
    timeout_seconds: ClassVar[float] = 300.0

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        import numpy as np

        from converters.tools.geometry.render import render

        params: ModelThumbnailParams = ctx.params
        loaded = load_model(source.path, source.format, source.name, ctx.env, ctx.check_cancelled)
        ctx.notes.extend(f"{source.name}: {note}" for note in loaded.declared.notes)
        progress(0.4)
        ctx.check_cancelled()
        with model_errors(f"{source.name} cannot be drawn"):
            triangles = placed_triangles(loaded.scene)
        up = params.up_axis if params.up_axis != "auto" else ("y" if source.format in Y_UP else "z")
        if up == "y":  # turned so that Z is up, as the renderer's views expect
            triangles = triangles[..., [0, 2, 1]] * np.array([1.0, -1.0, 1.0])
        background = parse_colour(params.background)
        colour = parse_colour(params.colour)[:3]
        notes: list[str] = []
        image = render(triangles, params.size, params.view, background, colour, ctx.check_cancelled, notes)
        ctx.notes.extend(f"{source.name}: {note}" for note in notes)
        progress(0.9)
        if background[3] == 255:
            image = image.convert("RGB")
        buf = io.BytesIO()
        image.save(buf, "PNG", optimize=False)
        with atomic_output(ctx.output_path(source.name or source.path.name, "png")) as tmp:
            tmp.write_bytes(buf.getvalue())
        progress(1.0)


def placed_triangles(scene: trimesh.Scene) -> NDArray[np.float64]:
    """Every instance's triangles in world coordinates, as one n x 3 x 3 array."""
    import numpy as np
    import trimesh
    parts = []
    for node in scene.graph.nodes_geometry:
        transform, key = scene.graph[node]
        mesh = scene.geometry.get(key)
        if not isinstance(mesh, trimesh.Trimesh) or not len(mesh.faces):
            continue
        corners = np.asarray(mesh.vertices, dtype=np.float64)[np.asarray(mesh.faces)]
        parts.append(corners @ transform[:3, :3].T + transform[:3, 3])
    return np.concatenate(parts)
