"""Hostile Outlook messages against a real server: HTML pointing at a loopback listener and at a local canary
file, attached messages nested past the limit, thousands of attachments, an RTF body claiming gigabytes, and
damaged OLE2 files. Each is refused when the job is created or converts without fetching or reading anything
outside the message; no job leaves its folder behind and the worker stays usable."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pymupdf
import pytest

from tests.conftest import Server, assert_problem, module_server, upload, wait_job
from tests.converters import doc_samples as docs
from tests.converters import msg_samples as ms
from tests.hostile.canary import Listener, listening


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from module_server(tmp_path_factory, "email-hostile")


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client(server.create_key()) as c:
        yield c


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    yield from listening()


def create(client: httpx.Client, name: str, data: bytes, **params: str) -> httpx.Response:
    ref = upload(client, name, data)
    return client.post("/jobs", json={"tool": "email-to-pdf", "inputFileIds": [ref["id"]], "params": params})


def assert_nothing_left(server: Server) -> None:
    deadline = time.monotonic() + 5  # the supervisor removes a job's folder right after recording its end
    while any((server.data_dir / "jobs").glob("job_*")):
        assert time.monotonic() < deadline, "a job's work folder was left behind"
        time.sleep(0.02)


def results(client: httpx.Client, job: dict[str, Any]) -> list[bytes]:
    files = client.get(f"/jobs/{job['id']}/result").json()["files"]
    return [httpx.get(f["downloadUrl"]).content for f in files]


def assert_still_converts(client: httpx.Client) -> None:
    job = create(client, "honest.msg", ms.msg_bytes(ms.Outlook()))
    assert job.status_code == 201, job.text
    assert wait_job(client, job.json()["id"])["status"] == "DONE"


def test_an_msg_never_fetches_or_reads_what_its_html_points_to(client: httpx.Client, listener: Listener,
                                                                 server: Server, tmp_path: Path) -> None:
    text, image = docs.make_canary(tmp_path)
    html = (f'<html><head><link rel="stylesheet" href="{listener.url}/mail.css">'
            f'<style>@import url({listener.url}/imp.css);</style></head>'
            f'<body style="background:url({listener.url}/bg.png)"><p>kept text</p>'
            f'<img src="{image.resolve().as_uri()}"><img src="{image.resolve()}"><img src="{listener.url}/pixel.png">'
            f'<iframe src="{listener.url}/frame.html"></iframe><object data="{text.resolve().as_uri()}"></object>'
            f'<a href="{text.resolve().as_uri()}">local link</a></body></html>')
    rtf = (rb"{\rtf1\ansi\fromhtml1 {\*\htmltag84 <img src=" + f"{listener.url}/rtf.png".encode() + rb">}}")
    inner = ms.Outlook(subject="inner", html=f'<img src="{listener.url}/inner.png">')
    source = ms.msg_bytes(ms.Outlook(html=html, rtf=rtf, attachments=[
        ms.Attachment("remote.png", b"", "image/png", "remote@x"), ms.Attachment("inner.msg", message=inner)]))
    job = create(client, "linked.msg", source, attachments="extract")
    assert job.status_code == 201, job.text
    done = wait_job(client, job.json()["id"])
    assert done["status"] == "DONE", done
    parts = results(client, done)
    pdf = next(p for p in parts if p.startswith(b"%PDF-"))
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        shown = "".join(page.get_text() for page in doc)
        assert "kept text" in shown and "local link" in shown
        assert all(page.get_images() == [] for page in doc)
    for marker in (docs.CANARY_TEXT.encode(), image.read_bytes(), base64.b64encode(image.read_bytes())[:40]):
        assert not any(marker in part for part in parts)
    assert listener.hits == [], listener.hits
    assert_nothing_left(server)


@pytest.mark.parametrize(("label", "build", "detail"), [
    ("nested", lambda: ms.nested(12), "nests attached messages"),
    ("attachments", lambda: ms.Outlook(attachments=[ms.Attachment(f"{n}.txt", b"x") for n in range(600)]),
     "600 attachments"),
])
def test_limits_are_checked_at_job_creation(client: httpx.Client, server: Server, label: str, build: Any,
                                            detail: str) -> None:
    response = create(client, f"{label}.msg", ms.msg_bytes(build()))
    body = assert_problem(response, 422, "input_too_large")
    assert detail in body["detail"]
    assert_still_converts(client)
    assert_nothing_left(server)


def test_an_rtf_body_claiming_gigabytes_is_refused_at_job_creation(client: httpx.Client) -> None:
    import compressed_rtf

    data = bytearray(ms.msg_bytes(ms.Outlook(body=None, rtf=rb"{\rtf1 small}")))
    stream = compressed_rtf.compress(rb"{\rtf1 small}")
    at = data.find(stream)
    assert at > 0
    data[at + 4:at + 8] = (3 * 1024**3).to_bytes(4, "little")  # the raw size the stream claims
    body = assert_problem(create(client, "claims.msg", bytes(data)), 422, "input_too_large")
    assert "RTF" in body["detail"]


@pytest.mark.parametrize("damage", ["cut", "noise", "directory"])
def test_a_damaged_ole_file_is_damaged_input(client: httpx.Client, server: Server, damage: str) -> None:
    import random

    whole = ms.msg_bytes(ms.Outlook(attachments=[ms.Attachment("figures.csv", b"a,b\n" * 3000)]))
    if damage == "cut":
        data = whole[:len(whole) // 2]
    elif damage == "noise":
        data = whole[:8] + random.Random(7).randbytes(len(whole) - 8)
    else:  # the header intact, the rest of the first sectors scrambled
        data = whole[:512] + random.Random(8).randbytes(2048) + whole[2560:]
    response = create(client, "damaged.msg", data)
    if response.status_code == 201:
        job = wait_job(client, response.json()["id"])
        assert job["status"] == "FAILED" and job["errorCode"] == "damaged_input", job
        assert "Traceback" not in job["errorMessage"]
    else:
        assert_problem(response, 422, "damaged_input")
    assert_still_converts(client)
    assert_nothing_left(server)
