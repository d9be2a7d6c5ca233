"""The embedded document engine: pandoc (from ``pypandoc-binary``) and Typst (the ``typst`` package).

pandoc always runs with ``--sandbox`` (it reads only the file it is given: no linked images, no iframes,
no includes, no network) and with a Lua filter that drops raw passthrough blocks, external images and every
metadata key but a few plain ones, so that nothing in a document can reach the Typst template as code.
Typst then compiles in-process with its root confined to a scratch directory holding only the ``.typ``
file and the images pandoc extracted from the document itself. Fonts come from the ``noto-cjk-sans-otc``
and ``manimgx-fonts`` packages (CJK, Arabic, Hebrew and other scripts) plus the system's own.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from converters.base import ConversionError, Engine, ToolEnv
from converters.engines.procs import run_command
from converters.inputs import safexml

PANDOC_ENGINE = Engine("pandoc", module="pypandoc", distribution="pypandoc-binary",
                       install_hint="pip install pypandoc-binary")


TYPST_ENGINE = Engine("typst", module="typst", distribution="typst", install_hint="pip install typst")

PANDOC_TIMEOUT = 300.0

# FileKiln format id -> pandoc reader. txt is turned into pandoc's JSON AST by FileKiln (pandoc has no
# plain-text reader: its markdown reader would read "# tag" in a text file as a heading).
READERS = {
    "md": "markdown", "html": "html", "rst": "rst", "docx": "docx", "odt": "odt", "rtf": "rtf",
    "epub": "epub", "fb2": "fb2", "csv": "csv", "xlsx": "xlsx", "pptx": "pptx", "txt": "json",
}
WRITERS = {
    "md": "markdown", "html": "html5", "rst": "rst", "docx": "docx", "odt": "odt", "rtf": "rtf",
    "epub": "epub3", "fb2": "fb2", "txt": "plain", "typst": "typst",
}
PAPER = {"a4": "a4", "a5": "a5", "letter": "us-letter", "legal": "us-legal"}
# pandoc's readers of these packages expand entities declared in their XML parts, with no limit at all
EXPANDING_READERS = frozenset({"docx", "odt", "pptx", "xlsx"})

# The filter that keeps a document inside itself. Images survive only when the document carries them
# (the reader put them in the media bag: docx/odt/epub media, data: URIs); for Typst only the formats it
# can draw. Raw blocks (```{=typst}``` and friends) would be code in the output: dropped.
LUA_FILTER = r"""
local keep_meta = {title = true, subtitle = true, author = true, date = true, lang = true}
local for_typst = os.getenv("FILEKILN_TARGET") == "typst"
local drop_all = os.getenv("FILEKILN_IMAGES") == "drop"
local drawable = {["image/png"] = true, ["image/jpeg"] = true, ["image/gif"] = true,
                  ["image/svg+xml"] = true, ["image/webp"] = true}

local function plain(value)
  if pandoc.utils.type(value) == "List" then
    local list = pandoc.List()
    for _, item in ipairs(value) do list:insert(pandoc.utils.stringify(item)) end
    return list
  end
  return pandoc.utils.stringify(value)
end

function Meta(meta)
  local out = {}
  for key, value in pairs(meta) do
    if keep_meta[key] then out[key] = plain(value) end
  end
  if out.title == nil and os.getenv("FILEKILN_TITLE") then out.title = os.getenv("FILEKILN_TITLE") end
  return pandoc.Meta(out)
end

function RawBlock(el) return {} end
function RawInline(el) return {} end

local extension = {["image/png"] = "png", ["image/jpeg"] = "jpg", ["image/gif"] = "gif",
                   ["image/svg+xml"] = "svg", ["image/webp"] = "webp"}

function Image(img)
  local src = img.src
  local mime = nil
  if src:sub(1, 5) == "data:" then
    -- A data: URI holds its own bytes (no I/O): move them into the media bag as a file.
    local ok, kind, contents = pcall(pandoc.mediabag.fetch, src)
    if ok and kind and extension[kind] then
      local name = "inline-" .. pandoc.sha1(contents) .. "." .. extension[kind]
      pandoc.mediabag.insert(name, kind, contents)
      img.src = name
      mime = kind
    end
  else
    mime = pandoc.mediabag.lookup(src)
  end
  if drop_all or mime == nil or (for_typst and not drawable[mime]) then
    io.stderr:write("filekiln: image left out: " .. src:sub(1, 80) .. "\n")
    return pandoc.Span(img.caption)
  end
  return img
end
"""


def pandoc_binary(settings: Mapping[str, Any] | None = None) -> str | None:
    """pandoc: the ``pandoc_path`` setting, else the one inside ``pypandoc-binary``, else PATH."""
    configured = (settings or {}).get("pandoc_path")
    if configured:
        return str(configured)
    spec = importlib.util.find_spec("pypandoc")
    if spec is not None and spec.origin is not None:
        bundled = Path(spec.origin).parent / "files" / ("pandoc.exe" if os.name == "nt" else "pandoc")
        if bundled.is_file():
            return str(bundled)
    return shutil.which("pandoc")


def pandoc_available(env: ToolEnv | None = None) -> bool:
    return pandoc_binary(env.settings if env else None) is not None


def typst_available() -> bool:
    return importlib.util.find_spec("typst") is not None


def font_dirs(settings: Mapping[str, Any] | None = None) -> list[Path]:
    """Folders of the fonts FileKiln ships (PyPI font packages) plus any in the ``font_dirs`` setting."""
    dirs = [Path(str(d)) for d in (settings or {}).get("font_dirs", ())]
    for module in ("noto_cjk_sans_otc", "manimgx_fonts"):
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin is not None:
            dirs.append(Path(spec.origin).parent)
    return [d for d in dirs if d.is_dir()]


def pandoc_command(
    pandoc: str,
    reader: str,
    writer: str,
    source: Path,
    output: Path,
    lua_filter: Path,
    *,
    standalone: bool = True,
    extract_media: str | None = None,
    embed_resources: bool = False,
    variables: Mapping[str, str] | None = None,
    metadata: Mapping[str, str] | None = None,
) -> list[str]:
    """The pandoc command line: sandboxed, filtered, one input, one output."""
    cmd = [pandoc, "--sandbox", "-f", reader, "-t", writer, f"--lua-filter={lua_filter}"]
    if standalone:
        cmd.append("--standalone")
    if extract_media:
        cmd.append(f"--extract-media={extract_media}")
    if embed_resources:
        cmd.append("--embed-resources")
    for key, value in (variables or {}).items():
        cmd.append(f"--variable={key}:{value}")
    for key, value in (metadata or {}).items():
        cmd.append(f"--metadata={key}:{value}")
    cmd += ["-o", str(output), str(source)]
    return cmd


def read_text(path: Path) -> str:
    """A text file's content: UTF-8 (with or without BOM), UTF-16 with a BOM, else Latin-1."""
    data = path.read_bytes()
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def text_to_pandoc_json(text: str) -> str:
    """Plain text as a pandoc JSON document: blank lines separate paragraphs, line breaks are kept."""
    blocks: list[dict[str, Any]] = []
    for chunk in text.replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
        lines = [line.rstrip() for line in chunk.split("\n") if line.strip()]
        if not lines:
            continue
        inlines: list[dict[str, Any]] = []
        for i, line in enumerate(lines):
            if i:
                inlines.append({"t": "LineBreak"})
            inlines.append({"t": "Str", "c": line})
        blocks.append({"t": "Para", "c": inlines})
    return json.dumps({"pandoc-api-version": [1, 23, 1], "meta": {}, "blocks": blocks}, ensure_ascii=False)


def run_pandoc(
    env: ToolEnv,
    source: Path,
    source_format: str,
    writer: str,
    output: Path,
    work: Path,
    cancelled: Callable[[], bool],
    *,
    variables: Mapping[str, str] | None = None,
    metadata: Mapping[str, str] | None = None,
    extract_media: bool = False,
    embed_resources: bool = False,
    keep_images: bool = True,
    title_fallback: str | None = None,
) -> list[str]:
    """Run pandoc in ``work`` (its cwd); return the notes worth telling the user (images left out).

    ``title_fallback`` becomes the title when the document has none (EPUB needs one); ``keep_images=False``
    drops every image (for text targets that cannot carry them).
    """
    pandoc = pandoc_binary(env.settings)
    if pandoc is None:
        raise ConversionError("engine_missing", "pandoc is not installed. Install it with: pip install pypandoc-binary")
    reader = READERS.get(source_format)
    if reader is None:
        raise ConversionError("unsupported_format", f"pandoc cannot read {source_format}")
    if source_format in EXPANDING_READERS:
        safexml.check_archive(source)
    work.mkdir(parents=True, exist_ok=True)
    lua = work / "filekiln-filter.lua"
    lua.write_text(LUA_FILTER, encoding="utf-8")
    if source_format == "txt":
        as_json = work / "input.json"
        as_json.write_text(text_to_pandoc_json(read_text(source)), encoding="utf-8")
        source = as_json
    cmd = pandoc_command(
        pandoc, reader, writer, source.resolve(), output.resolve(), lua,
        standalone=writer not in ("plain",), extract_media="media" if extract_media else None,
        embed_resources=embed_resources, variables=variables, metadata=metadata,
    )
    proc_env = dict(os.environ)
    proc_env["FILEKILN_TARGET"] = writer
    proc_env.pop("FILEKILN_TITLE", None)
    if title_fallback:
        proc_env["FILEKILN_TITLE"] = title_fallback
    proc_env["FILEKILN_IMAGES"] = "keep" if keep_images else "drop"
    try:
        done = run_command(cmd, timeout=PANDOC_TIMEOUT, cancelled=cancelled, cwd=work, env=proc_env, engine="pandoc")
    except ConversionError as exc:
        if exc.code == "engine_failed":
            raise ConversionError("damaged_input", f"The document could not be read: {exc.message}") from exc
        raise
    dropped = done.stderr.count("filekiln: image left out")
    if not dropped:
        return []
    if not keep_images:
        return [f"{dropped} image(s) left out: {writer} output carries no images"]
    return [f"{dropped} image(s) left out: linked from outside the document or in a format that cannot be drawn"]


@functools.cache
def _typst_fonts(dirs: tuple[str, ...]) -> Any:
    """Typst's font book, built once per process: scanning the CJK collection costs more than a small document."""
    import typst

    return typst.Fonts(include_system_fonts=True, include_embedded_fonts=True, font_paths=list(dirs))


def typst_compile(typ: Path, root: Path, out_pdf: Path, fonts: Sequence[Path]) -> None:
    """Compile ``typ`` to ``out_pdf`` with Typst, reading nothing outside ``root`` and no packages."""
    import typst

    packages = root / ".no-packages"
    packages.mkdir(exist_ok=True)
    try:
        typst.compile(
            str(typ), output=str(out_pdf), root=str(root), font_paths=_typst_fonts(tuple(str(f) for f in fonts)),
            package_path=str(packages), package_cache_path=str(packages),
        )
    except typst.TypstError as exc:
        raise ConversionError("render_failed", f"Typesetting failed: {exc.message}") from exc
    except RuntimeError as exc:  # older typst-py raise plain RuntimeError
        raise ConversionError("render_failed", f"Typesetting failed: {exc}") from exc


def check_svg_images(media: Path) -> None:
    """Refuse SVG images that declare entities: Typst's SVG reader expands them without a size limit."""
    if media.is_dir():
        for image in media.rglob("*"):
            if image.suffix.lower() == ".svg" and image.is_file():
                with open(image, "rb") as f:
                    safexml.check(f)


def pandoc_to_pdf(
    env: ToolEnv,
    source: Path,
    source_format: str,
    out_pdf: Path,
    work: Path,
    progress: Callable[[float], None],
    cancelled: Callable[[], bool],
    *,
    paper: str = "a4",
    metadata: Mapping[str, str] | None = None,
) -> list[str]:
    """pandoc -> Typst -> PDF. Progress: 0..0.5 reading, 0.5..1 typesetting. Returns notes."""
    if not typst_available():
        raise ConversionError("engine_missing", "Typst is not installed. Install it with: pip install typst")
    typ = work / "document.typ"
    notes = run_pandoc(
        env, source, source_format, "typst", typ, work, cancelled,
        variables={"papersize": PAPER.get(paper, paper)}, metadata=metadata, extract_media=True,
    )
    progress(0.5)
    check_svg_images(work / "media")
    typst_compile(typ, work, out_pdf, font_dirs(env.settings))
    progress(1.0)
    return notes
