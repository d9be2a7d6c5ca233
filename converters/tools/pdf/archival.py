# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""``pdf-to-pdfa``: PDF/A-2b for long-term archiving, written by Ghostscript when it is installed."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from converters.base import Context, ConversionError, Engine, InputFile, NoParams, atomic_output
from converters.engines.mupdf import PYMUPDF, check_pdf
from converters.engines.pictures import PILLOW
from converters.engines.procs import run_command, scratch_dir
from converters.tools.pdf.common import PdfTool, stem_of

if TYPE_CHECKING:
    import pymupdf

GHOSTSCRIPT = Engine(
    name="Ghostscript",
    executable="gs",
    install_hint="Install it from your package manager (apt install ghostscript, dnf install ghostscript, "
                 "brew install ghostscript) or from ghostscript.com, so that 'gs' is on the PATH.",
)

# The output intent every PDF/A file needs: an sRGB profile, with the colours converted to RGB to match.
DEFINITION = """%!
/ICCProfile ({icc}) def
[/_objdef {{icc_PDFA}} /type /stream /OBJ pdfmark
[{{icc_PDFA}} << /N 3 >> /PUT pdfmark
[{{icc_PDFA}} ICCProfile (r) file /PUT pdfmark
[/_objdef {{OutputIntent_PDFA}} /type /dict /OBJ pdfmark
[{{OutputIntent_PDFA}} <<
  /Type /OutputIntent /S /GTS_PDFA1 /DestOutputProfile {{icc_PDFA}}
  /OutputConditionIdentifier (sRGB) /Info (sRGB IEC61966-2.1)
>> /PUT pdfmark
[{{Catalog}} << /OutputIntents [ {{OutputIntent_PDFA}} ] >> /PUT pdfmark
"""
PART = re.compile(r"pdfaid:part(?:>|\s*=\s*['\"])\s*2\b")
CONFORMANCE = re.compile(r"pdfaid:conformance(?:>|\s*=\s*['\"])\s*B\b", re.IGNORECASE)


def postscript_string(text: str) -> str:
    """``text`` escaped for a PostScript string literal: backslashes and parentheses."""
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def ghostscript_command(gs: str, source: Path, target: Path, definition: Path, icc: Path) -> list[str]:
    """Ghostscript's pdfwrite as a PDF/A-2b writer, sandboxed: it may read the ICC profile and nothing more."""
    return [
        gs, "-dSAFER", "-dBATCH", "-dNOPAUSE", "-dNOOUTERSAVE", "-q",
        "-sDEVICE=pdfwrite", "-dPDFA=2", "-dPDFACompatibilityPolicy=1",  # drop what PDF/A forbids, and say so
        "-sColorConversionStrategy=RGB", "-dEmbedAllFonts=true", "-dSubsetFonts=true",
        f"--permit-file-read={icc}", f"-sOutputFile={target}", str(definition), str(source),
    ]


def write_definition(folder: Path) -> tuple[Path, Path]:
    """The sRGB profile (made by Pillow's littleCMS) and the PostScript that declares it the output intent."""
    from PIL import ImageCms

    icc = folder / "srgb.icc"
    icc.write_bytes(ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())
    definition = folder / "pdfa.ps"
    definition.write_text(DEFINITION.format(icc=postscript_string(str(icc))), encoding="latin-1")
    return definition, icc


def declared_pdfa(path: Path) -> bool:
    """Whether the PDF's XMP declares PDF/A-2b."""
    import pymupdf

    with pymupdf.open(path) as doc:
        xmp = doc.get_xml_metadata() or ""
    return bool(PART.search(xmp) and CONFORMANCE.search(xmp))


class PdfToPdfa(PdfTool):
    """Rewrite a PDF as PDF/A-2b: fonts embedded, colours tied to sRGB, nothing that needs the outside world."""

    id = "pdf-to-pdfa"
    title = "PDF to PDF/A"
    description = (
        "Convert a PDF to PDF/A-2b for long-term archiving: every font embedded, colours in sRGB, no scripts, "
        "no external content. Needs Ghostscript."
    )
    params = NoParams
    engines = (PYMUPDF, PILLOW, GHOSTSCRIPT)
    timeout_seconds = 1800.0

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return int(doc.page_count)  # Ghostscript interprets and rewrites every page

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        gs = shutil.which(GHOSTSCRIPT.executable or "gs")
        if gs is None:
            raise ConversionError("engine_missing", f"Ghostscript is not installed. {GHOSTSCRIPT.install_hint}")
        self.open_checked(ctx, source).close()  # password, damage and page-limit checks first
        progress(0.05)
        target = ctx.output_path(stem_of(source), "pdf")
        with scratch_dir() as folder, atomic_output(target, require_content=True) as tmp:
            definition, icc = write_definition(folder)
            run_command(ghostscript_command(gs, source.path, tmp, definition, icc), timeout=self.timeout_seconds,
                        cancelled=ctx.cancelled, engine="Ghostscript")
            progress(0.9)
            check_pdf(tmp)
            if not declared_pdfa(tmp):
                raise ConversionError("engine_failed", "Ghostscript did not produce a PDF/A-2b file.")
        progress(1.0)
