"""``cad-convert``: a DXF drawing as SVG, PDF or PNG, through ezdxf's drawing add-on (its own SVG backend, and
its PyMuPDF backend for PDF and PNG).

Nothing outside the file is read: IMAGE entities are drawn as their frames (the picture file they name is
never opened), XREFs are blocks ezdxf never loads (drawn empty), and fonts are looked up by name among the
installed ones only. Block references are counted before drawing, so a handful of nested INSERTs or an
MINSERT array that would expand to billions of copies is refused unread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from converters.base import (
    CamelParams,
    Cancelled,
    Context,
    ConversionError,
    Engine,
    InputFile,
    Tool,
    ToolEnv,
    atomic_output,
)
from converters.engines.mupdf import PYMUPDF
from converters.inputs.limits import pixel_limit, too_large

if TYPE_CHECKING:
    from ezdxf.document import Drawing
    from ezdxf.layouts.layout import Layout

EZDXF = Engine("ezdxf", module="ezdxf", distribution="ezdxf", install_hint="pip install ezdxf")
MAX_DXF_BYTES = 256 * 1024**2
BINARY_DXF = b"AutoCAD Binary DXF\r\n\x1a\x00"
MAX_DRAWN = 2_000_000  # entities drawn, every copy a block reference makes counted
PAGES_MM = {"a4": (210, 297), "a3": (297, 420), "a2": (420, 594), "a1": (594, 841), "a0": (841, 1189),
            "letter": (215.9, 279.4), "tabloid": (279.4, 431.8)}
AUTO_MAX_MM = 5000  # an auto-sized page is the drawing at 1 unit = 1 mm, up to this side
MARGIN_MM = 10


class CadConvertParams(CamelParams):
    page: Literal["auto", "a4", "a3", "a2", "a1", "a0", "letter", "tabloid"] = Field(
        "auto", description="Paper size: auto (the drawing's extents at 1 unit = 1 mm, at most 5 m a side) or a "
                            "sheet, turned to the drawing's orientation, the drawing scaled to fit.",
        title="Paper size",
        json_schema_extra={
            "x-enumLabels": {
                "auto": "Fit the drawing",
                "a4": "A4",
                "a3": "A3",
                "a2": "A2",
                "a1": "A1",
                "a0": "A0",
                "letter": "Letter",
                "tabloid": "Tabloid",
            },
        },
    )
    background: Literal["white", "black"] = Field(
        "white", description="Background colour; on black, lines drawn in 'white/black' (colour 7) show white.",
        json_schema_extra={"x-enumLabels": {"white": "White", "black": "Black"}},
    )
    lineweight_scaling: float = Field(
        1.0, ge=0, le=10, description="Multiplies every line weight; 0 draws all lines at the thinnest width.")
    layout: str = Field(
        "Model", min_length=1, max_length=255,
        description="What to draw: 'Model' (model space) or the name of a paper-space layout.")
    dpi: int = Field(150, ge=36, le=600, description="Resolution of the PNG (SVG and PDF are vector).")


class CadConvert(Tool):
    id = "cad-convert"
    category = "3d"
    title = "Convert CAD drawing"
    description = (
        "Draw a DXF drawing (ASCII or binary, any version ezdxf reads) as SVG, PDF or PNG: model space or a "
        "paper-space layout, on white or black, on an automatic page or a sheet size. Damaged files are "
        "recovered where ezdxf can. Pictures and external references the drawing names are not read."
    )
    accepts = ("dxf",)
    produces = ("svg", "pdf", "png")
    params = CadConvertParams
    engines: ClassVar[tuple[Engine, ...]] = (EZDXF, PYMUPDF)
    max_input_size_bytes: ClassVar[int] = MAX_DXF_BYTES
    timeout_seconds: ClassVar[float] = 600.0

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        for source in inputs:
            size = source.path.stat().st_size
            if size > MAX_DXF_BYTES:
                raise ConversionError("input_too_large", f"The drawing is {size:,} bytes; the limit is "
                                                         f"{MAX_DXF_BYTES:,}.")

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: CadConvertParams = ctx.params
        doc = read_drawing(source)
        progress(0.3)
        ctx.check_cancelled()
        layout = pick_layout(doc, params.layout)
        count = drawn_entities(doc, layout, ctx.check_cancelled)
        if count == 0 and "layout" not in params.model_fields_set:  # an empty model space: the first sheet drawn
            for name in doc.layouts.names_in_taborder():
                if name.lower() != "model" and drawn_entities(doc, doc.paperspace(name), ctx.check_cancelled):
                    layout = doc.paperspace(name)
                    ctx.notes.append(f"{source.name}: the model space is empty; the layout {name!r} was drawn.")
                    count = 1
                    break
        if count == 0:
            raise ConversionError("no_output", f"The layout {layout.name!r} of {source.name} draws nothing.")
        data = draw(doc, layout, params, ctx.output_format, ctx.env)
        progress(0.95)
        with atomic_output(ctx.output_path(source.name or source.path.name, ctx.output_format)) as tmp:
            tmp.write_bytes(data)
        progress(1.0)


def read_drawing(source: InputFile) -> Drawing:
    """The DXF read by ezdxf (recover mode for text DXF: what a damaged file still holds), its folder forgotten."""
    from ezdxf import recover
    from ezdxf.filemanagement import readfile
    from ezdxf.lldxf.const import DXFError

    with open(source.path, "rb") as f:
        binary = f.read(22) == BINARY_DXF
    try:
        if binary:  # recover mode reads text only; binary DXF has no line structure to recover anyway
            doc = readfile(str(source.path))
            auditor = doc.audit()
        else:
            doc, auditor = recover.readfile(str(source.path))
    except (DXFError, UnicodeDecodeError, ValueError, IndexError, TypeError, KeyError, AttributeError) as exc:
        text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise ConversionError("damaged_input", f"{source.name} cannot be read as a DXF drawing: {text}") from None
    except RecursionError:
        raise ConversionError("damaged_input", f"{source.name} nests its structures too deeply.") from None
    if auditor.has_errors:
        errors = len(auditor.errors)
        if not len(doc.modelspace()):
            raise ConversionError("damaged_input", f"{source.name} is damaged ({errors} errors) and nothing is left "
                                                   "to draw.")
    doc.filename = None  # no folder for the add-on to look for pictures in
    return doc


def pick_layout(doc: Drawing, name: str) -> Layout:
    if name.lower() in ("model", "modelspace", "model space"):
        return doc.modelspace()
    names = [n for n in doc.layouts.names() if n.lower() != "model"]
    found = next((n for n in names if n == name), None) or next((n for n in names if n.lower() == name.lower()), None)
    if found is None:
        shown = ", ".join(repr(n) for n in names[:20]) or "none"
        raise ConversionError("invalid_params", f"The drawing has no layout {name!r}; its paper-space layouts: "
                                                f"{shown}.")
    return doc.paperspace(found)


def drawn_entities(doc: Drawing, layout: Layout, check_cancelled: Callable[[], None]) -> int:
    """How many entities drawing ``layout`` draws, each block reference counted as copies of its block
    (MINSERT arrays times rows and columns); refuse past :data:`MAX_DRAWN` or on a block that contains itself."""
    cost: dict[str, int] = {}
    visiting: set[str] = set()

    def of_block(name: str) -> int:
        if name in cost:
            return cost[name]
        if name in visiting:
            raise ConversionError("damaged_input", f"The block {name[:80]!r} contains itself.")
        block = doc.blocks.get(name)
        if block is None:
            return 0
        visiting.add(name)
        cost[name] = of_entities(block)
        visiting.discard(name)
        return cost[name]

    def of_entities(entities: Any) -> int:
        total = 0
        for n, entity in enumerate(entities):
            if n % 10_000 == 0:
                check_cancelled()
            if entity.dxftype() == "INSERT":
                copies = max(int(entity.dxf.get("row_count", 1)), 1) * max(int(entity.dxf.get("column_count", 1)), 1)
                total += 1 + copies * of_block(entity.dxf.name)
            else:
                total += 1
            if total > MAX_DRAWN:
                raise ConversionError("input_too_large", f"The drawing draws more than {MAX_DRAWN:,} entities once "
                                                         "its block references are expanded.")
        return total

    return of_entities(layout)


def draw(doc: Drawing, layout: Layout, params: CadConvertParams, fmt: str, env: ToolEnv) -> bytes:
    from ezdxf.addons.drawing import layout as pages
    from ezdxf.addons.drawing.config import BackgroundPolicy, Configuration, ImagePolicy
    from ezdxf.addons.drawing.frontend import Frontend
    from ezdxf.addons.drawing.properties import RenderContext
    from ezdxf.addons.drawing.pymupdf import PyMuPdfBackend
    from ezdxf.addons.drawing.svg import SVGBackend

    context = RenderContext(doc)
    context.document_dir = None
    config = Configuration(
        background_policy=BackgroundPolicy.WHITE if params.background == "white" else BackgroundPolicy.BLACK,
        lineweight_scaling=params.lineweight_scaling,
        image_policy=ImagePolicy.RECT,  # a frame where the picture goes: its file is never opened
        hatching_timeout=10.0,
    )
    backend: SVGBackend | PyMuPdfBackend = SVGBackend() if fmt == "svg" else PyMuPdfBackend()
    try:
        Frontend(context, backend, config=config).draw_layout(layout, finalize=True)
    except (ConversionError, Cancelled, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - the add-on has no single error type for odd entities
        raise ConversionError("damaged_input", f"The drawing cannot be drawn: {exc}"[:300]) from None
    page = page_for(backend, params.page)
    settings = pages.Settings(fit_page=True)
    if isinstance(backend, SVGBackend):
        return backend.get_string(page, settings=settings).encode()
    if fmt == "pdf":
        return bytes(backend.get_pdf_bytes(page, settings=settings))
    width, height = page_mm(backend, page)
    pixels = (width / 25.4 * params.dpi) * (height / 25.4 * params.dpi)
    if pixels > pixel_limit(env):
        raise too_large(f"The drawing at {params.dpi} dpi", pixels, pixel_limit(env))
    return bytes(backend.get_pixmap_bytes(page, fmt="png", settings=settings, dpi=params.dpi))


def page_for(backend: Any, name: str) -> Any:
    """A sheet turned to the drawing's orientation, or an automatic page (1 unit = 1 mm, capped)."""
    from ezdxf.addons.drawing import layout as pages

    margins = pages.Margins.all(MARGIN_MM)
    if name == "auto":
        return pages.Page(0, 0, pages.Units.mm, margins, max_width=AUTO_MAX_MM, max_height=AUTO_MAX_MM)
    short, long = PAGES_MM[name]
    box = backend.player().bbox()
    wide = box.has_data and box.size.x > box.size.y
    return pages.Page(long if wide else short, short if wide else long, pages.Units.mm, margins)


def page_mm(backend: Any, page: Any) -> tuple[float, float]:
    """The page's size in mm once an automatic one is worked out from the drawing's extents."""
    if page.width and page.height:
        return float(page.width), float(page.height)
    box = backend.player().bbox()
    if not box.has_data:
        return 100.0, 100.0
    width = min(box.size.x + 2 * MARGIN_MM, AUTO_MAX_MM)
    height = min(box.size.y + 2 * MARGIN_MM, AUTO_MAX_MM)
    return float(width), float(height)
