"""PyMuPDF 2.x: the layout engine (pymupdf.layout, from pymupdf-layout) that pymupdf4llm uses for Markdown
reads its ONNX networks and config from pymupdf/layout/resources at run time. pyinstaller-hooks-contrib has no
hook for it. The default bundle leaves it out (51 MB of ONNX networks; pymupdf4llm then uses its rule-based
Markdown); ``FILEKILN_BUNDLE_WITH=pymupdf.layout`` puts it in, and then this hook collects its files.
Headers and static libraries (pymupdf/mupdf-devel) are dropped by the spec."""

import os

from PyInstaller.utils.hooks import collect_data_files, collect_submodules, get_package_paths

hiddenimports = []
datas = []
_wanted = "pymupdf.layout" in os.environ.get("FILEKILN_BUNDLE_WITH", "").replace(" ", "").split(",")
_, package_dir = get_package_paths("pymupdf")
if _wanted and os.path.isdir(os.path.join(package_dir, "layout")):
    hiddenimports = collect_submodules("pymupdf.layout")
    datas = collect_data_files("pymupdf.layout", excludes=["**/__pycache__"])
