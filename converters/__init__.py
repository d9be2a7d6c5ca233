"""FileKiln's tool catalogue: pure conversion code, no web, queue or Qt imports."""

import sys
from types import ModuleType

# PyMuPDF 2 switches on pymupdf-layout (an ONNX layout model that pymupdf4llm brings along) as it is
# imported: it builds its sessions and runs a dummy inference, some 0.4 s of CPU in every process that
# imports PyMuPDF. When several conversion processes start at once on a small machine, ONNX Runtime's
# spinning thread pools starve each other and the import took minutes. Nothing in FileKiln uses the
# layout model; pymupdf4llm's Markdown falls back to its own page analysis without it.
sys.modules.setdefault("pymupdf.layout", None)  # type: ignore[arg-type]

# PyMuPDF 2 also imports pymupdf4llm as it is imported, for its own to_markdown (which FileKiln does not
# call), and pymupdf4llm brings NumPy and ONNX Runtime: some 0.45 s of CPU more in every process that
# opens a PDF, a conversion child's start among them. The entry below keeps PyMuPDF from importing it;
# the tools that use pymupdf4llm import it through :func:`pymupdf4llm`, which takes the entry away.
sys.modules.setdefault("pymupdf4llm", None)  # type: ignore[arg-type]


def pymupdf4llm() -> ModuleType:
    """The pymupdf4llm module, imported now if it was not (ImportError when it is not installed)."""
    if "pymupdf4llm" in sys.modules and sys.modules["pymupdf4llm"] is None:
        del sys.modules["pymupdf4llm"]
    import pymupdf4llm as module

    return module
