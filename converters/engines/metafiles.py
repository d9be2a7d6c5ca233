# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""Windows metafiles (EMF, WMF): their headers read and checked, and the drawing made a PDF by LibreOffice Draw.

LibreOffice is the engine (:mod:`converters.engines.office`: its warm instance, hardened profile, timeout
and slot). Draw opens a metafile as one picture on a page of its default size, at the picture's own size,
centred, shrunk to fit when it is larger. The PDF it exports is then cut back to that picture by PyMuPDF:
the rectangle is worked out from the size the metafile's header states (EMF: its frame in 0.01 mm; WMF:
the placeable header's box in its units per inch), or, for a WMF that states none, from what is drawn.
Every other output (PNG, WebP, SVG) is made from that PDF, so there is one LibreOffice run per file.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from converters.base import ConversionError, ToolEnv

METAFILE_FORMATS = ("emf", "wmf")
MAX_METAFILE_BYTES = 100 * 1024**2
MAX_RECORDS = 5_000_000
MAX_SIDE_POINTS = 14_400.0  # the largest page a PDF may have (200 inches)
MIN_SIDE_POINTS = 0.5
_EMR_HEADER = struct.Struct("<II4i4i4sIIIHHIIII2i2i")  # type, size, bounds, frame, signature ... millimetres
_PLACEABLE = struct.Struct("<IH4hHIH")  # key, handle, left top right bottom, units per inch, reserved, checksum
_WMF_HEADER = struct.Struct("<HHHIHIH")  # type, header words, version, size in words, objects, largest record


@dataclass(frozen=True)
class Metafile:
    """What a metafile's header says: its format and, when it states one, its size in points."""

    format: str
    size: tuple[float, float] | None


def read_header(path: Path, fmt: str) -> Metafile:
    """The header of an EMF or WMF file, checked against the file and the limits."""
    length = path.stat().st_size
    if length > MAX_METAFILE_BYTES:
        raise ConversionError("input_too_large", f"The metafile is over {MAX_METAFILE_BYTES // 1024**2} MB.")
    with open(path, "rb") as f:
        head = f.read(128)
    return _emf_header(head, length) if fmt == "emf" else _wmf_header(head, length)


def _emf_header(head: bytes, length: int) -> Metafile:
    if len(head) < _EMR_HEADER.size:
        raise ConversionError("damaged_input", "The EMF file is shorter than its header.")
    fields = _EMR_HEADER.unpack_from(head)
    record_size, frame, signature, declared, records = fields[1], fields[6:10], fields[10], fields[12], fields[13]
    if signature != b" EMF" or record_size < 88 or record_size > length:
        raise ConversionError("damaged_input", "The EMF header is not valid.")
    if declared > length:
        raise ConversionError("damaged_input", f"The EMF header declares {declared:,} bytes; the file has {length:,}.")
    if records > MAX_RECORDS:
        raise ConversionError("input_too_large", f"The EMF has {records:,} records; at most {MAX_RECORDS:,} are read.")
    width, height = (frame[2] - frame[0]) / 100 * 72 / 25.4, (frame[3] - frame[1]) / 100 * 72 / 25.4
    return Metafile("emf", _checked((width, height)))


def _wmf_header(head: bytes, length: int) -> Metafile:
    size = None
    at = 0
    if head[:4] == b"\xd7\xcd\xc6\x9a":
        if len(head) < _PLACEABLE.size:
            raise ConversionError("damaged_input", "The WMF file is shorter than its header.")
        _, _, left, top, right, bottom, inch, _, _ = _PLACEABLE.unpack_from(head)
        if inch <= 0:
            raise ConversionError("damaged_input", "The WMF header states no units per inch.")
        size = _checked((abs(right - left) / inch * 72, abs(bottom - top) / inch * 72))
        at = _PLACEABLE.size
    if len(head) < at + _WMF_HEADER.size:
        raise ConversionError("damaged_input", "The WMF file is shorter than its header.")
    kind, words, _, total_words, _, largest, _ = _WMF_HEADER.unpack_from(head, at)
    if kind not in (1, 2) or words != 9:
        raise ConversionError("damaged_input", "The WMF header is not valid.")
    if total_words * 2 > length - at or largest * 2 > length - at:
        raise ConversionError("damaged_input", f"The WMF header declares {total_words * 2:,} bytes; the file has "
                                               f"{length - at:,}.")
    return Metafile("wmf", size)


def _checked(size: tuple[float, float]) -> tuple[float, float]:
    width, height = size
    if width < MIN_SIDE_POINTS or height < MIN_SIDE_POINTS:
        raise ConversionError("damaged_input", "The metafile's header gives it no size.")
    if width > MAX_SIDE_POINTS or height > MAX_SIDE_POINTS:
        raise ConversionError("input_too_large", f"The metafile is {width / 72:,.0f} x {height / 72:,.0f} inches; "
                                                 f"at most {MAX_SIDE_POINTS / 72:.0f} inches a side are drawn.")
    return width, height


def placed(page: tuple[float, float], size: tuple[float, float]) -> tuple[float, float, float, float]:
    """Where Draw puts a picture of ``size`` on a page of ``page`` (points): centred, shrunk to fit."""
    scale = min(1.0, page[0] / size[0], page[1] / size[1])
    width, height = size[0] * scale, size[1] * scale
    left, top = (page[0] - width) / 2, (page[1] - height) / 2
    return left, top, left + width, top + height


def to_pdf(env: ToolEnv, source: Path, header: Metafile, work: Path, progress: Callable[[float], None],
           cancelled: Callable[[], bool], font_dirs: tuple[Path, ...] = ()) -> bytes:
    """The metafile as a one-page vector PDF of its own size, drawn by LibreOffice."""
    import pymupdf

    from converters.engines.office import office_convert

    drawn = work / "drawn.pdf"
    office_convert(env, source, header.format, drawn, "pdf", progress, cancelled, font_dirs)
    if not drawn.is_file() or drawn.stat().st_size == 0:
        raise ConversionError("damaged_input", "LibreOffice could not draw the metafile.")
    with pymupdf.open(drawn) as page_doc:
        page = page_doc[0]
        clip: object
        if header.size is not None:
            clip = pymupdf.Rect(placed((page.rect.width, page.rect.height), header.size))
            size = header.size
        else:
            clip = drawn_area(page)
            size = (clip.width, clip.height)  # type: ignore[attr-defined]
        with pymupdf.open() as out:
            target = out.new_page(width=size[0], height=size[1])
            target.show_pdf_page(target.rect, page_doc, 0, clip=clip)
            return bytes(out.tobytes(garbage=3, deflate=True))


def drawn_area(page: object) -> object:
    """The rectangle around everything drawn on ``page`` (a WMF that states no size of its own), less the
    page's own white background."""
    import pymupdf

    whole = page.rect  # type: ignore[attr-defined]
    area = pymupdf.Rect()
    for _, box in page.get_bboxlog():  # type: ignore[attr-defined]
        rect = pymupdf.Rect(box)
        if rect.width * rect.height < 0.98 * whole.width * whole.height:
            area |= rect
    area &= whole
    if area.is_empty or area.width < MIN_SIDE_POINTS or area.height < MIN_SIDE_POINTS:
        raise ConversionError("damaged_input", "The metafile draws nothing.")
    return area
