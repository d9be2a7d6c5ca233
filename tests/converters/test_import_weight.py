"""What a conversion child imports before its first job: PyMuPDF, Pillow and the catalogue, not what
PyMuPDF 2 would bring along by itself (pymupdf4llm, and with it NumPy and ONNX Runtime: some 0.45 s of
CPU in every child's start). The Markdown that needs pymupdf4llm is tested in test_pdf_tools.py."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

HEAVY = ("pymupdf4llm", "numpy", "onnxruntime", "pymupdf.layout")


def test_a_warm_child_has_not_imported_pymupdf4llm_numpy_or_onnx_runtime() -> None:
    probe = ("import json, sys; from localapi.core.jobs.child import _warm_up; _warm_up(); import pymupdf; "
             "pymupdf.open().close(); "
             f"print(json.dumps([m for m in {list(HEAVY)!r} if sys.modules.get(m) is not None]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


def test_pymupdf4llm_is_there_for_the_tools_that_ask_for_it() -> None:
    probe = ("import converters, pymupdf, sys; m = converters.pymupdf4llm(); "
             "assert sys.modules['pymupdf4llm'] is m and hasattr(m, 'to_markdown'); print('ok')")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
