"""Case 9: hostile XML -- billion laughs, entity amplification, external entities and DTDs, parameter entities.

The attacks ride in every part our own code parses (EPUB container.xml and OPF, FB2, ODS content.xml, the XLSX
parts openpyxl reads, DOCX/ODT text for the AI tools) and in parts only our engines parse (pandoc, Typst's SVG
reader, MuPDF, LibreOffice). Every sample is built here. A canary file holds a unique marker and a loopback
listener counts requests: a resolved entity would show the marker in an output or an error message, a fetched
DTD or entity a hit. An expansion would show as its text in an output, a huge output, a slow job, a crashed
or out-of-memory job, or a large allocation while parsing.
"""

from __future__ import annotations

import functools
import http.server
import io
import pyexpat
import secrets
import shutil
import threading
import time
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import httpx
import pytest

from converters.base import ConversionError, InputFile
from converters.inputs import safexml
from converters.tools.ai import extract as ai_extract
from converters.tools.documents.sheets import read_sheets
from converters.tools.ebooks.meta import epub_info, fb2_info
from tests.conftest import assert_problem, upload, wait_job
from tests.converters.runtool import run_tool

Hostile = Callable[[str], tuple[str, str]]  # root element name -> (DOCTYPE declaration, reference for the text)

EXPANDING = {  # attack -> what its expansion would look like
    "billion-laughs": "lol" * 100,  # 10**9 times "lol" from 1 KB
    "entity-amplification": "A" * 280,  # 28 MB from 400 KB: under expat's limit of 100 times
}
EXTERNAL = ("file-entity", "http-entity", "external-dtd", "parameter-entity", "file-parameter-entity")
CLEAN_FAILURES = {"damaged_input", "unsafe_input", "render_failed"}  # never engine_error, out_of_memory, timeout
MAX_JOB_SECONDS = 15.0
MAX_OUTPUT_BYTES = 2_000_000  # honest outputs here are a few KB; 100 000 literal "&a; " are 400 KB
MAX_PARSE_BYTES = 16 * 1024**2
XML = '<?xml version="1.0" encoding="UTF-8"?>'


# --- the trap: a canary file and a loopback listener ----------------------------------------------------------


@dataclass
class Trap:
    mark: str
    canary: Path  # holds only the marker
    canary_dtd: Path  # a local DTD defining &x; as the marker
    port: int
    hits: list[str]


@pytest.fixture
def trap(tmp_path: Path) -> Iterator[Trap]:
    mark = f"filekiln-canary-{secrets.token_hex(8)}"
    canary = tmp_path / "canary.txt"
    canary.write_text(mark)
    canary_dtd = tmp_path / "canary.dtd"
    canary_dtd.write_text(f'<!ENTITY x "{mark}">')
    hits: list[str] = []

    class Listener(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            hits.append(self.path)
            body = f'<!ENTITY x "{mark}">'.encode()  # what a fetched DTD or entity would bring in
            self.send_response(200)
            self.send_header("Content-Type", "application/xml-dtd")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    listener = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=listener.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield Trap(mark, canary, canary_dtd, listener.server_address[1], hits)
    finally:
        listener.shutdown()
        listener.server_close()


def doctype(attack: str, trap: Trap, root: str) -> tuple[str, str]:
    """The DOCTYPE of ``attack`` for a document whose root element is ``root``, and what to put in its text."""
    url = f"http://127.0.0.1:{trap.port}/{attack}"
    if attack == "billion-laughs":  # &l9; is 10**9 copies of "lol"
        refs = {i: f"&l{i - 1};" * 10 for i in range(1, 10)}
        levels = "".join(f'<!ENTITY l{i} "{ten}">' for i, ten in refs.items())
        return f'<!DOCTYPE {root} [<!ENTITY l0 "lol">{levels}]>', "&l9;"
    if attack == "entity-amplification":  # 70 times, zipped 300 times more: past expat's guard and the zip check
        return f'<!DOCTYPE {root} [<!ENTITY a "{"A" * 280}">]>', "&a; " * 100_000
    if attack == "file-entity":
        return f'<!DOCTYPE {root} [<!ENTITY x SYSTEM "{trap.canary.as_uri()}">]>', "&x;"
    if attack == "http-entity":
        return f'<!DOCTYPE {root} [<!ENTITY x SYSTEM "{url}">]>', "&x;"
    if attack == "external-dtd":  # well-formed without its DTD, so the whole pipeline runs
        return f'<!DOCTYPE {root} SYSTEM "{url}">', ""
    if attack == "parameter-entity":  # the first step of out-of-band exfiltration
        return f'<!DOCTYPE {root} [<!ENTITY % remote SYSTEM "{url}"> %remote;]>', ""
    if attack == "file-parameter-entity":
        return f'<!DOCTYPE {root} [<!ENTITY % local SYSTEM "{trap.canary_dtd.as_uri()}"> %local;]>', "&x;"
    raise ValueError(attack)


def hostile(attack: str, trap: Trap) -> Hostile:
    return functools.partial(doctype, attack, trap)


def harmless(root: str) -> tuple[str, str]:
    return "", ""


# --- the carriers ---------------------------------------------------------------------------------------------


def zip_bytes(parts: dict[str, str | bytes], mimetype: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        if mimetype:
            zf.writestr("mimetype", mimetype, compress_type=zipfile.ZIP_STORED)  # first and stored, as ODF/EPUB ask
        for name, data in parts.items():
            zf.writestr(name, data)
    return buf.getvalue()


def epub(attack: Hostile, part: str) -> bytes:
    """A one-chapter EPUB 3 with an SVG picture; ``part`` (container, opf, chapter, svg) carries the attack."""
    def at(name: str, root: str) -> tuple[str, str]:
        return attack(root) if part == name else ("", "")

    (c_decl, c_ref), (o_decl, o_ref) = at("container", "container"), at("opf", "package")
    (h_decl, h_ref), (s_decl, s_ref) = at("chapter", "html"), at("svg", "svg")
    return zip_bytes({
        "META-INF/container.xml": f'{XML}{c_decl}<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:'
        f'xmlns:container"><rootfiles>{c_ref}<rootfile full-path="content.opf" media-type="application/oebps-'
        'package+xml"/></rootfiles></container>',
        "content.opf": f'{XML}{o_decl}<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier='
        '"id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">garden</dc:identifier>'
        f"<dc:title>Garden {o_ref}</dc:title><dc:creator>Ada</dc:creator><dc:language>en</dc:language></metadata>"
        '<manifest><item id="c1" href="chapter.xhtml" media-type="application/xhtml+xml"/><item id="p1" '
        'href="plan.svg" media-type="image/svg+xml"/></manifest><spine><itemref idref="c1"/></spine></package>',
        "chapter.xhtml": f'{XML}{h_decl}<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Garden</title></head>'
        f'<body><p>The garden opened in April. {h_ref}</p><p><img src="plan.svg" alt="plan"/></p></body></html>',
        "plan.svg": f'{XML}{s_decl}<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100"><rect width="200"'
        f' height="100" fill="#3a3"/><text x="10" y="50" font-size="10">Beds {s_ref}</text></svg>',
    }, mimetype="application/epub+zip")


def fb2(attack: Hostile) -> bytes:
    decl, ref = attack("FictionBook")
    return (f'{XML}{decl}<FictionBook xmlns="http://www.gribuser.ru/xml/fictionbook/2.0"><description><title-info>'
            f"<book-title>Garden {ref}</book-title><author><first-name>Ada</first-name><last-name>Lovelace</last-name>"
            "</author><lang>en</lang></title-info></description><body><section><p>The garden opened in April.</p>"
            "</section></body></FictionBook>").encode()


def docx(attack: Hostile) -> bytes:
    decl, ref = attack("w:document")
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    return zip_bytes({
        "[Content_Types].xml": f'{XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        "_rels/.rels": f'{XML}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        'officeDocument" Target="word/document.xml"/></Relationships>',
        "word/document.xml": f'{XML}{decl}<w:document xmlns:w="{w}"><w:body><w:p><w:r><w:t>The garden opened in '
        f"April. {ref}</w:t></w:r></w:p></w:body></w:document>",
    })


def _odf(attack: Hostile, mimetype: str, body: Callable[[str], str]) -> bytes:
    decl, ref = attack("office:document-content")
    office = 'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"'
    return zip_bytes({
        "META-INF/manifest.xml": f'{XML}<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:'
        f'manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:media-type='
        f'"{mimetype}"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        '<manifest:file-entry manifest:full-path="styles.xml" manifest:media-type="text/xml"/></manifest:manifest>',
        "content.xml": f'{XML}{decl}<office:document-content {office} xmlns:text="urn:oasis:names:tc:opendocument:'
        'xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.2">'
        f"<office:body>{body(ref)}</office:body></office:document-content>",
        "styles.xml": f'{XML}<office:document-styles {office} office:version="1.2"><office:styles/>'
        "</office:document-styles>",
    }, mimetype=mimetype)


def odt(attack: Hostile) -> bytes:
    return _odf(attack, "application/vnd.oasis.opendocument.text",
                lambda ref: f"<office:text><text:p>The garden opened in April. {ref}</text:p></office:text>")


def ods(attack: Hostile) -> bytes:
    return _odf(attack, "application/vnd.oasis.opendocument.spreadsheet", lambda ref: (
        '<office:spreadsheet><table:table table:name="Harvest"><table:table-row><table:table-cell office:value-type='
        f'"string"><text:p>beans {ref}</text:p></table:table-cell><table:table-cell office:value-type="float" '
        'office:value="42"><text:p>42</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet>'
    ))


def xlsx(attack: Hostile, part: str) -> bytes:
    """A workbook written by openpyxl, then ``part`` (a sheet or the workbook) given the attack."""
    import openpyxl

    book = openpyxl.Workbook()
    book.active.title = "Harvest"
    book.active["A1"] = "beans"
    written = io.BytesIO()
    book.save(written)
    parts: dict[str, str | bytes] = {}
    with zipfile.ZipFile(written) as zf:
        for name in zf.namelist():
            parts[name] = zf.read(name)
    name, root = {"sheet": ("xl/worksheets/sheet1.xml", "worksheet"), "workbook": ("xl/workbook.xml", "workbook")}[part]
    decl, ref = attack(root)
    text = str(parts[name], "utf-8")
    if part == "sheet":  # an inline string, so the reference is in the sheet's own XML
        start, end = text.index('<c r="A1"'), text.index("</c>", text.index('<c r="A1"')) + len("</c>")
        text = text[:start] + f'<c r="A1" t="inlineStr"><is><t>beans {ref}</t></is></c>' + text[end:]
    else:  # the workbook has no text: the reference goes into the sheet's name
        assert 'name="Harvest"' in text
        text = text.replace('name="Harvest"', f'name="Harvest{ref}"', 1)
    head_end = text.index("?>") + 2 if text.startswith("<?xml") else 0
    parts[name] = text[:head_end] + decl + text[head_end:]
    return zip_bytes(parts)


@dataclass(frozen=True)
class Carrier:
    """A file whose one part carries the attack, and the job that makes FileKiln read that part."""

    file_name: str
    build: Callable[[Hostile], bytes]
    tool: str
    output_format: str


CARRIERS = {
    # ebooks_meta reads container.xml and the OPF for title, author and cover; then pandoc reads the book
    "epub container.xml": Carrier("book.epub", lambda a: epub(a, "container"), "ebook-convert", "txt"),
    "epub opf": Carrier("book.epub", lambda a: epub(a, "opf"), "ebook-convert", "txt"),
    "epub chapter": Carrier("book.epub", lambda a: epub(a, "chapter"), "document-convert", "md"),
    "epub svg (Typst)": Carrier("book.epub", lambda a: epub(a, "svg"), "ebook-convert", "pdf"),
    "fb2": Carrier("book.fb2", fb2, "ebook-convert", "txt"),
    "docx": Carrier("letter.docx", docx, "document-convert", "md"),
    "odt": Carrier("letter.odt", odt, "document-convert", "md"),
    "ods": Carrier("harvest.ods", ods, "document-convert", "csv"),  # read_ods: ElementTree on content.xml
    "xlsx sheet": Carrier("harvest.xlsx", lambda a: xlsx(a, "sheet"), "document-convert", "csv"),
    "xlsx workbook": Carrier("harvest.xlsx", lambda a: xlsx(a, "workbook"), "document-convert", "csv"),
}


# --- through the API ------------------------------------------------------------------------------------------


def submit(client: httpx.Client, carrier: Carrier, attack: Hostile) -> str:
    ref = upload(client, carrier.file_name, carrier.build(attack))
    r = client.post("/jobs", json={"tool": carrier.tool, "inputFileIds": [ref["id"]],
                                   "outputFormat": carrier.output_format})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def readable(data: bytes) -> bytes:
    """A result as its readers see it: ZIP members unpacked, PDF text and metadata pulled out of their streams."""
    parts = [data]
    if data[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            parts += [readable(zf.read(name)) for name in zf.namelist()]
    elif data[:5] == b"%PDF-":
        import pymupdf

        with pymupdf.open(stream=data, filetype="pdf") as doc:
            parts.append(repr(doc.metadata).encode())
            parts += [page.get_text().encode() for page in doc]
    return b"\n".join(parts)


def results(client: httpx.Client, job: dict[str, Any]) -> list[bytes]:
    """Every result file of a finished job, and the download of the whole (a ZIP when there are several)."""
    if job["status"] != "DONE":
        return []
    result = client.get(f"/jobs/{job['id']}/result").json()
    urls = [result["downloadUrl"], *(f["downloadUrl"] for f in result["files"])]
    return [httpx.get(url, timeout=30).content for url in urls]


def assert_clean_outcome(client: httpx.Client, job_id: str, trap: Trap, case: str, expanded: str = "") -> None:
    """DONE or FAILED with a plain error code, soon; no marker and no expansion in any output or message."""
    job = wait_job(client, job_id, timeout=60)
    assert job["status"] in ("DONE", "FAILED"), (case, job)
    if job["status"] == "FAILED":
        assert job["errorCode"] in CLEAN_FAILURES, (case, job)
        assert trap.mark not in job["errorMessage"], (case, job)
    took = datetime.fromisoformat(job["finishedAt"]) - datetime.fromisoformat(job["startedAt"])
    assert took.total_seconds() < MAX_JOB_SECONDS, (case, job)
    outputs = [readable(out) for out in results(client, job)]
    assert sum(len(out) for out in outputs) < MAX_OUTPUT_BYTES, case
    for out in outputs:
        assert trap.mark.encode() not in out, case
        assert not expanded or expanded.encode() not in out, case


def assert_worker_alive(client: httpx.Client) -> None:
    job = wait_job(client, submit(client, CARRIERS["ods"], harmless), timeout=60)
    assert job["status"] == "DONE", job
    assert results(client, job)[0].decode("utf-8").splitlines() == ["beans ,42"]
    assert client.get("/health").json()["workers"] is True


def test_entities_expand_nowhere(client: httpx.Client, trap: Trap) -> None:
    jobs = {(attack, case): submit(client, carrier, hostile(attack, trap))
            for attack in EXPANDING for case, carrier in CARRIERS.items()}
    for (attack, case), job_id in jobs.items():
        assert_clean_outcome(client, job_id, trap, f"{attack} in {case}", expanded=EXPANDING[attack])
    assert_worker_alive(client)


def test_external_entities_and_dtds_are_never_read_or_fetched(client: httpx.Client, trap: Trap) -> None:
    jobs = {f"{attack} in {case}": submit(client, carrier, hostile(attack, trap))
            for attack in EXTERNAL for case, carrier in CARRIERS.items()}
    for case, job_id in jobs.items():
        assert_clean_outcome(client, job_id, trap, case)
    assert trap.hits == []
    assert_worker_alive(client)


@pytest.mark.parametrize("attack", ["billion-laughs", *EXTERNAL])
def test_svg_with_entities_is_refused_at_job_creation(client: httpx.Client, trap: Trap, attack: str) -> None:
    decl, ref = doctype(attack, trap, "svg")
    svg = f'{XML}{decl}<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text>{ref}</text></svg>'
    for name in ("logo.svg", "logo.png"):  # the name does not matter: the content says SVG
        file = upload(client, name, svg.encode())
        assert file["mimeType"] == "image/svg+xml", file
        for tool in ("image-convert", "vector-convert"):  # the SVG is parsed, never rendered, at creation
            r = client.post("/jobs", json={"tool": tool, "inputFileIds": [file["id"]], "outputFormat": "png"})
            if attack == "external-dtd":  # declares nothing: the DTD is never read, and the image renders
                assert r.status_code == 201, r.text
                assert wait_job(client, r.json()["id"], timeout=60)["status"] == "DONE"
            else:
                assert_problem(r, 422, "unsafe_input")
        r = client.post("/jobs", json={"tool": "document-to-pdf", "inputFileIds": [file["id"]]})
        assert_problem(r, 415, "unsupported_format")
    assert trap.hits == []


@pytest.mark.parametrize("case", CARRIERS)
def test_carrier_without_attack_converts(case: str, tmp_path: Path) -> None:
    # so a FAILED hostile job is the attack's doing, not a broken sample's
    carrier = CARRIERS[case]
    source = tmp_path / carrier.file_name
    source.write_bytes(carrier.build(harmless))
    run = run_tool(carrier.tool, [source], tmp_path / "out", output_format=carrier.output_format)
    text = b"".join(readable(out.read_bytes()) for out in run.outputs)
    assert any(word in text for word in (b"Garden", b"garden", b"beans")), text[:300]


# --- in process: our own parsers, and the text extraction of the AI tools (which need a model via the API) -----


def _book(path: Path) -> str:
    info = {".epub": epub_info, ".fb2": fb2_info}[path.suffix](path)
    return f"{info.title}|{info.author}|{info.cover!r}"


def _sheets(path: Path) -> str:
    return repr(read_sheets(path, path.suffix[1:], lambda: False))


def _text(path: Path) -> str:
    return ai_extract.extract_text(InputFile(path, path.suffix[1:], path.name), markdown=True)


@dataclass(frozen=True)
class Reader:
    file_name: str
    build: Callable[[Hostile], bytes]
    read: Callable[[Path], str]
    own: bool = False  # our own parser, which refuses entity declarations with unsafe_input


READERS = {
    "epub_info container.xml": Reader("book.epub", lambda a: epub(a, "container"), _book),
    "epub_info opf": Reader("book.epub", lambda a: epub(a, "opf"), _book),
    "fb2_info": Reader("book.fb2", fb2, _book),
    "read_sheets ods": Reader("harvest.ods", ods, _sheets, own=True),
    "read_sheets xlsx sheet": Reader("harvest.xlsx", lambda a: xlsx(a, "sheet"), _sheets, own=True),
    "read_sheets xlsx workbook": Reader("harvest.xlsx", lambda a: xlsx(a, "workbook"), _sheets, own=True),
    "ai text docx, own reader": Reader("letter.docx", docx, _text, own=True),
    "ai text odt, own reader": Reader("letter.odt", odt, _text, own=True),
    "ai text docx, pandoc": Reader("letter.docx", docx, _text),
    "ai text epub chapter, MuPDF": Reader("book.epub", lambda a: epub(a, "chapter"), _text),
    "ai text epub opf, MuPDF": Reader("book.epub", lambda a: epub(a, "opf"), _text),
}


def write_sample(name: str, attack: Hostile, folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / READERS[name].file_name
    path.write_bytes(READERS[name].build(attack))
    return path


def read_sample(name: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """What reader ``name`` makes of the file: its result, or the code and message of the clean error it raised."""
    reader = READERS[name]
    if reader.own and reader.read is _text:
        monkeypatch.setattr(ai_extract, "pandoc_path", lambda: None)  # the reader used when pandoc is missing
    try:
        return reader.read(path)
    except ConversionError as exc:
        assert exc.code in ("damaged_input", "unsafe_input"), exc.message
        return f"{exc.code}: {exc.message}"


@pytest.mark.parametrize(("name", "attack"), [
    (name, attack) for name in READERS for attack in EXPANDING
    # MuPDF reads no DTD (billion laughs shows it): 100 000 literal "&a;" would only time its line breaking
    if not (attack == "entity-amplification" and "MuPDF" in name)
])
def test_reader_expands_no_entity_and_stays_small(name: str, attack: str, trap: Trap, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    read_sample(name, write_sample(name, harmless, tmp_path / "warm-up"), monkeypatch)  # imports are not measured
    path = write_sample(name, hostile(attack, trap), tmp_path)
    tracemalloc.start()
    started = time.monotonic()
    try:
        seen = read_sample(name, path, monkeypatch)
        peak = tracemalloc.get_traced_memory()[1]  # expat allocates through Python's allocator: it is counted
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 5
    assert peak < MAX_PARSE_BYTES
    assert EXPANDING[attack] not in seen
    if READERS[name].own:
        assert seen.startswith("unsafe_input: "), seen


@pytest.mark.parametrize("attack", EXTERNAL)
@pytest.mark.parametrize("name", READERS)
def test_reader_never_reads_or_fetches_external_entities(name: str, attack: str, trap: Trap, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    seen = read_sample(name, write_sample(name, hostile(attack, trap), tmp_path), monkeypatch)
    assert trap.mark not in seen
    assert trap.hits == []


@pytest.mark.parametrize("name", READERS)
def test_reader_still_reads_the_harmless_sample(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = read_sample(name, write_sample(name, harmless, tmp_path), monkeypatch)
    assert any(word in seen for word in ("Garden", "garden", "beans")), seen


def test_safe_parser_builds_the_trees_elementtree_builds() -> None:
    def shape(el: ElementTree.Element) -> list[object]:
        return [el.tag, el.attrib, el.text, el.tail, [shape(child) for child in el]]

    documents = [
        epub(harmless, "none"),
        docx(harmless),
        ods(harmless),
        '<?xml version="1.0" encoding="windows-1251"?><FictionBook xmlns="http://www.gribuser.ru/xml/fictionbook/2.0"'
        ' xmlns:l="http://www.w3.org/1999/xlink"><p xml:lang="ru">Сад &amp; &#1057;<image l:href="#c"/> после</p>'
        "<!-- note --><?pi x?></FictionBook>".encode("cp1251"),
        b'<!DOCTYPE package PUBLIC "+//ISBN 0-9673008-1-9//DTD OEB 1.2 Package//EN" "oebpkg12.dtd"><package/>',
        b"<a>" + b"x" * 200_000 + b"<b/>" + b"y" * 100_000 + b"</a>",  # text across the parser's chunks
    ]
    parts: list[bytes] = []
    for doc in documents:
        if doc[:2] == b"PK":
            with zipfile.ZipFile(io.BytesIO(doc)) as zf:
                parts += [zf.read(n) for n in zf.namelist() if n.endswith((".xml", ".opf", ".xhtml", ".svg"))]
        else:
            parts.append(doc)
    for part in parts:
        assert shape(safexml.fromstring(part)) == shape(ElementTree.fromstring(part))


def test_python_expat_limits_entity_amplification() -> None:
    # what stops billion laughs in the parsers of libraries (openpyxl) and in ours before the entity check
    assert pyexpat.version_info >= (2, 4, 1), pyexpat.EXPAT_VERSION


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is not installed")
@pytest.mark.parametrize("attack", ["billion-laughs", "file-entity", "parameter-entity"])
def test_libreoffice_neither_expands_nor_resolves_entities(attack: str, trap: Trap, tmp_path: Path) -> None:
    source = tmp_path / "letter.docx"
    source.write_bytes(docx(hostile(attack, trap)))
    started = time.monotonic()
    try:
        outputs = run_tool("document-to-pdf", [source], tmp_path / "out", {"engine": "libreoffice"}).outputs
    except ConversionError as exc:
        assert exc.code in CLEAN_FAILURES and trap.mark not in exc.message, exc.message
        outputs = []
    assert time.monotonic() - started < 60
    for out in outputs:
        assert trap.mark.encode() not in readable(out.read_bytes())
    assert trap.hits == []
