"""How a result is named when it is saved: a template such as ``{name}-compressed.{ext}``.

Placeholders: ``{name}`` the result's name as the tool gave it, without its extension (for one input,
the input's name); ``{tool}`` the tool's id; ``{ext}`` the result's extension. A template without
``{ext}`` gets ``.{ext}`` added, so a result always keeps its type. Each tool has a default (tools
that change a file in place say how, conversions keep the name); a template set in Settings applies
to every tool. A name that is taken becomes ``name-2.ext``, ``name-3.ext`` ... (see ``resolve_target``).
"""

from __future__ import annotations

import string

PLACEHOLDERS = ("name", "tool", "ext")
PLAIN = "{name}.{ext}"

# what a tool did to the file, for tools whose result has the input's type (else the names would clash)
_DONE_TO = {
    "pdf-compress": "compressed", "image-compress": "compressed", "ai-remove-background": "nobg",
    "image-resize": "resized", "image-rotate": "rotated", "pdf-rotate": "rotated", "pdf-crop": "cropped",
    "pdf-unlock": "unlocked", "pdf-protect": "protected", "pdf-grayscale": "gray", "pdf-watermark": "watermarked",
    "pdf-sign": "signed", "pdf-redact": "redacted", "pdf-flatten": "flattened", "pdf-to-pdfa": "pdfa",
    "ocr-pdf": "ocr", "pdf-page-numbers": "numbered", "pdf-sanitize": "clean", "pdf-scale": "scaled",
    "pdf-n-up": "n-up", "pdf-booklet": "booklet", "pdf-remove-annotations": "no-annotations",
    "pdf-remove-blank-pages": "no-blanks", "pdf-delete-pages": "pages-deleted", "pdf-organize": "organized",
    "pdf-overlay": "overlay", "pdf-add-image": "with-image", "pdf-form-fill": "filled", "pdf-merge": "merged",
}
_COMPOUND = (".tar.gz", ".tar.xz", ".tar.bz2", ".tar.zst")


def default_template(tool_id: str) -> str:
    """The template a tool's results get unless Settings sets one: ``{name}-compressed.{ext}`` for
    pdf-compress, ``{name}-nobg.{ext}`` for background removal, ``{name}.{ext}`` for conversions."""
    done = _DONE_TO.get(tool_id)
    return f"{{name}}-{done}.{{ext}}" if done else PLAIN


def check_template(template: str) -> str | None:
    """Why ``template`` cannot name files (a sentence), or ``None`` when it can."""
    if not template.strip():
        return "Give a name template, e.g. {name}-converted.{ext}."
    try:
        fields = [f for _, f, spec, conv in string.Formatter().parse(template) if f is not None]
    except ValueError:
        return "Braces must come in pairs: {name}, {tool}, {ext}."
    unknown = sorted({f for f in fields if f not in PLACEHOLDERS})
    if unknown:
        shown = ", ".join("{" + f + "}" for f in unknown)
        return f"Unknown placeholder {shown}: use {{name}}, {{tool}} and {{ext}}."
    if "name" not in fields:
        return "The template must contain {name}, or every result would get the same name."
    if any(ch in template for ch in '/\\:*?"<>|') or template.startswith("."):
        return "A name cannot contain / \\ : * ? \" < > | or start with a dot."
    return None


def split_name(name: str) -> tuple[str, str]:
    """(stem, extension without the dot); ``archive.tar.gz`` is ``archive`` and ``tar.gz``."""
    lower = name.lower()
    for compound in _COMPOUND:
        if lower.endswith(compound) and len(name) > len(compound):
            return name[:-len(compound)], name[-len(compound) + 1:]
    stem, dot, ext = name.rpartition(".")
    return (stem, ext) if dot and stem else (name, "")


def render_name(template: str, result_name: str, tool_id: str) -> str:
    """The file name for a result called ``result_name`` (as the tool named it) under ``template``.

    An empty or unusable template keeps the tool's name."""
    if not template or check_template(template) is not None:
        return result_name
    if "{ext}" not in template:
        template += ".{ext}"
    stem, ext = split_name(result_name)
    if not ext:
        template = template.replace(".{ext}", "").replace("{ext}", "")
    return template.format(name=stem, tool=tool_id, ext=ext)
