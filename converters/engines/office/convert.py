"""Converting one document with LibreOffice: a warm instance when there is one, a cold start otherwise."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from converters.base import ConversionError, ToolEnv
from converters.engines.office.instances import OFFICE, get_pool
from converters.engines.office.locate import (
    DEFAULT_TIMEOUT,
    INSTALL_HINT,
    cold_command,
    find_soffice,
    find_uno_python,
    font_env,
    profile_base,
    release_pipes,
    seed_profile,
)
from converters.engines.procs import run_command

# Export filters by (family, target format); the family comes from the input format.
FAMILY = {
    "doc": "writer", "docx": "writer", "odt": "writer", "rtf": "writer", "txt": "writer", "html": "writer",
    "xls": "calc", "xlsx": "calc", "ods": "calc", "csv": "calc",
    "ppt": "impress", "pptx": "impress", "odp": "impress",
    "emf": "draw", "wmf": "draw",  # metafiles open in Draw as one picture on one page
}


FILTERS = {
    ("writer", "pdf"): "writer_pdf_Export",
    ("calc", "pdf"): "calc_pdf_Export",
    ("impress", "pdf"): "impress_pdf_Export",
    ("draw", "pdf"): "draw_pdf_Export",
    ("writer", "docx"): "MS Word 2007 XML",
    ("writer", "odt"): "writer8",
    ("writer", "rtf"): "Rich Text Format",
    ("writer", "txt"): "Text (encoded)",
    ("writer", "html"): "HTML (StarWriter)",
    ("calc", "csv"): "Text - txt - csv (StarCalc)",
    ("calc", "xlsx"): "Calc MS Excel 2007 XML",
    ("calc", "ods"): "calc8",
    ("impress", "pptx"): "Impress MS PowerPoint 2007 XML",
    ("impress", "odp"): "impress8",
}


# CSV is read as UTF-8, comma-separated, double-quoted; written the same way.
CSV_OPTIONS = "44,34,76,1"


STORE_OPTIONS = {("writer", "txt"): "UTF8", ("calc", "csv"): CSV_OPTIONS}


LOAD_FILTERS = {"csv": ("Text - txt - csv (StarCalc)", CSV_OPTIONS),
                "emf": ("EMF - MS Windows Metafile", None), "wmf": ("WMF - MS Windows Metafile", None)}


def office_convert(
    env: ToolEnv,
    source: Path,
    source_format: str,
    target: Path,
    target_format: str,
    progress: Callable[[float], None],
    cancelled: Callable[[], bool],
    font_dirs: Sequence[Path] = (),
) -> int:
    """Convert ``source`` to ``target`` with LibreOffice; return the page count when known.

    LibreOffice saves into a folder of its own beside ``target`` (it keeps lock and temp
    files next to the document it writes), and the result is moved into place: a killed
    or failed conversion leaves nothing behind. Raises ``ConversionError("engine_missing")``
    when LibreOffice is not installed.
    """
    staging = target.parent / f".office-{uuid.uuid4().hex}"
    staging.mkdir()
    try:
        staged = staging / target.name
        pages = _office_convert(env, source, source_format, staged, target_format, progress, cancelled, font_dirs)
        if staged.exists():
            os.replace(staged, target)
        return pages
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _office_convert(
    env: ToolEnv,
    source: Path,
    source_format: str,
    target: Path,
    target_format: str,
    progress: Callable[[float], None],
    cancelled: Callable[[], bool],
    font_dirs: Sequence[Path] = (),
) -> int:
    soffice = find_soffice(env.settings)
    if soffice is None:
        raise ConversionError("engine_missing", f"This format needs LibreOffice, which was not found. {INSTALL_HINT}")
    family = FAMILY.get(source_format)
    filter_name = FILTERS.get((family or "", target_format))
    if family is None or filter_name is None:
        raise ConversionError("unsupported_format", f"LibreOffice cannot convert {source_format} to {target_format}")
    timeout = float(env.settings.get("office_timeout_seconds", DEFAULT_TIMEOUT))
    python = None if env.settings.get("office_mode") == "cold" else find_uno_python(env.settings, soffice)
    if python is None:
        return _cold_convert(env, soffice, source, source_format, target, target_format, timeout, cancelled, font_dirs)
    load_filter, load_options = LOAD_FILTERS.get(source_format, (None, None))
    request = {
        "input": str(source.resolve()),
        "output": str(target.resolve()),
        "filter": filter_name,
        "load_filter": load_filter,
        "load_options": load_options,
        "store_options": STORE_OPTIONS.get((family, target_format)),
    }
    pool = get_pool(env, soffice, python, font_dirs)
    instance = pool.borrow(cancelled)
    try:
        try:
            return instance.convert(request, timeout, progress, cancelled)
        except ConversionError as exc:
            if exc.code != "engine_failed":
                raise
            # The instance failed under us (it may have been broken by an earlier document): once more, fresh.
            return instance.convert(request, timeout, progress, cancelled)
    finally:
        pool.give_back(instance)


def _cold_convert(
    env: ToolEnv,
    soffice: str,
    source: Path,
    source_format: str,
    target: Path,
    target_format: str,
    timeout: float,
    cancelled: Callable[[], bool],
    font_dirs: Sequence[Path],
) -> int:
    """One fresh soffice for one file, with its own throw-away hardened profile."""
    base = profile_base(env)
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base, prefix="cold-") as tmp:
        work = Path(tmp)
        profile = work / "profile"
        seed_profile(profile)
        out_dir = work / "out"
        out_dir.mkdir()
        tmp_dir = work / "tmp"
        tmp_dir.mkdir()
        convert_to = target_format
        family = FAMILY[source_format]
        if (family, target_format) in STORE_OPTIONS:
            convert_to = f"{target_format}:{FILTERS[(family, target_format)]}:{STORE_OPTIONS[(family, target_format)]}"
        run_command(
            cold_command(soffice, profile, source.resolve(), out_dir, convert_to),
            timeout=timeout, cancelled=cancelled, env=font_env(font_dirs, tmp_dir), engine="LibreOffice",
        )
        release_pipes(None)  # its SingleOfficeIPC socket, now that nobody listens on it
        produced = sorted(out_dir.iterdir())
        if not produced:
            raise ConversionError("damaged_input", "LibreOffice could not convert the document")
        shutil.move(str(produced[0]), target)
    return 0


def office_available(env: ToolEnv) -> bool:
    """Whether LibreOffice can be used here."""
    return OFFICE.found(env)

