"""Workflows through a real server: chains across families, fan-out and merge, refusals, failure, cancel."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pymupdf
import pytest

from tests.conftest import Server, assert_problem, png_bytes, upload


def wait_workflow(client: httpx.Client, workflow_id: str, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = client.get(f"/workflows/{workflow_id}", params={"wait": 30})
        assert r.status_code == 200, r.text
        if r.json()["status"] in ("DONE", "FAILED", "CANCELED"):
            return r.json()
    raise AssertionError(f"workflow {workflow_id} did not end")


def pdf_of(client: httpx.Client, result: dict) -> pymupdf.Document:
    return pymupdf.open(stream=httpx.get(result["downloadUrl"]).content, filetype="pdf")


def made_by(server: Server, job_id: str) -> list[str]:
    """The files a job made, as its row records them: a workflow deletes what its earlier steps made as it
    ends, and GET /jobs/{id}/result answers 410 for those jobs from then on."""
    db = server.database()
    try:
        return list(json.loads(db.one("select result_file_ids from jobs where id = ?", job_id)["result_file_ids"]))
    finally:
        db.close()


@pytest.mark.backends
def test_fan_out_then_merge_keeps_the_input_order(server: Server, client: httpx.Client) -> None:
    colours = [(250, 0, 0), (0, 250, 0), (0, 0, 250), (250, 250, 0), (0, 250, 250)]
    ids = [upload(client, f"p{n}.png", png_bytes(120, 90, c))["id"] for n, c in enumerate(colours)]
    r = client.post("/workflows", json={"inputFileIds": ids, "tag": "album", "steps": [
        {"tool": "image-convert", "outputFormat": "jpg"}, {"tool": "image-to-pdf"}]})
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["id"].startswith("wf_") and created["tag"] == "album"
    assert created["status"] in ("QUEUED", "PROCESSING") and len(created["steps"]) == 2
    assert len(created["steps"][0]["jobIds"]) == 5 and created["steps"][1]["jobIds"] == []

    done = wait_workflow(client, created["id"])
    assert done["status"] == "DONE" and done["progress"] == 100, done
    assert [s["status"] for s in done["steps"]] == ["DONE", "DONE"]
    assert len(done["steps"][1]["jobIds"]) == 1  # the merging step: one job for all five
    result = client.get(f"/workflows/{created['id']}/result").json()
    assert len(result["files"]) == 1
    doc = pdf_of(client, result)
    assert doc.page_count == 5
    for page, colour in zip(doc, colours, strict=True):  # each page is its image, in the inputs' order
        pix = page.get_pixmap(dpi=30)
        centre = pix.pixel(pix.width // 2, pix.height // 2)
        assert all(abs(a - b) < 40 for a, b in zip(centre, colour, strict=True)), (centre, colour)

    # step 1 ran on the workflow's inputs, one job each; step 2 on what step 1 made, in the same order
    first, merge = ([client.get(f"/jobs/{job_id}").json() for job_id in step["jobIds"]] for step in done["steps"])
    assert [job["inputFileIds"] for job in first] == [[file_id] for file_id in ids]
    made = [file_id for job in first for file_id in made_by(server, job["id"])]
    assert len(made) == 5 and not set(made) & set(ids)
    assert merge[0]["inputFileIds"] == made

    # each step's jobs are ordinary jobs, carrying the workflow and its tag
    job = client.get(f"/jobs/{done['steps'][0]['jobIds'][0]}").json()
    assert job["workflowId"] == created["id"] and job["tag"] == "album" and job["tool"] == "image-convert"
    tagged = client.get("/jobs", params={"tag": "album"}).json()["items"]
    assert len(tagged) == 6
    # intermediate files are gone once the workflow ended; the inputs stay
    assert client.get(f"/jobs/{done['steps'][0]['jobIds'][0]}/result").status_code == 410
    assert client.get(f"/files/{ids[0]}").status_code == 200
    listed = client.get("/workflows", params={"tag": "album"}).json()["items"]
    assert [w["id"] for w in listed] == [created["id"]]


@pytest.mark.backends
def test_three_steps_across_families_markdown_pdf_compress_protect(client: httpx.Client) -> None:
    text = "# Quarterly report\n\nRevenue grew in every region.\n\n" + "More words here. " * 200
    ref = upload(client, "report.md", text.encode())
    r = client.post("/workflows", params={"wait": 60}, json={"inputFileIds": [ref["id"]], "steps": [
        {"tool": "document-to-pdf"}, {"tool": "pdf-compress", "params": {"level": "recommended"}},
        {"tool": "pdf-protect", "params": {"userPassword": "s3cret-pw"}}]})
    assert r.status_code == 201, r.text
    done = wait_workflow(client, r.json()["id"])
    assert done["status"] == "DONE", done
    assert done["steps"][2]["params"]["userPassword"] == "***"  # shown masked, never kept in clear
    doc = pdf_of(client, client.get(f"/workflows/{done['id']}/result").json())
    assert doc.needs_pass
    assert doc.authenticate("s3cret-pw")
    assert "Revenue grew in every region" in doc[0].get_text()


def test_a_chain_whose_step_cannot_take_the_last_output_is_422_before_anything_runs(
        client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    before = client.get("/jobs").json()["items"]
    r = client.post("/workflows", json={"inputFileIds": [ref["id"]], "steps": [
        {"tool": "image-to-pdf"}, {"tool": "image-resize", "params": {"width": 10}}]})
    problem = assert_problem(r, 422, "incompatible_steps")
    assert "Step 2 (image-resize)" in problem["detail"] and "pdf" in problem["detail"]
    assert "steps.1.tool" in problem["errors"]
    # bad params name the step too
    r = client.post("/workflows", json={"inputFileIds": [ref["id"]], "steps": [
        {"tool": "image-convert"}, {"tool": "image-resize", "params": {"width": "wide"}}]})
    problem = assert_problem(r, 422, "invalid_params")
    assert any(k.startswith("steps.1.params.width") for k in problem["errors"]), problem
    assert assert_problem(client.post("/workflows", json={"inputFileIds": [ref["id"]], "steps": [
        {"tool": "no-such-tool"}]}), 422, "unknown_tool")["errors"]
    assert client.get("/jobs").json()["items"] == before  # nothing was queued


@pytest.mark.fresh_server
def test_a_chain_with_a_disabled_tool_is_503_naming_its_step(server: Server, client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    before = client.get("/jobs").json()["items"]
    db = server.database()
    db.set_setting("disabled_tools", '["image-resize"]')
    try:
        problem = assert_problem(client.post("/workflows", json={"inputFileIds": [ref["id"]], "steps": [
            {"tool": "image-convert"}, {"tool": "image-resize", "params": {"width": 10}}]}), 503, "tool_disabled")
    finally:
        db.set_setting("disabled_tools", "[]")
    assert "Step 2 (image-resize)" in problem["detail"], problem
    assert client.get("/jobs").json()["items"] == before  # nothing was queued


@pytest.mark.backends
def test_a_failure_in_step_two_fails_the_workflow_and_names_the_file(client: httpx.Client) -> None:
    # pdf-extract-pages asks for page 5 of a one-page PDF made by step 1: refused when step 2 is made
    ref = upload(client, "single.png", png_bytes())
    r = client.post("/workflows", json={"inputFileIds": [ref["id"]], "steps": [
        {"tool": "image-to-pdf"}, {"tool": "pdf-extract-pages", "params": {"pages": "5"}}]})
    assert r.status_code == 201, r.text
    done = wait_workflow(client, r.json()["id"])
    assert done["status"] == "FAILED" and done["failedStep"] == 2, done
    # it names the PDF step 1 made, the file step 2 was given, not the workflow's PNG
    assert "Step 2 (pdf-extract-pages) cannot run on single.pdf:" in done["errorMessage"], done
    assert done["errorCode"]
    assert_problem(client.get(f"/workflows/{done['id']}/result"), 409, "workflow_failed")


def test_a_job_failing_mid_workflow_names_its_file(client: httpx.Client) -> None:
    good = upload(client, "good.png", png_bytes())
    # a PNG whose pixel data is cut: sniffed as PNG, so it passes the checks, and fails in the engine
    data = png_bytes(400, 300)
    bad = upload(client, "broken.png", data[: len(data) // 2])
    r = client.post("/workflows", json={"inputFileIds": [good["id"], bad["id"]], "steps": [
        {"tool": "image-convert", "outputFormat": "jpg"}, {"tool": "image-to-pdf"}]})
    assert r.status_code == 201, r.text  # nothing up front looks past the PNG's header
    done = wait_workflow(client, r.json()["id"])
    assert done["status"] == "FAILED" and done["failedStep"] == 1, done
    assert "broken.png" in done["errorMessage"]
    assert done["steps"][1]["status"] == "CANCELED" and done["steps"][1]["jobIds"] == []


@pytest.mark.backends
def test_cancel_mid_step_cancels_running_jobs_and_the_steps_not_begun(client: httpx.Client, tmp_path: Path) -> None:
    from tests.converters import media_samples

    # an H.264 "slow" encode of a 30 s clip at 1280 px: still running on any machine when the cancel lands
    clip = media_samples.write_clip(tmp_path / "clip.mp4", "mp4", seconds=30.0, size=(320, 240))
    ref = upload(client, "clip.mp4", clip.read_bytes())
    r = client.post("/workflows", json={"inputFileIds": [ref["id"]], "steps": [
        {"tool": "video-convert", "params": {"videoCodec": "h264", "preset": "slow", "width": 1280},
         "outputFormat": "mp4"}, {"tool": "video-thumbnail"}]})
    assert r.status_code == 201, r.text
    workflow = r.json()
    job_id = workflow["steps"][0]["jobIds"][0]
    with client.stream("GET", f"/jobs/{job_id}/events", timeout=120) as events:  # until the encode reports progress
        for line in events.iter_lines():
            if line.startswith("data: ") and json.loads(line[6:])["progress"] > 1:
                break
    canceled = client.post(f"/workflows/{workflow['id']}/cancel")
    assert canceled.status_code == 200, canceled.text
    body = canceled.json()
    assert body["status"] == "CANCELED" and body["errorCode"] == "canceled"
    job = client.get(f"/jobs/{body['steps'][0]['jobIds'][0]}", params={"wait": 10}).json()
    assert job["status"] == "CANCELED"
    assert body["steps"][1]["status"] == "CANCELED" and body["steps"][1]["jobIds"] == []
    assert_problem(client.post(f"/workflows/{workflow['id']}/cancel"), 409, "workflow_finished")
    assert client.delete(f"/jobs/{job['id']}").status_code == 204  # the workflow has ended: its jobs may go


def test_workflows_belong_to_their_key(server: Server, client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    created = client.post("/workflows", json={"inputFileIds": [ref["id"]],
                                              "steps": [{"tool": "image-convert", "outputFormat": "jpg"}]}).json()
    other = server.client(server.create_key("other"))
    assert_problem(other.get(f"/workflows/{created['id']}"), 404, "workflow_not_found")
    assert_problem(other.post(f"/workflows/{created['id']}/cancel"), 404, "workflow_not_found")
    assert other.get("/workflows").json()["items"] == []
    assert_problem(httpx.get(f"{server.base_url}/workflows/{created['id']}"), 401, "invalid_api_key")


@pytest.mark.backends
def test_an_idempotency_key_makes_one_workflow(client: httpx.Client) -> None:
    ref = upload(client, "a.png", png_bytes())
    body = {"inputFileIds": [ref["id"]], "steps": [{"tool": "image-convert", "outputFormat": "jpg"}]}
    first = client.post("/workflows", json=body, headers={"Idempotency-Key": "wf-once"})
    again = client.post("/workflows", json=body, headers={"Idempotency-Key": "wf-once"})
    assert first.status_code == again.status_code == 201, again.text
    assert again.json()["id"] == first.json()["id"] and again.headers["idempotent-replayed"] == "true"
    assert [w["id"] for w in client.get("/workflows").json()["items"]] == [first.json()["id"]]
    changed = {**body, "tag": "other"}
    assert_problem(client.post("/workflows", json=changed, headers={"Idempotency-Key": "wf-once"}), 422,
                   "idempotency_mismatch")
