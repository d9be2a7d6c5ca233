# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""``pdf-sanitize``: strip what can run, call out or tell on the author, wherever it is in the file.

An action can hide anywhere an object can: inline in a link's ``/A``, in the ``/Next`` of another
action (a dictionary or an array of them), in an annotation inside a page's ``/Annots`` array, in a
form field, an outline item or a name tree. So every object of the file is walked through its
direct dictionaries and arrays, not only the keys where actions usually sit; an object that is
itself a doomed action is emptied, so that every reference to it leads to no action. Names are
compared as MuPDF decodes them, so ``/Java#53cript`` is ``/JavaScript``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import Field

from converters.base import CamelParams, Context, InputFile
from converters.engines.mupdf import save_pdf
from converters.tools.pdf.common import PdfTool, stem_of

if TYPE_CHECKING:
    import pymupdf

SCRIPT_ACTIONS = frozenset({"JavaScript"})
# actions that start a program, open or import another file, or send the form's data away
OUTSIDE_ACTIONS = frozenset({"Launch", "GoToR", "GoToE", "ImportData", "SubmitForm"})


class SanitizeParams(CamelParams):
    javascript: bool = Field(True, description="Remove JavaScript: document scripts, script actions (a "
                                               "rendition's too), additional (event) actions, XFA forms.")
    open_actions: bool = Field(True, description="Remove the action run when the document opens.")
    launch_actions: bool = Field(True, description="Remove actions that start programs, open or import other "
                                                   "files, or send form data away.")
    embedded_files: bool = Field(True, description="Remove attached and associated files, and file attachment "
                                                   "annotations.")
    links: bool = Field(False, description="Remove links (to web pages and within the document).")
    metadata: bool = Field(True, description="Remove the document information (title, author, dates ...).")
    xmp_metadata: bool = Field(True, description="Remove the XMP metadata packet.")


class _Sanitizer:
    """Removes what the params name from one open document and counts what it removed."""

    def __init__(self, doc: pymupdf.Document, params: SanitizeParams) -> None:
        import pymupdf

        self.doc = doc
        self.params = params
        self.removed: dict[str, int] = {}
        self.mupdf = pymupdf.mupdf
        self.pdf = pymupdf._as_pdf_document(doc)
        self.doomed_actions = (SCRIPT_ACTIONS if params.javascript else frozenset()) | (
            OUTSIDE_ACTIONS if params.launch_actions else frozenset())

    def count(self, what: str, number: int = 1) -> None:
        if number:
            self.removed[what] = self.removed.get(what, 0) + number

    def catalog(self) -> None:
        doc, params = self.doc, self.params
        root = doc.pdf_catalog()
        if params.javascript:
            for key in ("Names/JavaScript", "AcroForm/XFA"):
                if doc.xref_get_key(root, key)[0] != "null":
                    doc.xref_set_key(root, key, "null")
                    self.count("JavaScript")
        if params.open_actions and doc.xref_get_key(root, "OpenAction")[0] != "null":
            doc.xref_set_key(root, "OpenAction", "null")
            self.count("open action")
        if params.embedded_files:
            names = doc.embfile_names()
            for name in names:
                doc.embfile_del(name)
            self.count("embedded file", len(names))
        if params.metadata and doc.xref_get_key(-1, "Info")[0] != "null":
            doc.xref_set_key(-1, "Info", "null")
            self.count("document information")
        if params.xmp_metadata and doc.get_xml_metadata():
            doc.del_xml_metadata()
            self.count("XMP metadata")

    def objects(self, check: Callable[[], None], progress: Callable[[float], None]) -> None:
        """Every object: doomed actions taken out wherever they are, event actions and associated files
        dropped where the params say."""
        m, doc = self.mupdf, self.doc
        total = doc.xref_length()
        for xref in range(1, total):
            if xref % 1000 == 0:
                check()
                progress(xref / total)
            try:
                obj = m.pdf_load_object(self.pdf, xref)
            except Exception:  # a free or broken entry: nothing MuPDF reads can act
                continue
            kind = self._action(obj)
            if kind in self.doomed_actions:
                doc.update_object(xref, "<<>>")  # every reference to it now leads to no action
                self.count(f"{kind} action")
                continue
            self._walk(obj)

    def _action(self, obj: Any) -> str | None:
        """The ``/S`` of ``obj`` when it is a dictionary with one."""
        m = self.mupdf
        if not m.pdf_is_dict(obj):
            return None
        kind = m.pdf_dict_gets(obj, "S")
        return str(m.pdf_to_name(kind)) if m.pdf_is_name(kind) else None

    def _walk(self, top: Any) -> None:
        """``top`` and the dictionaries and arrays written inside it (objects of their own are walked
        when their turn comes): a depth-first walk with a stack, so no nesting exhausts the recursion."""
        m = self.mupdf
        stack = [top]
        while stack:
            obj = stack.pop()
            if m.pdf_is_dict(obj):
                self._clean_dict(obj)
                for i in reversed(range(m.pdf_dict_len(obj))):
                    key = m.pdf_dict_get_key(obj, i)
                    value = m.pdf_dict_get(obj, key)
                    if self._doomed(value):
                        m.pdf_dict_del(obj, key)
                    elif self._container(value):
                        stack.append(value)
            elif m.pdf_is_array(obj):
                for i in reversed(range(m.pdf_array_len(obj))):
                    value = m.pdf_array_get(obj, i)
                    if self._doomed(value):
                        m.pdf_array_delete(obj, i)
                    elif self._container(value):
                        stack.append(value)

    def _clean_dict(self, obj: Any) -> None:
        """The keys that act or carry files, whatever the dictionary is."""
        m, params = self.mupdf, self.params
        if params.javascript:
            for key, what in (("AA", "event action set"), ("JS", "JavaScript")):
                # a /JS outside a JavaScript action: a rendition action's script
                if not m.pdf_is_null(m.pdf_dict_gets(obj, key)) and (key == "AA" or self._action(obj) != "JavaScript"):
                    m.pdf_dict_dels(obj, key)
                    self.count(what)
        if params.embedded_files and not m.pdf_is_null(m.pdf_dict_gets(obj, "AF")):
            m.pdf_dict_dels(obj, "AF")  # associated files (PDF 2.0), of the catalog, a page or an annotation
            self.count("associated files")

    def _doomed(self, value: Any) -> bool:
        """``value`` is an action written inline that must go (counted here)."""
        if self.mupdf.pdf_is_indirect(value):
            return False
        kind = self._action(value)
        if kind in self.doomed_actions:
            self.count(f"{kind} action")
            return True
        return False

    def _container(self, value: Any) -> bool:
        m = self.mupdf
        return not m.pdf_is_indirect(value) and bool(m.pdf_is_dict(value) or m.pdf_is_array(value))

    def pages(self, check: Callable[[], None], progress: Callable[[float], None]) -> None:
        """Per-page annotations: file attachments and links."""
        for page in self.doc.pages():
            check()
            progress(page.number / self.doc.page_count)
            if self.params.embedded_files:
                for annot in list(page.annots(types=[self._file_attachment()])):
                    page.delete_annot(annot)
                    self.count("file attachment annotation")
            if self.params.links:
                for link in page.get_links():
                    page.delete_link(link)
                    self.count("link")

    @staticmethod
    def _file_attachment() -> int:
        import pymupdf

        return int(pymupdf.PDF_ANNOT_FILE_ATTACHMENT)  # type: ignore[attr-defined]

    def note(self, name: str) -> str:
        if not self.removed:
            return f"{name}: nothing to remove was found."
        parts = [f"{count} {what}" for what, count in self.removed.items()]
        return f"{name}: removed " + ", ".join(parts) + "."


class PdfSanitize(PdfTool):
    """Strip what can run, call out or tell on the author; the pages look the same."""

    id = "pdf-sanitize"
    title = "Sanitize PDF"
    description = (
        "Remove JavaScript, open and launch actions, embedded files, XMP and document metadata, and optionally "
        "links; each can be kept. The pages look the same."
    )
    params = SanitizeParams
    timeout_seconds = 1800.0

    def pages_worked(self, doc: pymupdf.Document, params: Any) -> int | None:
        return int(doc.page_count) if params.embedded_files or params.links else None

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: SanitizeParams = ctx.params
        doc = self.open_checked(ctx, source)
        try:
            sanitizer = _Sanitizer(doc, params)
            sanitizer.catalog()
            # Pages before objects: MuPDF loses track of a page's links once one of them has lost its action.
            if params.embedded_files or params.links:
                sanitizer.pages(ctx.check_cancelled, lambda f: progress(0.3 * f))
            sanitizer.objects(ctx.check_cancelled, lambda f: progress(0.3 + 0.6 * f))
            ctx.notes.append(sanitizer.note(source.name))
            save_pdf(doc, ctx.output_path(stem_of(source), "pdf"), garbage=4)
        finally:
            doc.close()
        progress(1.0)
