"""A software renderer for model previews: numpy and Pillow, no GPU, no OpenGL.

Triangles are turned to a fixed view, projected orthographically onto the picture, shaded flat (Lambert, lit
from the upper left of the viewer, both sides alike since meshes rarely agree on winding) and resolved with a
z-buffer: every pixel centre a triangle covers becomes a fragment, and per pixel the nearest fragment wins
(one sort). Triangles smaller than a pixel become a single fragment at their centre, so dense meshes stay
solid. Drawn at twice the size and scaled down, for smooth edges.

What this costs is bounded: past :data:`MAX_DRAWN` triangles an even sample of them is drawn, each enlarged
about its centre to cover for those left out (a 5-million triangle model renders in a few seconds), and the
pixels the triangles' boxes cover together are capped too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from PIL import Image

MAX_DRAWN = 1_000_000  # triangles drawn at most; a model with more is drawn from an even sample
MAX_CANDIDATES = 80_000_000  # pixel tests, all triangles together (about 3 GB of work at worst)
BATCH = 4_000_000  # pixel tests per numpy batch
MARGIN = 0.06  # of the picture's side, left empty around the model
AMBIENT = 0.28


@dataclass(frozen=True)
class View:
    right: tuple[float, float, float]
    up: tuple[float, float, float]
    toward: tuple[float, float, float]  # from the model to the viewer


def _unit(v: tuple[float, float, float]) -> NDArray[np.float64]:
    a = np.asarray(v, dtype=np.float64)
    return a / np.linalg.norm(a)


def _iso() -> View:
    toward = _unit((1.0, -1.0, 0.9))
    right = _unit((1.0, 1.0, 0.0))
    up = np.cross(toward, right)
    return View(tuple(right), tuple(up), tuple(toward))


# Z points up in the model; +Y away from a viewer at the front.
VIEWS = {
    "iso": _iso(),
    "front": View((1, 0, 0), (0, 0, 1), (0, -1, 0)),
    "side": View((0, 1, 0), (0, 0, 1), (1, 0, 0)),
    "top": View((1, 0, 0), (0, 1, 0), (0, 0, 1)),
}


def render(triangles: NDArray[np.floating], size: int, view: str, background: tuple[int, int, int, int],
           colour: tuple[int, int, int] = (120, 160, 210), check_cancelled: Callable[[], None] = lambda: None,
           notes: list[str] | None = None) -> Image.Image:
    """An RGBA picture ``size`` pixels square of ``triangles`` (n x 3 corners x xyz, Z up) seen from ``view``."""
    notes = notes if notes is not None else []
    tris = np.asarray(triangles, dtype=np.float64).reshape(-1, 3, 3)
    tris = tris[np.isfinite(tris).all(axis=(1, 2))]
    if len(tris) > MAX_DRAWN:
        keep = np.sort(np.random.default_rng(0).choice(len(tris), MAX_DRAWN, replace=False))
        notes.append(f"{MAX_DRAWN:,} of the model's {len(tris):,} triangles were drawn (an even sample).")
        # each kept triangle stands for this many: four times their area, so that few gaps are left
        grow = 2 * np.sqrt(len(tris) / MAX_DRAWN)
        tris = tris[keep]
        centres = tris.mean(axis=1, keepdims=True)
        tris = centres + (tris - centres) * grow
    scale = 2 if size <= 1024 else 1
    side = size * scale
    v = VIEWS[view]
    basis = np.stack([_unit(v.right), _unit(v.up), _unit(v.toward)])
    screen = tris @ basis.T  # x right, y up, z toward the viewer
    shade = _shading(screen)
    check_cancelled()
    px, py = _fit(screen, side)
    depth = screen[:, :, 2]
    splat = scale  # an output pixel
    pixels, depths, faces = _rasterise(px, py, depth, side, splat, check_cancelled, notes)
    check_cancelled()
    picture = np.empty((side * side, 4), dtype=np.uint8)
    picture[:] = background
    if len(pixels):
        order = np.lexsort((-depths, pixels))  # per pixel, the nearest first
        pixels, faces = pixels[order], faces[order]
        first = np.ones(len(pixels), dtype=bool)
        first[1:] = pixels[1:] != pixels[:-1]
        lit = np.clip(np.outer(shade[faces[first]], colour), 0, 255).astype(np.uint8)
        picture[pixels[first], :3] = lit
        picture[pixels[first], 3] = 255
    image = Image.fromarray(picture.reshape(side, side, 4), "RGBA")
    return image.resize((size, size), Image.Resampling.BOX) if scale > 1 else image


def _shading(screen: NDArray[np.float64]) -> NDArray[np.float64]:
    normals = np.cross(screen[:, 1] - screen[:, 0], screen[:, 2] - screen[:, 0])
    length = np.linalg.norm(normals, axis=1)
    light = _unit((-0.45, 0.6, 1.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        facing = np.abs(normals @ light) / length
    facing = np.nan_to_num(facing, nan=0.5)
    return AMBIENT + (1 - AMBIENT) * facing


def _fit(screen: NDArray[np.float64], side: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Corner positions in pixels: the model's projected box centred, filling the picture but its margin."""
    low = screen[:, :, :2].reshape(-1, 2).min(axis=0)
    high = screen[:, :, :2].reshape(-1, 2).max(axis=0)
    extent = float(max(high[0] - low[0], high[1] - low[1]))
    scale = side * (1 - 2 * MARGIN) / extent if extent > 0 else 1.0
    centre = (low + high) / 2
    px = (screen[:, :, 0] - centre[0]) * scale + side / 2
    py = side / 2 - (screen[:, :, 1] - centre[1]) * scale
    return px, py


def _rasterise(px: NDArray[np.float64], py: NDArray[np.float64], depth: NDArray[np.float64], side: int,
               splat: int, check_cancelled: Callable[[], None], notes: list[str],
               ) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """Fragments (pixel index, depth, triangle index) of every triangle, tested at pixel centres; a triangle
    smaller than a pixel covers ``splat`` x ``splat`` pixels around its centre."""
    x0 = np.ceil(px.min(axis=1) - 0.5).astype(np.int64).clip(0, side)
    x1 = np.floor(px.max(axis=1) - 0.5).astype(np.int64).clip(-1, side - 1)
    y0 = np.ceil(py.min(axis=1) - 0.5).astype(np.int64).clip(0, side)
    y1 = np.floor(py.max(axis=1) - 0.5).astype(np.int64).clip(-1, side - 1)
    width, height = x1 - x0 + 1, y1 - y0 + 1
    out_pixels: list[NDArray[np.int64]] = []
    out_depths: list[NDArray[np.float64]] = []
    out_faces: list[NDArray[np.int64]] = []
    # smaller than a pixel (no pixel centre inside the box): one fragment where its centre falls
    tiny = np.flatnonzero((width <= 0) | (height <= 0))
    cx = np.floor(px[tiny].mean(axis=1) - (splat - 1) / 2).astype(np.int64)
    cy = np.floor(py[tiny].mean(axis=1) - (splat - 1) / 2).astype(np.int64)
    for dx in range(splat):
        for dy in range(splat):
            inside = (cx + dx >= 0) & (cx + dx < side) & (cy + dy >= 0) & (cy + dy < side)
            out_pixels.append((cy[inside] + dy) * side + cx[inside] + dx)
            out_depths.append(depth[tiny[inside]].mean(axis=1))
            out_faces.append(tiny[inside])
    big = np.flatnonzero((width > 0) & (height > 0))
    reach = np.maximum(width[big], height[big])
    box = 1 << np.ceil(np.log2(np.maximum(reach, 1))).astype(np.int64)  # tested on a box x box grid
    cost = (box * box).astype(np.float64)
    if cost.sum() > MAX_CANDIDATES:  # hostile slivers crossing the whole picture: the cheapest kept
        order = np.argsort(cost, kind="stable")
        kept = order[np.cumsum(cost[order]) <= MAX_CANDIDATES]
        notes.append(f"{len(big) - len(kept):,} very large triangles were left out of the preview.")
        big, box = big[np.sort(kept)], box[np.sort(kept)]
    for size in np.unique(box):
        group = big[box == size]
        step = max(1, BATCH // int(size * size))
        for start in range(0, len(group), step):
            check_cancelled()
            pixels, depths, faces = _cover(group[start:start + step], int(size), px, py, depth,
                                           x0, y0, width, height, side)
            out_pixels.append(pixels)
            out_depths.append(depths)
            out_faces.append(faces)
    return np.concatenate(out_pixels), np.concatenate(out_depths), np.concatenate(out_faces)


def _cover(faces: NDArray[np.int64], size: int, px: NDArray[np.float64], py: NDArray[np.float64],
           depth: NDArray[np.float64], x0: NDArray[np.int64], y0: NDArray[np.int64], width: NDArray[np.int64],
           height: NDArray[np.int64], side: int) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """The pixel centres each of ``faces`` covers, on a ``size`` x ``size`` grid from its box's corner."""
    offsets = np.arange(size)
    gx = x0[faces, None, None] + offsets[None, None, :]
    gy = y0[faces, None, None] + offsets[None, :, None]
    valid = (offsets[None, None, :] < width[faces, None, None]) & (offsets[None, :, None] < height[faces, None, None])
    sx, sy = gx + 0.5, gy + 0.5
    ax, ay = px[faces, 0, None, None], py[faces, 0, None, None]
    bx, by = px[faces, 1, None, None], py[faces, 1, None, None]
    qx, qy = px[faces, 2, None, None], py[faces, 2, None, None]
    area = (bx - ax) * (qy - ay) - (by - ay) * (qx - ax)
    w0 = (bx - sx) * (qy - sy) - (by - sy) * (qx - sx)
    w1 = (qx - sx) * (ay - sy) - (qy - sy) * (ax - sx)
    w2 = (ax - sx) * (by - sy) - (ay - sy) * (bx - sx)
    sign = np.sign(area)
    hit = valid & (area != 0) & (w0 * sign >= 0) & (w1 * sign >= 0) & (w2 * sign >= 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (w0 * depth[faces, 0, None, None] + w1 * depth[faces, 1, None, None]
             + w2 * depth[faces, 2, None, None]) / area
    which = np.broadcast_to(faces[:, None, None], hit.shape)
    return (gy * side + gx)[hit], z[hit], which[hit]
