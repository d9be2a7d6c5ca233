"""Hypothesis over file names, params objects, ranges and multipart shapes: never a crash."""

from __future__ import annotations

import tempfile
from pathlib import Path

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from converters.catalogue import load_catalogue
from converters.inputs.sniff import HEAD, MIME_TYPES, sniff, sniff_bytes
from localapi.core.errors import ServiceError
from localapi.core.files import display_name
from localapi.http.routes.downloads import content_disposition, parse_range
from tests.conftest import Server

BIDI = set("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


@given(st.text(max_size=2000))
def test_display_names_are_always_safe(name: str) -> None:
    shown = display_name(name)
    assert shown and len(shown) <= 200
    assert "/" not in shown and "\\" not in shown and not shown.startswith(".")
    assert not any(ord(c) < 32 or ord(c) == 127 or c in BIDI for c in shown)


@given(st.text(max_size=300))
def test_content_disposition_never_breaks_the_header(name: str) -> None:
    value = content_disposition(display_name(name))
    value.encode("latin-1")
    assert "\r" not in value and "\n" not in value and value.count('"') == 2


FORMAT_IDS = set(MIME_TYPES)
# Formats the client's name may choose between, and only once the bytes are known to be text
# (sniff's docstring); OLE containers are told apart by name too (doc, xls, ppt): only an Outlook
# message (msg) is known by its directory, which random bytes never make.
NAMED_TEXT = {"txt", "md", "csv", "rst", "json", "srt", "vtt", "html"}
OLE = {"doc", "xls", "ppt"}
CONTENT_TEXT = {"m3u8", "ffconcat", "html", "svg", "fb2", "xml",  # text told apart by what it starts with
                "ass", "ssa", "sub", "ttml", "eml"}
# Signatures whose format depends on what they wrap: a ZIP's files, a compressed stream's tar header.
CONTAINERS = {"zip", "gz", "bz2", "xz", "zst"}
NAMES = ["", "upload", "a.txt", "a.md", "a.csv", "a.json", "a.html", "a.png", "a.pdf", "a.mp4", "a.docx",
         "a.xls", "a.ppt", "a.exe", "../../x.svg", "A.MD"]
SIGNATURES = [b"", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff\xe0", b"GIF89a", b"RIFF\x00\x00\x00\x00WEBPVP8 ",
              b"%PDF-1.7\n", b"%!PS-Adobe-3.0", b"PK\x03\x04", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", b"{\\rtf1",
              b"\x00\x00\x00\x18ftypheic", b"\x00\x00\x00\x18ftypisom", b"\x1aE\xdf\xa3", b"fLaC", b"OggS",
              b"ID3\x04", b"\xff\xfb", b"<!doctype html>", b"<?xml version='1.0'?><svg", b"#EXTM3U\n",
              b"ffconcat version 1.0\n", b"\xef\xbb\xbf", b"\xff\xfe", b"BOOKMOBI",
              b"7z\xbc\xaf\x27\x1c", b"\x1f\x8b\x08", b"BZh91AY&SY", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd",
              b"wOF2", b"OTTO", b"\x00\x01\x00\x00\x00\x01", b"[Script Info]\n", b"WEBVTT\n",
              b"1\n00:00:01,000 --> 00:00:02,000\n", b"{1}{25}"]
CONTENTS = st.builds(lambda sig, rest: sig + rest, st.sampled_from(SIGNATURES),
                     st.binary(max_size=300) | st.text(max_size=300).map(lambda t: t.encode("utf-8")))


@settings(max_examples=300, deadline=None)
@given(CONTENTS)
def test_sniffing_bytes_gives_a_known_format_or_none(head: bytes) -> None:
    fmt = sniff_bytes(head)
    assert fmt is None or fmt in FORMAT_IDS | {"ole"}, fmt
    assert sniff_bytes(head) == fmt  # no state between calls


@settings(max_examples=300, deadline=None)
@given(CONTENTS)
def test_sniffed_format_depends_on_the_name_only_for_text_and_ole(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "upload"
        path.write_bytes(content)
        answers = {name: sniff(path, name) for name in NAMES}
        assert answers == {name: sniff(path, name) for name in NAMES}  # deterministic
    by_bytes = sniff_bytes(content[:HEAD])
    found = set(answers.values())
    assert found <= FORMAT_IDS | {None}, answers
    if not content:
        assert found == {None}
    elif by_bytes == "ole":
        assert found <= OLE and answers["a.xls"] == "xls" and answers["a.ppt"] == "ppt", answers
    elif by_bytes is not None:  # a signature decides, whatever the client called the file
        assert len(found) == 1 and (by_bytes in CONTAINERS or found == {by_bytes}), answers
    else:  # text or nothing: the name never decides whether the bytes are a format at all
        assert found == {None} or None not in found, answers
        assert found <= NAMED_TEXT | CONTENT_TEXT | {None, "tga"}, answers  # TGA 2.0: known by its footer
        if len(found) > 1:  # the name chose among text formats, and nothing else
            assert found <= NAMED_TEXT, answers


@given(st.text(max_size=40), st.integers(min_value=0, max_value=10**12))
def test_range_parsing_answers_or_refuses(header: str, size: int) -> None:
    try:
        parsed = parse_range(header, size)
    except ServiceError as exc:
        assert exc.code == "range_not_satisfiable"
        return
    if parsed is not None:
        start, end = parsed
        assert 0 <= start <= end < size


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner,
                                                                                max_size=3), max_leaves=8)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([t.id for t in load_catalogue()]), st.dictionaries(st.text(max_size=15), JSON, max_size=4))
def test_params_models_validate_or_refuse_cleanly(tool_id: str, params: dict[str, object]) -> None:
    tool = load_catalogue().get(tool_id)
    assert tool is not None
    try:
        model = tool.params.model_validate(params)
    except ValidationError:
        return
    model.model_dump(mode="json", by_alias=True)


PART = st.tuples(st.sampled_from(["file", "other", "", "fïle", "x" * 300]),
                 st.one_of(st.none(), st.text(max_size=30)), st.binary(max_size=200))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(PART, max_size=20), boundary=st.sampled_from(["b", "x" * 70, "-_-"]), truncate=st.booleans())
def test_multipart_shapes_get_a_documented_answer(server: Server, api_key: str, parts: list[tuple[str, str | None,
                                                  bytes]], boundary: str, truncate: bool) -> None:
    body = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
        body += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode("utf-8", "replace")
        body += data + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    if truncate:
        body = body[: len(body) // 2]
    r = httpx.post(f"{server.base_url}/files", content=body, timeout=30,
                   headers={"X-API-Key": api_key, "Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code in (201, 400), r.text
    assert r.headers["content-type"].startswith("application/problem+json" if r.status_code == 400
                                                else "application/json")
