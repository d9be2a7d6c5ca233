"""Case 10 for the PDF toolbox: every layout, content, structure and form tool meets the 100 000-page PDF
and the FlateDecode bombs of ``test_pdf_bombs`` — refused at creation, or ended by its own code or the
clock, within the memory cap, with the server still answering."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.conftest import Server, assert_problem, image_pdf_bytes, png_bytes, upload
from tests.hostile.test_pdf_bombs import (
    BOMB_TIMEOUT,
    BOUNDED,
    CONTENT_BOMB,
    GiB,
    assert_service_still_works,
    assert_work_dirs_removed,
    capped,  # noqa: F401 - a fixture
    capped_servers,  # noqa: F401 - a fixture
    flate_bomb_pdf,
    pages_pdf,  # noqa: F401 - a fixture
    run_seconds,
    wait_all,
)

# (tool, params, output format, second input) for each toolbox tool; the second input is named in EXTRAS.
TOOLBOX: list[tuple[str, dict[str, Any], str, str | None]] = [
    ("pdf-page-numbers", {}, "pdf", None),
    ("pdf-crop", {"top": 36}, "pdf", None),
    ("pdf-crop", {"mode": "auto"}, "pdf", None),
    ("pdf-scale", {}, "pdf", None),
    ("pdf-n-up", {"pagesPerSheet": 4}, "pdf", None),
    ("pdf-booklet", {}, "pdf", None),
    ("pdf-overlay", {}, "pdf", "stamp"),
    ("pdf-organize", {}, "pdf", None),
    ("pdf-split", {"mode": "size", "maxMegabytes": 1}, "pdf", None),
    ("pdf-split", {"mode": "bookmarks"}, "pdf", None),
    ("pdf-outline", {}, "json", None),
    ("pdf-outline", {}, "pdf", "outline"),
    ("pdf-attachments", {}, "keep", None),
    ("pdf-attachments", {}, "pdf", "note"),
    ("pdf-form-fields", {}, "json", None),
    ("pdf-form-fill", {}, "pdf", "values"),
    ("pdf-extract-images", {}, "keep", None),
    ("pdf-remove-blank-pages", {}, "pdf", None),
    ("pdf-add-image", {}, "pdf", "picture"),
    ("pdf-flatten", {}, "pdf", None),
    ("pdf-flatten", {"mode": "image", "dpi": 72}, "pdf", None),
    ("pdf-remove-annotations", {}, "pdf", None),
    ("pdf-grayscale", {}, "pdf", None),
]
SHORT = {tool: BOMB_TIMEOUT for tool, *_ in TOOLBOX}
# The bombs have no bookmarks, attachments or form fields: those jobs end with their own codes.
NOTHING_THERE: dict[str, tuple[str, str | None]] = {
    f"pdf-split {json.dumps({'mode': 'bookmarks'})} -> pdf": ("FAILED", "no_bookmarks"),
    "pdf-attachments {} -> keep": ("FAILED", "no_attachments"),
    "pdf-form-fill {} -> pdf": ("FAILED", "no_form_fields"),
}


def label(tool: str, params: dict[str, Any], fmt: str) -> str:
    return f"{tool} {json.dumps(params, sort_keys=True)} -> {fmt}"


def extras(client: httpx.Client) -> dict[str, str]:
    """The second inputs, uploaded: a one-page stamp, an outline, form values, a note and a picture."""
    outline = json.dumps({"bookmarks": [{"level": 1, "title": "Start", "page": 1}]}).encode()
    return {
        "stamp": upload(client, "stamp.pdf", image_pdf_bytes(pages=1, size=100))["id"],
        "outline": upload(client, "outline.json", outline)["id"],
        "values": upload(client, "values.json", b'{"name": "Ada"}')["id"],
        "note": upload(client, "note.txt", b"a note\n")["id"],
        "picture": upload(client, "logo.png", png_bytes(64, 64))["id"],
    }


def create_all(client: httpx.Client, pdf_id: str, second: dict[str, str]) -> dict[str, httpx.Response]:
    answers = {}
    for tool, params, fmt, other in TOOLBOX:
        inputs = [pdf_id] + ([second[other]] if other else [])
        answers[label(tool, params, fmt)] = client.post("/jobs", json={
            "tool": tool, "inputFileIds": inputs, "params": params, "outputFormat": fmt})
    return answers


def outcomes(server: Server, client: httpx.Client, answers: dict[str, httpx.Response],
             timeout: float) -> tuple[dict[str, tuple[str, str | None]], list[dict[str, Any]], int]:
    """Each created job's (status, errorCode), the jobs as they ended, and the peak RSS of a child."""
    created = {name: answer.json()["id"] for name, answer in answers.items() if answer.status_code == 201}
    ended, _, peak_child = wait_all(server, client, list(created.values()), timeout=timeout)
    by_id = {job["id"]: job for job in ended}
    return ({name: (by_id[job_id]["status"], by_id[job_id]["errorCode"]) for name, job_id in created.items()},
            ended, peak_child)


def test_100000_pages_are_refused_by_every_tool_that_goes_through_them(
        capped: tuple[Server, httpx.Client], pages_pdf: bytes) -> None:  # noqa: F811 - the fixtures
    server, client = capped
    answers = create_all(client, upload(client, "pages.pdf", pages_pdf)["id"], extras(client))
    refused = {}
    for name, answer in answers.items():
        if answer.status_code != 201:
            body = assert_problem(answer, 422, "input_too_large")
            assert "100,000" in body["detail"], (name, body)
            refused[name] = True
    # what reads or writes the file as a whole, or one thing in it, has no page limit and finishes
    whole = {label("pdf-outline", {}, "json"), label("pdf-outline", {}, "pdf"),
             label("pdf-attachments", {}, "keep"), label("pdf-attachments", {}, "pdf"),
             label("pdf-form-fields", {}, "json"), label("pdf-form-fill", {}, "pdf")}
    assert set(answers) - set(refused) == whole, sorted(set(answers) - set(refused))
    # (pdf-split by bookmarks copies every page, so the page limit holds for it as for the other modes)
    done, ended, _ = outcomes(server, client, answers, timeout=180)
    assert done == {
        label("pdf-outline", {}, "json"): ("DONE", None), label("pdf-outline", {}, "pdf"): ("DONE", None),
        label("pdf-attachments", {}, "keep"): ("FAILED", "no_attachments"),
        label("pdf-attachments", {}, "pdf"): ("DONE", None), label("pdf-form-fields", {}, "json"): ("DONE", None),
        label("pdf-form-fill", {}, "pdf"): ("FAILED", "no_form_fields")}, ended
    assert_work_dirs_removed(server, [job["id"] for job in ended])
    assert_service_still_works(server, client)


@pytest.mark.alone  # a conversion starved by a parallel test's work would reach the 2 s timeout
@pytest.mark.parametrize("capped", [SHORT], indirect=True, ids=["short-timeouts"])
def test_content_stream_bomb_ends_every_toolbox_job_within_the_timeout_and_memory_cap(
        capped: tuple[Server, httpx.Client]) -> None:  # noqa: F811 - the fixture
    server, client = capped
    bomb = upload(client, "content-bomb.pdf", flate_bomb_pdf("content", CONTENT_BOMB, 3))["id"]
    answers = create_all(client, bomb, extras(client))
    assert {name: answer.status_code for name, answer in answers.items()} == dict.fromkeys(answers, 201)
    done, ended, peak_child = outcomes(server, client, answers, timeout=300)
    # Only the tools that interpret the page's content lex the gigabytes, and only the clock stops them
    # (the supervisor's deadline is the only source of errorCode "timeout"); the others copy the stream
    # as it is stored, or never touch it.
    lexing = {label("pdf-crop", {"mode": "auto"}, "pdf"), label("pdf-remove-blank-pages", {}, "pdf"),
              label("pdf-flatten", {"dpi": 72, "mode": "image"}, "pdf"), label("pdf-grayscale", {}, "pdf")}
    expected = {name: ("FAILED", "timeout") if name in lexing else ("DONE", None) for name in answers}
    expected.update(NOTHING_THERE)
    # showing a page on a new sheet makes a form of its content, decompressed in memory: MuPDF stops at
    # its compression-bomb ratio at once, and the job says why
    expected.update(dict.fromkeys([label("pdf-scale", {}, "pdf"), label("pdf-n-up", {"pagesPerSheet": 4}, "pdf"),
                                   label("pdf-booklet", {}, "pdf")], ("FAILED", "unsafe_input")))
    assert done == expected, ended
    for job in ended:
        assert run_seconds(job) < BOMB_TIMEOUT + 45, job
    assert peak_child < BOUNDED, f"a conversion child reached {peak_child >> 20} MiB"
    assert_work_dirs_removed(server, [job["id"] for job in ended])
    assert_service_still_works(server, client)


@pytest.mark.alone  # a conversion starved by a parallel test's work would reach the 2 s timeout
@pytest.mark.parametrize("capped", [SHORT], indirect=True, ids=["short-timeouts"])
def test_image_bomb_is_decoded_only_as_far_as_each_toolbox_job_needs(
        capped: tuple[Server, httpx.Client]) -> None:  # noqa: F811 - the fixture
    server, client = capped
    bomb = upload(client, "image-bomb.pdf", flate_bomb_pdf("image", 4 * GiB, 2))["id"]
    answers = create_all(client, bomb, extras(client))
    done, ended, peak_child = outcomes(server, client, answers, timeout=300)
    expected = dict.fromkeys(answers, ("DONE", None))
    expected.update(NOTHING_THERE)
    assert done == expected, ended
    assert peak_child < BOUNDED, f"a conversion child reached {peak_child >> 20} MiB"
    assert_work_dirs_removed(server, [job["id"] for job in ended])
    assert_service_still_works(server, client)
