"""FileKiln's tool catalogue: pure conversion code, no web, queue or Qt imports."""

import sys

# PyMuPDF 2 switches on pymupdf-layout (an ONNX layout model that pymupdf4llm brings along) as it is
# imported: it builds its sessions and runs a dummy inference, some 0.4 s of CPU in every process that
# imports PyMuPDF. When several conversion processes start at once on a small machine, ONNX Runtime's
# spinning thread pools starve each other and the import took minutes. Nothing in FileKiln uses the
# layout model; pymupdf4llm's Markdown falls back to its own page analysis without it.
sys.modules.setdefault("pymupdf.layout", None)  # type: ignore[arg-type]
