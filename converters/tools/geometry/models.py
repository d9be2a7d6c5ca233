"""Reading 3D models: what each format's header declares, checked against the file and the limits before
trimesh loads anything, and the load itself with nothing outside the file ever read.

trimesh resolves the files a model names (an OBJ's ``mtllib``, a glTF's ``uri`` buffers and images) through a
*resolver*; left to itself it builds one over the model's folder, or over the web for a URL. Here the model is
handed over as bytes with :class:`Refusing` as the resolver: every lookup fails, and is recorded.
"""

from __future__ import annotations

import io
import json
import re
import struct
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from converters.base import Cancelled, ConversionError, Engine, ToolEnv
from converters.inputs import safexml
from converters.inputs.archives import ArchiveLimits, EntryInfo, check_listing, check_zip_directory
from converters.inputs.safety import check_archive

if TYPE_CHECKING:
    import trimesh

TRIMESH = Engine("trimesh", module="trimesh", distribution="trimesh", install_hint="pip install trimesh")

MODEL_FORMATS = ("stl", "obj", "ply", "off", "glb", "gltf", "3mf")
MAX_FILE_BYTES = 1024**3  # a binary STL of 20 million triangles; the triangle limit below comes first
DEFAULT_MAX_TRIANGLES = 10_000_000  # setting max_model_triangles: ~1.5 GB of float64 vertices when loaded
MAX_3MF_ENTRIES = 1_000
MAX_3MF_BYTES = 1024**3  # what a 3MF's parts may expand to, together
CHUNK = 1024 * 1024
UNIT_NAMES = {  # how trimesh spells a unit -> 3MF's word and the comment written in unitless formats
    "millimeters": "millimeter", "millimeter": "millimeter", "mm": "millimeter",
    "centimeters": "centimeter", "centimeter": "centimeter", "cm": "centimeter",
    "meters": "meter", "meter": "meter", "m": "meter",
    "inches": "inch", "inch": "inch", "in": "inch",
    "feet": "foot", "foot": "foot", "ft": "foot",
    "micron": "micron", "microns": "micron", "um": "micron",
}


def damaged(message: str) -> ConversionError:
    return ConversionError("damaged_input", message)


def triangle_limit(env: ToolEnv | None) -> int:
    """The most triangles a model may have, instances counted (setting ``max_model_triangles``)."""
    value = env.settings.get("max_model_triangles") if env is not None else None
    return int(value) if value else DEFAULT_MAX_TRIANGLES


def check_count(what: str, count: int, limit: int) -> None:
    if count > limit:
        raise ConversionError("input_too_large", f"The model has {count:,} {what}; the limit is {limit:,}.")


@dataclass
class Declared:
    """What a model's header says it holds, when the format says it up front (``None``: not declared)."""

    vertices: int | None = None
    triangles: int | None = None
    notes: list[str] = field(default_factory=list)


CREATION_JSON_MAX = 1024**2  # bytes of a glTF's JSON parsed at job creation (some 25 MB of Python objects)


def inspect(path: Path, fmt: str, env: ToolEnv | None = None, json_max: int | None = None) -> Declared:
    """Check what ``path``'s header declares against its size and the limits; raise before anything loads.

    Cheap enough for job creation: headers only, except OBJ and 3MF, whose vertices are counted by a pass
    over the bytes (1 GB in about a second), and a glTF's JSON, which ``json_max`` bounds: a larger one
    (its Python objects take some 25 times its size) is left for the conversion, which runs under the
    job's memory cap and checks it whole.
    """
    limit = triangle_limit(env)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ConversionError("input_too_large", f"The model is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}.")
    checks: dict[str, Callable[[Path, int], Declared]] = {
        "stl": _stl, "ply": _ply, "off": _off, "obj": _obj, "3mf": _3mf,
        "glb": lambda p, n: _glb(p, n, json_max), "gltf": lambda p, n: _gltf(p, n, json_max),
    }
    declared = checks[fmt](path, size)
    for what, count in (("vertices", declared.vertices), ("triangles", declared.triangles)):
        if count is not None:
            check_count(what, count, limit if what == "triangles" else 3 * limit)
    return declared


def _stl(path: Path, size: int) -> Declared:
    with open(path, "rb") as f:
        head = f.read(84)
    if not head.lstrip().lower().startswith(b"solid") or (len(head) == 84 and binary_stl_fits(head, size)):
        if len(head) < 84:
            raise damaged("The STL file is shorter than its 84-byte header.")
        (count,) = struct.unpack_from("<I", head, 80)
        if not 0 <= size - (84 + 50 * count) < 50:  # a few stray bytes at the end are common
            raise damaged(f"The binary STL declares {count:,} triangles, which take {84 + 50 * count:,} bytes; "
                          f"the file has {size:,}.")
        return Declared(vertices=3 * count, triangles=count)
    return Declared(triangles=(size - 20) // 60)  # ASCII: a facet takes at least ~60 bytes of text


def binary_stl_fits(head: bytes, size: int) -> bool:
    """A binary STL's triangle count (after its 80-byte header) accounts for the file's size."""
    return len(head) >= 84 and 0 <= size - (84 + 50 * struct.unpack_from("<I", head, 80)[0]) < 50


PLY_SIZES = {"char": 1, "uchar": 1, "int8": 1, "uint8": 1, "short": 2, "ushort": 2, "int16": 2, "uint16": 2,
             "int": 4, "uint": 4, "int32": 4, "uint32": 4, "float": 4, "float32": 4, "double": 8, "float64": 8}


def _ply(path: Path, size: int) -> Declared:
    """Each element's count times the least bytes a row can take (binary) or 2 (ASCII: a digit and a
    separator) must fit in what follows the header."""
    with open(path, "rb") as f:
        head = f.read(64 * 1024)
    end = re.search(rb"end_header\r?\n", head)
    if end is None:
        raise damaged("The PLY header has no end_header within its first 64 KB.")
    lines = head[:end.start()].decode("ascii", "replace").splitlines()
    fmt = next((line.split()[1] for line in lines if line.startswith("format ") and len(line.split()) > 1), "")
    if fmt not in ("ascii", "binary_little_endian", "binary_big_endian"):
        raise damaged(f"The PLY format {fmt!r} is not ascii or binary.")
    elements: list[list[Any]] = []  # [name, count, least bytes per row]
    for line in lines:
        words = line.split()
        if words[:1] == ["element"] and len(words) == 3:
            if not words[2].isdigit():
                raise damaged(f"The PLY element {words[1]!r} has no count.")
            elements.append([words[1], int(words[2]), 0])
        elif words[:1] == ["property"] and elements and len(words) >= 3:
            kind = words[2] if words[1] == "list" and len(words) >= 5 else words[1]
            if kind not in PLY_SIZES:
                raise damaged(f"The PLY property type {kind!r} is not one PLY knows.")
            elements[-1][2] += PLY_SIZES[kind]  # a list takes at least its count
    left = size - end.end()
    need = sum(count * (max(row, 1) if fmt != "ascii" else 2) for _, count, row in elements)
    if need > left:
        shown = ", ".join(f"{count:,} {name}" for name, count, _ in elements)
        raise damaged(f"The PLY header declares {shown}, which need at least {need:,} bytes; {left:,} follow it.")
    counts = {name: count for name, count, _ in elements}
    return Declared(vertices=counts.get("vertex"), triangles=counts.get("face"))


def _off(path: Path, size: int) -> Declared:
    with open(path, "rb") as f:
        head = f.read(4096).decode("ascii", "replace")
    lines = [line.split("#", 1)[0].strip() for line in head.splitlines()]
    words = [w for line in lines if line for w in line.split()]
    if not words or not words[0].upper().endswith("OFF"):
        raise damaged("The OFF file does not start with OFF.")
    numbers = words[1:4]
    if len(numbers) < 2 or not all(w.isdigit() for w in numbers[:2]):
        raise damaged("The OFF header has no vertex and face counts.")
    vertices, faces = int(numbers[0]), int(numbers[1])
    if vertices * 6 + faces * 8 > size:  # "0 0 0\n" and "3 0 1 2\n" at the least
        raise damaged(f"The OFF header declares {vertices:,} vertices and {faces:,} faces; the file is only "
                      f"{size:,} bytes.")
    return Declared(vertices=vertices, triangles=faces)


def _obj(path: Path, size: int) -> Declared:
    """Vertex and face lines counted over the whole file; a polygon of n corners counts n - 2 triangles."""
    vertices = triangles = 0
    tail = b"\n"
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            text = tail + chunk
            cut = text.rfind(b"\n")
            whole, tail = text[:cut + 1], text[cut + 1:]
            vertices += whole.count(b"\nv ") + whole.count(b"\nv\t")
            for line in re.findall(rb"\nf[ \t][^\n]*", whole):
                triangles += max(len(line.split()) - 3, 1)
    text = tail + b"\n"
    vertices += text.count(b"\nv ")
    triangles += sum(max(len(line.split()) - 3, 1) for line in re.findall(rb"\nf[ \t][^\n]*", text))
    return Declared(vertices=vertices, triangles=triangles)


def _gltf_json(data: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise damaged(f"The glTF's JSON cannot be read: {exc}"[:300]) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("asset"), dict):
        raise damaged("The glTF's JSON has no asset record.")
    return doc


def _glb(path: Path, size: int, json_max: int | None = None) -> Declared:
    with open(path, "rb") as f:
        header = f.read(20)
        if len(header) < 20:
            raise damaged("The GLB file is shorter than its headers.")
        magic, version, length, chunk_length, chunk_type = struct.unpack("<4sIIII", header)
        if magic != b"glTF" or version != 2:
            raise damaged(f"The GLB is not glTF 2.0 (version {version}).")
        if length != size or 20 + chunk_length > size or chunk_type != 0x4E4F534A:
            raise damaged(f"The GLB declares {length:,} bytes and a JSON chunk of {chunk_length:,}; the file has "
                          f"{size:,}.")
        if json_max is not None and chunk_length > json_max:
            return Declared()  # counted when the job runs
        doc = _gltf_json(f.read(chunk_length))
    return _gltf_counts(doc, embedded_first=True)


def _gltf(path: Path, size: int, json_max: int | None = None) -> Declared:
    if json_max is not None and size > json_max:
        return Declared()  # counted when the job runs
    return _gltf_counts(_gltf_json(path.read_bytes()), embedded_first=False)


def _gltf_counts(doc: dict[str, Any], embedded_first: bool) -> Declared:
    """Refuse external buffers (their bytes are the geometry); count the positions and indices the meshes use.

    External images are left out when loading (the resolver refuses them): the model converts untextured.
    """
    declared = Declared()
    buffers = doc.get("buffers") or []
    for index, buffer in enumerate(buffers if isinstance(buffers, list) else []):
        uri = buffer.get("uri") if isinstance(buffer, dict) else None
        if uri is None and (embedded_first and index == 0):
            continue
        if not isinstance(uri, str) or not uri.startswith("data:"):
            raise ConversionError(
                "unsafe_input", f"The glTF keeps its geometry in another file ({str(uri)[:80]!r}); FileKiln reads "
                                "only the file given. Send a GLB, or a glTF with its buffers embedded.")
    images = doc.get("images") or []
    outside = [i.get("uri") for i in images if isinstance(i, dict) and isinstance(i.get("uri"), str)
               and not i["uri"].startswith("data:")]
    if outside:
        declared.notes.append(f"{len(outside)} texture image(s) kept in other files were left out.")
    accessors = doc.get("accessors") or []
    vertices = triangles = 0
    for mesh in doc.get("meshes") or []:
        for primitive in (mesh.get("primitives") or []) if isinstance(mesh, dict) else []:
            if not isinstance(primitive, dict):
                continue
            position = (primitive.get("attributes") or {}).get("POSITION")
            count = _accessor_count(accessors, position)
            vertices += count
            indices = primitive.get("indices")
            triangles += (_accessor_count(accessors, indices) if indices is not None else count) // 3
    declared.vertices, declared.triangles = vertices, triangles
    return declared


def _accessor_count(accessors: Any, index: Any) -> int:
    if not isinstance(index, int) or not isinstance(accessors, list) or not 0 <= index < len(accessors):
        return 0
    count = accessors[index].get("count", 0) if isinstance(accessors[index], dict) else 0
    return count if isinstance(count, int) and count >= 0 else 0


_VERTEX = re.compile(rb"<(?:\w+:)?vertex[\s/>]")
_TRIANGLE = re.compile(rb"<(?:\w+:)?triangle[\s/>]")


def _3mf(path: Path, size: int) -> Declared:
    """The ZIP's directory and inflation checked as for office files, no entity declarations in its XML, then
    vertices and triangles counted in the model parts as they inflate."""
    limits = ArchiveLimits(entries=MAX_3MF_ENTRIES, total_bytes=MAX_3MF_BYTES)
    try:
        check_zip_directory(path, MAX_3MF_ENTRIES)
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            check_listing((EntryInfo(i.filename, "dir" if i.is_dir() else "file", i.file_size, i.compress_size)
                           for i in infos), limits)
    except zipfile.BadZipFile as exc:
        raise damaged(f"The 3MF is not a readable ZIP container: {exc}.") from None
    check_archive(path)  # every entry inflated, counting, one byte past what it declares at most
    safexml.check_archive(path, (".model", ".rels", ".xml"))
    vertices = triangles = 0
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if not info.filename.lower().endswith(".model"):
                continue
            tail = b""
            with zf.open(info) as member:
                for chunk in iter(lambda: member.read(CHUNK), b""):
                    text = tail + chunk
                    cut = text.rfind(b">") + 1 if len(text) < 2 * CHUNK else len(text)  # tags end at '>'
                    vertices += len(_VERTEX.findall(text, 0, cut))
                    triangles += len(_TRIANGLE.findall(text, 0, cut))
                    tail = text[cut:]
    return Declared(vertices=vertices, triangles=triangles)


# --------------------------------------------------------------------------- loading


class Refusing:
    """A trimesh resolver that reads nothing: every file or URL a model names is refused and remembered."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def get(self, key: str) -> bytes:
        self.asked.append(str(key))
        raise FileNotFoundError(f"{key}: FileKiln reads only the file given")

    __getitem__ = get

    def get_base(self) -> bytes:
        raise FileNotFoundError("no base")

    def write(self, name: str, data: Any) -> None:
        raise PermissionError(f"{name}: nothing is written beside the model")

    def namespaced(self, namespace: str) -> Refusing:
        return self

    def keys(self) -> list[str]:
        return []

    def __contains__(self, key: str) -> bool:
        return False


@contextmanager
def model_errors(what: str) -> Iterator[None]:
    """What trimesh, numpy, lxml or json raise on a damaged model becomes ``damaged_input``."""
    try:
        yield
    except (ConversionError, Cancelled, MemoryError):
        raise
    except OSError as exc:
        if getattr(exc, "errno", None) is not None:
            raise
        raise damaged(f"{what}: {exc}"[:300]) from None
    except Exception as exc:  # noqa: BLE001 - trimesh has no single error type for bad data
        text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise damaged(f"{what}: {text}") from None


TRIMESH_TYPES = {"stl": "stl", "obj": "obj", "ply": "ply", "off": "off", "glb": "glb", "gltf": "gltf", "3mf": "3mf"}


@dataclass
class Loaded:
    scene: trimesh.Scene
    declared: Declared
    refused: list[str]  # what the model named and was not read

    @property
    def units(self) -> str | None:
        units = self.scene.units
        return UNIT_NAMES.get(str(units).lower()) if units else None


def load_model(path: Path, fmt: str, name: str, env: ToolEnv | None = None,
               check_cancelled: Callable[[], None] = lambda: None) -> Loaded:
    """``path`` as a trimesh Scene (meshes only, process=False: vertices as stored), after :func:`inspect`;
    the triangles every instance draws checked against the limit before anything else uses them."""
    import trimesh

    declared = inspect(path, fmt, env)
    check_cancelled()
    resolver = Refusing()
    kwargs: dict[str, Any] = {"process": False}
    if fmt == "obj":
        kwargs.update(skip_materials=True, group_material=False)
    with model_errors(f"{name} cannot be read as a {fmt.upper()} model"):
        data = path.read_bytes()
        if fmt == "stl" and declared.vertices is not None:  # binary: stray bytes past the triangles cut off
            data = data[:84 + 50 * (declared.triangles or 0)]
        scene = trimesh.load_scene(io.BytesIO(data), file_type=TRIMESH_TYPES[fmt], resolver=cast(Any, resolver),
                                   **kwargs)
        del data
    meshes = {key: g for key, g in scene.geometry.items() if isinstance(g, trimesh.Trimesh)}
    dropped = len(scene.geometry) - len(meshes)
    if dropped:
        for key in [key for key in scene.geometry if key not in meshes]:
            scene.delete_geometry(key)
        declared.notes.append(f"{dropped} part(s) that are not triangle meshes (points, lines) were left out.")
    if not meshes or not any(len(m.faces) for m in meshes.values()):
        raise damaged(f"{name} holds no triangles.")
    check_count("triangles, instances counted", instanced_triangles(scene), triangle_limit(env))
    if resolver.asked:
        shown = ", ".join(repr(key[:80]) for key in resolver.asked[:5])
        declared.notes.append(f"Files the model refers to were not read: {shown}.")
    return Loaded(scene, declared, resolver.asked)


def instanced_triangles(scene: trimesh.Scene) -> int:
    """Triangles the scene draws: each mesh's faces once per node that places it."""
    total = 0
    for node in scene.graph.nodes_geometry:
        _, key = scene.graph[node]
        mesh = scene.geometry.get(key)
        total += len(mesh.faces) if mesh is not None and hasattr(mesh, "faces") else 0
    return total
