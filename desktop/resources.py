"""Where the app's bundled files are: the top-level ``resources/`` folder (icons, bundled data).

From a source tree (or an editable install) that is ``<repository>/resources``; in a PyInstaller build the spec
copies it to ``<sys._MEIPASS>/resources`` (the ``_internal`` folder of the one-folder app, the unpack folder of
the one-file app).
"""

from __future__ import annotations

import sys
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parent.parent


def resources_dir() -> Path:
    """The resources folder of this run: the frozen app's, or the source tree's."""
    if getattr(sys, "frozen", False):
        bundle = getattr(sys, "_MEIPASS", None)
        base = Path(bundle) if bundle else Path(sys.executable).resolve().parent
        return base / "resources"
    return SOURCE_ROOT / "resources"


def resource(*parts: str) -> Path:
    """A path inside the resources folder, e.g. ``resource("icons", "filekiln.svg")``; it may not exist."""
    return resources_dir().joinpath(*parts)
