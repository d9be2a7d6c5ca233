"""Cases 5, 6 and 7: inputs that point engines at other files or URLs, sent through a real server.

Every sample refers to canary files on this machine and to a loopback HTTP listener started here. A defence
holds when the job is refused (415 at creation, or FAILED with a stated code), no output holds any canary
(bytes, base64, decoded text, an image of the canary's size) and the listener never sees a connection.
One server serves the module: LibreOffice and Calibre start slowly, and the listener's port is in the samples.
"""

from __future__ import annotations

import base64
import io
import os
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pymupdf
import pytest
from PIL import Image, UnidentifiedImageError

from tests.conftest import Server, assert_problem, module_server, upload, wait_job
from tests.converters import doc_samples as docs
from tests.converters import media_samples as media
from tests.hostile.canary import Listener, listening

HAS_OFFICE = shutil.which("soffice") is not None
HAS_CALIBRE = shutil.which("ebook-convert") is not None
needs_office = pytest.mark.skipif(not HAS_OFFICE, reason="LibreOffice (soffice) is not installed")
# the hostile files point at the data dir's own copy of another key's file (files/<xx>/<id>), which a
# bucket (the scale run) does not keep there
pytestmark = pytest.mark.embedded
needs_calibre = pytest.mark.skipif(not HAS_CALIBRE, reason="Calibre (ebook-convert) is not installed")
MEDIA_MARKER = b"CANARY-MEDIA-5e1d"



@dataclass
class Canaries:
    """Files no output may ever contain: local text, image and media, and another key's upload on the server."""

    text: Path
    image: Path
    media: Path
    stored: Path  # the uploaded copy of ``text``, where the server keeps it
    stored_relative: str  # the same, relative to any upload's folder

    def markers(self) -> list[bytes]:
        text, image = self.text.read_bytes(), self.image.read_bytes()
        return [docs.CANARY_TEXT.encode(), base64.b64encode(text)[:24], image, base64.b64encode(image)[:40],
                MEDIA_MARKER]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from module_server(tmp_path_factory, "fetches")


@pytest.fixture(scope="module")
def api_key(server: Server) -> str:
    return server.create_key()  # one key for the module: creating one costs a CLI start


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    yield from listening()


@pytest.fixture(scope="module")
def canaries(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Canaries:
    folder = tmp_path_factory.mktemp("canaries")
    text, image = docs.make_canary(folder)
    clip = media.write_audio(folder / "canary.wav", "wav", seconds=0.5)
    clip.write_bytes(clip.read_bytes() + MEDIA_MARKER)
    with server.client(server.create_key("someone-else")) as other:
        file_id = upload(other, "secret.txt", text.read_bytes())["id"]
    stored = server.data_dir / "files" / file_id[5:7] / file_id
    assert stored.read_bytes() == text.read_bytes()
    return Canaries(text, image, clip, stored, f"../{file_id[5:7]}/{file_id}")


@pytest.fixture(autouse=True)
def _no_hits_and_no_500(listener: Listener, server: Server, client: httpx.Client) -> Iterator[None]:
    listener.hits.clear()
    seen = len(server.log())
    yield
    assert listener.hits == [], f"the loopback listener was contacted: {listener.hits}"
    assert client.get("/health").json()["status"] == "ok"
    log = server.log()[seen:]
    assert "Internal Server Error" not in log and "Traceback" not in log, log[-3000:]


# -- helpers -----------------------------------------------------------------------------------------------


def create(client: httpx.Client, tool: str, file_id: str, fmt: str | None = None, **params: str) -> httpx.Response:
    return client.post("/jobs", json={"tool": tool, "inputFileIds": [file_id], "outputFormat": fmt, "params": params})


def jobs_of(client: httpx.Client, file_id: str) -> list[dict[str, Any]]:
    return [j for j in client.get("/jobs", params={"limit": 200}).json()["items"] if file_id in j["inputFileIds"]]


def run_job(client: httpx.Client, tool: str, file_id: str, fmt: str | None = None, **params: str) -> dict[str, Any]:
    r = create(client, tool, file_id, fmt, **params)
    assert r.status_code == 201, r.text
    return wait_job(client, r.json()["id"], timeout=180)


def downloads(client: httpx.Client, job: dict[str, Any]) -> list[tuple[str, bytes]]:
    files = client.get(f"/jobs/{job['id']}/result").json()["files"]
    return [(f["name"], httpx.get(f["downloadUrl"]).content) for f in files]


def readable_parts(name: str, data: bytes) -> list[bytes]:
    """A download's bytes plus what it holds compressed: every ZIP member (EPUB, DOCX, ODT) and the text
    of PDF and MOBI files as PyMuPDF extracts it."""
    parts = [data]
    if data[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            parts += [zf.read(n) for n in zf.namelist()]
    kind = "pdf" if data[:5] == b"%PDF-" else "mobi" if name.endswith(".mobi") else None
    if kind is not None:
        with pymupdf.open(stream=data, filetype=kind) as doc:
            parts.append("".join(page.get_text() for page in doc).encode())
    return parts


def image_sizes(parts: list[bytes]) -> set[tuple[int, int]]:
    """Sizes of every picture among ``parts`` and every image placed in a PDF among them."""
    sizes = set()
    for part in parts:
        if part[:5] == b"%PDF-":
            with pymupdf.open(stream=part, filetype="pdf") as doc:
                sizes |= {(img[2], img[3]) for page in doc for img in page.get_images()}
            continue
        try:
            with Image.open(io.BytesIO(part)) as picture:
                sizes.add(picture.size)
        except (UnidentifiedImageError, OSError, ValueError):
            pass
    return sizes


def assert_nothing_leaked(client: httpx.Client, job: dict[str, Any], canaries: Canaries) -> list[bytes]:
    """No canary in the job's message or in any part of any output; returns the outputs' readable parts."""
    assert docs.CANARY_TEXT not in (job["errorMessage"] or "")
    parts = [p for name, data in (downloads(client, job) if job["status"] == "DONE" else [])
             for p in readable_parts(name, data)]
    for marker in canaries.markers():
        assert not any(marker in p for p in parts), f"canary {marker[:24]!r} in the output of {job['tool']}"
    assert (123, 45) not in image_sizes(parts), "the canary image is in the output"
    return parts


def assert_no_canary_in_data_dir(server: Server, canaries: Canaries) -> None:
    """Nothing the server keeps (results, job logs, leftovers, LibreOffice profiles and caches) holds a canary,
    except the upload that is one."""
    markers = canaries.markers()
    for folder, _, names in os.walk(server.data_dir):  # passes over a job folder removed while it walks
        for path in (Path(folder) / name for name in names):
            if path == canaries.stored:
                continue
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            assert not any(marker in data for marker in markers), path


# -- case 5: playlists and concat lists for FFmpeg ----------------------------------------------------------

MEDIA_TOOLS = ["video-convert", "audio-convert", "video-to-audio", "media-info", "transcribe"]
AUDIO_INPUT_TOOLS = {"audio-convert", "media-info", "transcribe"}  # the tools that take an mp3
ID3 = b"ID3\x04\x00\x00\x00\x00\x00\x00"  # an empty ID3v2 tag: the file sniffs as mp3
RIFF_AVI = b"RIFF\x00\x00\x00\x00AVI LIST"  # a RIFF AVI header: the file sniffs as avi


def playlist_targets(canaries: Canaries, listener: Listener) -> dict[str, str]:
    return {"path": str(canaries.media), "file-uri": canaries.media.as_uri(), "http": f"{listener.url}/segment.wav"}


def tools_available(client: httpx.Client, wanted: list[str]) -> list[str]:
    tools = {t["id"]: t for t in client.get("/tools").json()}
    return [t for t in wanted if tools[t]["available"]]


@pytest.mark.parametrize("target", ["path", "file-uri", "http"])
def test_playlists_are_refused_at_job_creation_by_their_content(
    client: httpx.Client, tmp_path: Path, canaries: Canaries, listener: Listener, target: str
) -> None:
    files = media.write_playlists(tmp_path, playlist_targets(canaries, listener)[target])
    for kind, path in files.items():  # list.m3u8, list.ffconcat, and the same as movie.avi and movie.mkv
        ref = upload(client, path.name, path.read_bytes())
        assert ref["format"] == ("m3u8" if kind in ("m3u8", "avi") else "ffconcat"), (kind, ref)
        for tool in tools_available(client, MEDIA_TOOLS):
            assert_problem(create(client, tool, ref["id"]), 415, "unsupported_format")
        assert jobs_of(client, ref["id"]) == []


@pytest.mark.parametrize("target", ["path", "http"])
def test_playlists_behind_a_media_signature_fail_as_unsafe_input(
    client: httpx.Client, server: Server, tmp_path: Path, canaries: Canaries, listener: Listener, target: str
) -> None:
    files = media.write_playlists(tmp_path, playlist_targets(canaries, listener)[target])
    disguised = {
        "hls.mp3": ID3 + files["m3u8"].read_bytes(),
        "concat.mp3": ID3 + files["ffconcat"].read_bytes(),
        "hls.avi": RIFF_AVI + files["m3u8"].read_bytes(),
    }
    jobs = []
    for name, data in disguised.items():
        ref = upload(client, name, data)
        assert ref["format"] == name.rsplit(".", 1)[1]
        for tool in tools_available(client, MEDIA_TOOLS):
            if name.endswith(".mp3") and tool not in AUDIO_INPUT_TOOLS:
                continue
            r = create(client, tool, ref["id"])
            if tool == "transcribe":  # it reads the duration at job creation, through the same guarded open
                assert_problem(r, 422, "unsafe_input")
                continue
            assert r.status_code == 201, r.text
            jobs.append(r.json()["id"])
    for job_id in jobs:
        job = wait_job(client, job_id)
        assert (job["status"], job["errorCode"]) == ("FAILED", "unsafe_input"), job
        assert_problem(client.get(f"/jobs/{job_id}/result"), 409, "job_failed")
        assert_nothing_leaked(client, job, canaries)
    assert_no_canary_in_data_dir(server, canaries)


def test_media_tools_still_convert_after_the_playlists(client: httpx.Client, tmp_path: Path) -> None:
    clip = upload(client, "clip.mp4", media.write_clip(tmp_path / "clip.mp4", "mp4", seconds=1.0).read_bytes())
    outputs = {"video-convert": "webm", "audio-convert": "wav", "video-to-audio": "wav", "media-info": "json",
               "transcribe": "txt"}
    for tool in tools_available(client, list(outputs)):
        job = run_job(client, tool, clip["id"], outputs[tool])
        assert job["status"] == "DONE", job


# -- case 6: office documents that link instead of embed, and macros -------------------------------------------


@pytest.fixture(scope="module")
def office_bytes(tmp_path_factory: pytest.TempPathFactory, canaries: Canaries,
                 listener: Listener) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("office")
    made = [
        docs.make_docx_with_links(folder, canaries.text, canaries.image, remote=listener.url),
        docs.make_odt_with_links(folder, canaries.text, canaries.image, listener.url),
        docs.make_fodt_with_links(folder, canaries.text, canaries.image, listener.url),
    ]
    return {path.name: path.read_bytes() for path in made}


@needs_office
@pytest.mark.parametrize(("sample", "tool", "fmt", "engine"), [
    ("linked.docx", "document-to-pdf", "pdf", "libreoffice"),
    ("linked.docx", "document-to-pdf", "pdf", "pandoc"),
    ("linked.docx", "document-convert", "odt", "libreoffice"),
    ("linked.docx", "document-convert", "html", "pandoc"),
    ("linked.odt", "document-to-pdf", "pdf", "libreoffice"),
    ("linked.odt", "document-to-pdf", "pdf", "pandoc"),
    ("linked.odt", "document-convert", "docx", "libreoffice"),
    ("linked.odt", "document-convert", "html", "pandoc"),
])
def test_office_links_are_never_followed(client: httpx.Client, server: Server, office_bytes: dict[str, bytes],
                                         canaries: Canaries, sample: str, tool: str, fmt: str, engine: str) -> None:
    ref = upload(client, sample, office_bytes[sample])
    job = run_job(client, tool, ref["id"], fmt, engine=engine)
    assert job["status"] == "DONE", job
    parts = assert_nothing_leaked(client, job, canaries)
    assert any(b"Visible body text." in p for p in parts)
    assert_no_canary_in_data_dir(server, canaries)


def test_flat_odt_is_not_a_document_tool_input(client: httpx.Client, office_bytes: dict[str, bytes]) -> None:
    # A flat ODF file is XML; the sniffer calls it xml and no document tool takes xml, so no engine sees it.
    ref = upload(client, "linked.fodt", office_bytes["linked.fodt"])
    assert ref["format"] == "xml"
    for tool, fmt in (("document-to-pdf", "pdf"), ("document-convert", "docx")):
        assert_problem(create(client, tool, ref["id"], fmt), 415, "unsupported_format")
    assert jobs_of(client, ref["id"]) == []


@needs_office
@pytest.mark.parametrize(("tool", "fmt"), [("document-to-pdf", "pdf"), ("document-convert", "docx")])
def test_office_macro_never_runs(client: httpx.Client, server: Server, tmp_path: Path, canaries: Canaries,
                                 tool: str, fmt: str) -> None:
    marker = tmp_path / "macro-ran.txt"
    ref = upload(client, "macro.odt", docs.make_odt_with_macro(tmp_path, marker).read_bytes())
    job = run_job(client, tool, ref["id"], fmt, engine="libreoffice")
    assert job["status"] == "DONE", job
    parts = assert_nothing_leaked(client, job, canaries)
    assert any(b"auto-run macro" in p for p in parts)
    assert not marker.exists()
    assert_no_canary_in_data_dir(server, canaries)


def test_document_tools_still_convert_after_the_office_files(client: httpx.Client, tmp_path: Path) -> None:
    ref = upload(client, "plain.docx", docs.make_docx(tmp_path).read_bytes())
    for tool, fmt in (("document-to-pdf", "pdf"), ("document-convert", "odt")):
        job = run_job(client, tool, ref["id"], fmt)
        assert job["status"] == "DONE", job
        assert any(b"Sample Title" in p for name, data in downloads(client, job)
                   for p in readable_parts(name, data))


# -- case 7: includes and external resources in Markdown, reStructuredText and HTML ------------------------------


def hostile_markdown(canaries: Canaries, remote: str) -> str:
    text, image = canaries.text.resolve(), canaries.image.resolve()
    return (
        "# Hostile\n\nVisible body text.\n\n"
        f"!include {text}\n\n!include {canaries.stored_relative}\n\n"
        f"![abs]({image}) ![uri]({image.as_uri()}) ![stored]({canaries.stored_relative}) ![remote]({remote}/md.png)\n\n"
        f'<iframe src="{text.as_uri()}"></iframe>\n\n<img src="{image.as_uri()}"> <img src="{remote}/raw.png">\n\n'
        f'<link rel="stylesheet" href="{remote}/md.css">\n\n<style>@import url("{remote}/import.css");</style>\n\n'
        f'```{{=html}}\n<iframe src="{canaries.stored.as_uri()}"></iframe>\n```\n\n'
        f'```{{=typst}}\n#read("{text}")\n```\n'
    )


def hostile_rst(canaries: Canaries, remote: str) -> str:
    text = canaries.text.resolve()
    return (
        "Hostile\n=======\n\nVisible body text.\n\n"
        f".. include:: {text}\n\n.. include:: {canaries.stored_relative}\n\n"
        f".. include:: {canaries.stored}\n   :literal:\n\n"
        f".. raw:: html\n   :file: {text}\n\n.. code:: text\n   :file: {text}\n\n"
        f".. image:: {canaries.image.resolve()}\n\n.. image:: {remote}/rst.png\n"
    )


def rst_tables(canaries: Canaries, remote: str) -> str:
    # pandoc fails the whole document when a csv-table's source cannot be read: that is the outcome asserted.
    return (
        "Tables\n======\n\nVisible body text.\n\n"
        f".. csv-table:: local\n   :file: {canaries.text.resolve()}\n\n"
        f".. csv-table:: remote\n   :url: {remote}/table.csv\n"
    )


def hostile_html_body(canaries: Canaries, remote: str) -> str:
    text, image = canaries.text.resolve(), canaries.image.resolve()
    return (
        f'<p>Visible body text.</p><iframe src="{text.as_uri()}"></iframe><iframe src="{remote}/frame.html"></iframe>'
        f'<img src="{image.as_uri()}"><img src="{image}"><img src="{canaries.stored_relative}">'
        f'<img src="{remote}/html.png"><link rel="stylesheet" href="{remote}/html.css">'
        f'<style>@import url("{remote}/import.css"); p {{ background: url("{remote}/bg.png") }}</style>'
        f'<object data="{text.as_uri()}"></object><embed src="{remote}/embed.swf">'
        f'<script src="{remote}/script.js"></script><video src="{remote}/video.mp4"></video>'
    )


@pytest.fixture(scope="module")
def markup_samples(tmp_path_factory: pytest.TempPathFactory, canaries: Canaries,
                   listener: Listener) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("markup")
    made = [
        docs.make_markdown(folder, "hostile.md", hostile_markdown(canaries, listener.url)),
        docs.make_markdown(folder, "hostile.rst", hostile_rst(canaries, listener.url)),
        docs.make_markdown(folder, "tables.rst", rst_tables(canaries, listener.url)),
        docs.make_html(folder, hostile_html_body(canaries, listener.url), name="hostile.html"),
    ]
    return {path.name: path.read_bytes() for path in made}


MARKUP_JOBS = [
    ("hostile.md", "document-convert", "html"),
    ("hostile.md", "document-convert", "epub"),
    ("hostile.md", "document-convert", "docx"),
    ("hostile.md", "ebook-convert", "epub"),
    pytest.param("hostile.md", "ebook-convert", "mobi", marks=needs_calibre),
    ("hostile.rst", "document-convert", "html"),
    ("hostile.rst", "document-convert", "odt"),
    ("hostile.html", "document-convert", "epub"),
    ("hostile.html", "document-convert", "md"),
    ("hostile.html", "ebook-convert", "epub"),
    pytest.param("hostile.html", "ebook-convert", "mobi", marks=needs_calibre),
]


@pytest.mark.parametrize(("sample", "tool", "fmt"), MARKUP_JOBS)
def test_markup_includes_and_external_resources_are_never_loaded(
    client: httpx.Client, server: Server, markup_samples: dict[str, bytes], canaries: Canaries,
    sample: str, tool: str, fmt: str,
) -> None:
    ref = upload(client, sample, markup_samples[sample])
    job = run_job(client, tool, ref["id"], fmt)
    assert job["status"] == "DONE", job
    parts = assert_nothing_leaked(client, job, canaries)
    assert any(b"Visible body text." in p for p in parts)
    assert_no_canary_in_data_dir(server, canaries)


def test_rst_table_read_from_a_file_or_url_fails_the_job(
    client: httpx.Client, server: Server, markup_samples: dict[str, bytes], canaries: Canaries
) -> None:
    ref = upload(client, "tables.rst", markup_samples["tables.rst"])
    job = run_job(client, "document-convert", ref["id"], "html")
    assert (job["status"], job["errorCode"]) == ("FAILED", "damaged_input"), job
    assert "not found in resource path" in job["errorMessage"]
    assert_nothing_leaked(client, job, canaries)
    assert_no_canary_in_data_dir(server, canaries)


def test_markup_tools_still_convert_after_the_hostile_files(client: httpx.Client, tmp_path: Path) -> None:
    ref = upload(client, "plain.md", docs.make_markdown(tmp_path).read_bytes())
    for tool, fmt in (("document-convert", "html"), ("ebook-convert", "epub")):
        job = run_job(client, tool, ref["id"], fmt)
        assert job["status"] == "DONE", job
        assert any(b"First heading" in p for name, data in downloads(client, job) for p in readable_parts(name, data))


# -- SVG: linked images, stylesheets, sprites and scripts ----------------------------------------------------


def hostile_svg(canaries: Canaries, listener: Listener) -> bytes:
    """A white SVG that links the canary image (as a file: URI and as a bare path), a remote image, a remote
    sprite and remote stylesheets; only the text "kept" is its own."""
    local = canaries.image.resolve()
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="200" height="100">'
        f'<style>@import url({listener.url}/style.css); rect.paint {{ fill: url({listener.url}/paint.svg#p) }}</style>'
        '<rect width="200" height="100" fill="#ffffff"/><rect class="paint" width="20" height="20"/>'
        f'<image xlink:href="{local.as_uri()}" width="123" height="45"/>'
        f'<image href="{local}" x="70" y="50" width="123" height="45"/>'
        f'<image href="{listener.url}/remote.png" width="50" height="50"/>'
        f'<use href="{listener.url}/sprite.svg#icon"/><script href="{listener.url}/run.js"/>'
        '<text x="10" y="90" font-size="12">kept</text></svg>'
    ).encode()


def canary_green(parts: list[bytes]) -> bool:
    """Whether any picture among ``parts`` (or any PDF page, rendered) shows the canary's pure green."""
    for part in parts:
        pictures = []
        if part[:5] == b"%PDF-":
            with pymupdf.open(stream=part, filetype="pdf") as doc:
                pictures = [Image.open(io.BytesIO(page.get_pixmap(dpi=72).tobytes("png"))) for page in doc]
        else:
            try:
                pictures = [Image.open(io.BytesIO(part))]
            except (UnidentifiedImageError, OSError, ValueError):
                continue
        for picture in pictures:
            colours = picture.convert("RGB").getcolors(maxcolors=1 << 20) or []
            if any(rgb == (0, 255, 0) for _, rgb in colours):
                return True
    return False


@pytest.mark.parametrize(("tool", "fmt"), [("image-convert", "png"), ("vector-convert", "png"),
                                           ("vector-convert", "pdf"), ("vector-convert", "svg")])
def test_svg_references_are_never_followed(client: httpx.Client, canaries: Canaries, listener: Listener,
                                           tool: str, fmt: str) -> None:
    import gzip

    svg = hostile_svg(canaries, listener)
    for name, data in (("hostile.svg", svg), ("hostile.svgz", gzip.compress(svg))):
        job = run_job(client, tool, upload(client, name, data)["id"], fmt)
        assert job["status"] == "DONE", job
        parts = assert_nothing_leaked(client, job, canaries)
        assert not canary_green(parts), f"the linked canary image was drawn by {tool} -> {fmt}"
        if fmt == "svg":
            text = parts[0].decode("utf-8")
            assert "kept" in text and "127.0.0.1" not in text and str(canaries.image) not in text


def test_svg_entity_bombs_are_refused_at_job_creation(client: httpx.Client) -> None:
    laughs = ('<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
              '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]><svg xmlns="http://www.w3.org/2000/svg"><text>&c;</text></svg>')
    external = ('<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                '<svg xmlns="http://www.w3.org/2000/svg"><text>&x;</text></svg>')
    huge = '<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="100000"><rect width="1" height="1"/></svg>'
    for body, code in ((laughs, "unsafe_input"), (external, "unsafe_input"), (huge, "input_too_large")):
        ref = upload(client, "bomb.svg", body.encode())
        assert_problem(create(client, "vector-convert", ref["id"], "png"), 422, code)
        assert_problem(create(client, "image-convert", ref["id"], "png"), 422, code)


def test_email_never_fetches_what_its_html_points_to(client: httpx.Client, canaries: Canaries,
                                                     listener: Listener) -> None:
    from email.message import EmailMessage

    local = canaries.image.resolve()
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "a@example.org", "b@example.org", "Linked"
    msg.set_content("plain part")
    msg.add_alternative(
        f'<html><head><link rel="stylesheet" href="{listener.url}/mail.css">'
        f'<style>@import url({listener.url}/imp.css);</style></head>'
        f'<body style="background:url({listener.url}/bg.png)"><p>kept text</p>'
        f'<img src="{local.as_uri()}"><img src="{local}"><img src="{listener.url}/pixel.png">'
        f'<iframe src="{listener.url}/frame.html"></iframe><object data="{canaries.text.resolve().as_uri()}"></object>'
        f'</body></html>', subtype="html")
    job = run_job(client, "email-to-pdf", upload(client, "linked.eml", bytes(msg))["id"])
    assert job["status"] == "DONE", job
    parts = assert_nothing_leaked(client, job, canaries)
    assert b"kept text" in b"".join(parts)
    assert not canary_green(parts)
