"""PDF tools on PyMuPDF."""

from converters.base import Tool
from converters.tools.pdf.archival import PdfToPdfa
from converters.tools.pdf.compare import PdfCompare
from converters.tools.pdf.compress import PdfCompress
from converters.tools.pdf.content import PdfFlatten, PdfRemoveAnnotations, PdfRemoveBlankPages
from converters.tools.pdf.forms import PdfFormFields, PdfFormFill
from converters.tools.pdf.grayscale import PdfGrayscale
from converters.tools.pdf.images import PdfAddImage, PdfExtractImages
from converters.tools.pdf.imposition import PdfBooklet, PdfNUp
from converters.tools.pdf.layout import PdfCrop, PdfOverlay, PdfPageNumbers, PdfScale
from converters.tools.pdf.organize import PdfOrganize
from converters.tools.pdf.pages import PdfDeletePages, PdfExtractPages, PdfMerge, PdfRotate, PdfSplit
from converters.tools.pdf.redact import PdfRedact
from converters.tools.pdf.render import ImageToPdf, PdfToImage, PdfToText
from converters.tools.pdf.sanitize import PdfSanitize
from converters.tools.pdf.security import PdfMetadata, PdfProtect, PdfUnlock, PdfWatermark
from converters.tools.pdf.signing import PdfSign, PdfVerifySignatures
from converters.tools.pdf.structure import PdfAttachments, PdfOutline

TOOLS: list[Tool] = [
    PdfCompress(), PdfMerge(), PdfSplit(), PdfRotate(), PdfExtractPages(), PdfDeletePages(),
    PdfToImage(), ImageToPdf(), PdfToText(), PdfProtect(), PdfUnlock(), PdfWatermark(), PdfMetadata(),
]
TOOLS += [PdfRedact(), PdfSanitize()]
TOOLS += [PdfSign(), PdfVerifySignatures()]
TOOLS += [PdfCompare()]
TOOLS += [PdfToPdfa()]
TOOLS += [PdfOrganize(), PdfOutline(), PdfAttachments(), PdfFormFields(), PdfFormFill()]
TOOLS += [PdfPageNumbers(), PdfCrop(), PdfScale(), PdfNUp(), PdfBooklet(), PdfOverlay()]
TOOLS += [PdfExtractImages(), PdfRemoveBlankPages(), PdfAddImage(), PdfFlatten(), PdfRemoveAnnotations(),
          PdfGrayscale()]
