"""Presets, tags and retry through a real server."""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path

import httpx
import pytest
from PIL import Image

from tests.conftest import Server, assert_problem, failed_job, png_bytes, run_cli, upload, wait_job
from tests.workflows.test_workflows_api import wait_workflow

SMALL_WEBP = {"name": "Small WebP", "description": "200 px wide WebP",
              "steps": [{"tool": "image-resize", "params": {"width": 200}, "outputFormat": "webp"}]}


def test_presets_crud_and_the_built_ins(client: httpx.Client) -> None:
    names = [p["name"] for p in client.get("/presets").json()["items"]]
    assert names[:4] == ["Web images", "Email-ready PDF", "Scan to searchable PDF", "Podcast MP3"]
    built_in = client.get("/presets/Web images").json()
    assert built_in["builtin"] is True and built_in["steps"][0]["tool"] == "image-resize"
    assert_problem(client.delete("/presets/Web images"), 409, "preset_builtin")
    assert_problem(client.put("/presets/Web images", json={"steps": SMALL_WEBP["steps"]}), 409, "preset_builtin")

    r = client.post("/presets", json=SMALL_WEBP)
    assert r.status_code == 201, r.text
    assert r.json() == {**SMALL_WEBP, "builtin": False, "steps": [
        {"tool": "image-resize", "params": {"width": 200}, "outputFormat": "webp"}]}
    assert_problem(client.post("/presets", json=SMALL_WEBP), 409, "preset_exists")
    changed = client.put("/presets/Small WebP", json={"description": "smaller", "steps": [
        {"tool": "image-resize", "params": {"width": 100}, "outputFormat": "webp"}]})
    assert changed.status_code == 200 and changed.json()["steps"][0]["params"] == {"width": 100}
    # a chain that cannot run is never saved
    problem = assert_problem(client.post("/presets", json={"name": "Broken", "steps": [
        {"tool": "image-to-pdf"}, {"tool": "image-resize", "params": {"width": 10}}]}), 422, "incompatible_steps")
    assert "Step 2" in problem["detail"]
    assert_problem(client.get("/presets/Broken"), 404, "preset_not_found")
    assert client.delete("/presets/Small WebP").status_code == 204
    assert_problem(client.get("/presets/Small WebP"), 404, "preset_not_found")


def test_a_key_changes_and_deletes_only_the_presets_it_made(server: Server, client: httpx.Client,
                                                            tmp_path: Path) -> None:
    """Presets are the install's: every key reads and uses each one, and changes or deletes only its own.
    One made on the command line (or the desktop, or for a watch folder) no key may change."""
    mine, owners = f"Mine {uuid.uuid4().hex[:8]}", f"Owner's {uuid.uuid4().hex[:8]}"
    assert client.post("/presets", json={**SMALL_WEBP, "name": mine}).status_code == 201
    exported = tmp_path / "presets.json"
    exported.write_text(json.dumps({"format": "filekiln-presets", "version": 1, "presets": [
        {"name": owners, "description": "made on the command line", "steps": SMALL_WEBP["steps"]}]}))
    run_cli(server.data_dir, "presets", "import", str(exported))
    with server.client(server.create_key("another")) as other:
        for name in (mine, owners):
            assert other.get(f"/presets/{name}").status_code == 200
            assert_problem(other.put(f"/presets/{name}", json={"steps": SMALL_WEBP["steps"]}), 403,
                           "preset_not_yours")
            assert_problem(other.delete(f"/presets/{name}"), 403, "preset_not_yours")
        ref = upload(other, "a.png", png_bytes())
        assert other.post("/jobs", json={"preset": mine, "inputFileIds": [ref["id"]]}).status_code == 201
    assert_problem(client.put(f"/presets/{owners}", json={"steps": SMALL_WEBP["steps"]}), 403, "preset_not_yours")
    assert client.put(f"/presets/{mine}", json={"description": "still mine", "steps": SMALL_WEBP["steps"]}
                      ).json()["description"] == "still mine"
    assert client.delete(f"/presets/{mine}").status_code == 204
    assert "Deleted" in run_cli(server.data_dir, "presets", "delete", owners)  # the owner may


@pytest.mark.parametrize("name", ["..", ".hidden", "del\x7f", "nel\x85", "photo\u202egnp", "line\u2028break",
                                  "zero\u200bwidth", "a/b"])
def test_names_that_could_not_be_shown_as_a_file_name_are_refused(client: httpx.Client, name: str) -> None:
    assert_problem(client.post("/presets", json={**SMALL_WEBP, "name": name}), 422, "invalid_preset_name")


def test_a_one_step_preset_runs_as_a_job_and_a_multi_step_one_points_to_workflows(client: httpx.Client) -> None:
    assert client.post("/presets", json=SMALL_WEBP).status_code == 201
    ref = upload(client, "wide.png", png_bytes(640, 480))
    r = client.post("/jobs", json={"preset": "Small WebP", "inputFileIds": [ref["id"]], "tag": "web"})
    assert r.status_code == 201, r.text
    job = wait_job(client, r.json()["id"])
    assert job["status"] == "DONE" and job["tool"] == "image-resize" and job["outputFormat"] == "webp"
    assert job["tag"] == "web"
    image = Image.open(io.BytesIO(httpx.get(client.get(f"/jobs/{job['id']}/result").json()["downloadUrl"]).content))
    assert image.format == "WEBP" and image.size == (200, 150)

    problem = assert_problem(client.post("/jobs", json={"preset": "Scan to searchable PDF",
                                                        "inputFileIds": [ref["id"]]}), 422, "preset_has_steps")
    assert "/workflows" in problem["detail"]
    assert_problem(client.post("/jobs", json={"preset": "Small WebP", "tool": "image-convert",
                                              "inputFileIds": [ref["id"]]}), 422, "invalid_params")
    assert_problem(client.post("/jobs", json={"preset": "Nope", "inputFileIds": [ref["id"]]}), 422, "unknown_preset")
    assert_problem(client.post("/jobs", json={"inputFileIds": [ref["id"]]}), 422, "invalid_params")


def test_scan_to_searchable_pdf_preset_makes_text_searchable(client: httpx.Client) -> None:
    from PIL import ImageDraw, ImageFont

    page = Image.new("RGB", (1240, 600), "white")
    font = ImageFont.load_default(size=64)
    ImageDraw.Draw(page).text((60, 200), "FILEKILN INVOICE 2048", fill="black", font=font)
    buf = io.BytesIO()
    page.save(buf, "PNG")
    ref = upload(client, "scan.png", buf.getvalue())
    r = client.post("/workflows", json={"inputFileIds": [ref["id"]], "preset": "Scan to searchable PDF"})
    assert r.status_code == 201, r.text
    assert r.json()["preset"] == "Scan to searchable PDF"
    done = wait_workflow(client, r.json()["id"])
    assert done["status"] == "DONE", done
    import pymupdf

    doc = pymupdf.open(stream=httpx.get(client.get(f"/workflows/{done['id']}/result").json()["downloadUrl"]).content,
                       filetype="pdf")
    assert doc[0].search_for("INVOICE"), doc[0].get_text()


def test_retry_runs_a_failed_job_again_as_a_new_job(client: httpx.Client) -> None:
    data = png_bytes(400, 300)
    ref = upload(client, "cut.png", data[: len(data) // 2])  # a PNG by its header, cut short: fails in the engine
    first = failed_job(client, client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                                          "outputFormat": "webp", "tag": "retry-me"}),
                       {"damaged_input", "engine_error"})
    again = client.post(f"/jobs/{first['id']}/retry")
    assert again.status_code == 201, again.text
    second = again.json()
    assert second["id"] != first["id"] and second["inputFileIds"] == first["inputFileIds"]
    assert second["tool"] == "image-convert" and second["outputFormat"] == "webp" and second["tag"] == "retry-me"
    assert wait_job(client, second["id"])["status"] == "FAILED"
    assert len(client.get("/jobs", params={"tag": "retry-me"}).json()["items"]) == 2

    good = upload(client, "fine.png", png_bytes())
    made = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [good["id"]]}).json()
    done = wait_job(client, made["id"])
    assert_problem(client.post(f"/jobs/{done['id']}/retry"), 409, "job_not_retryable")
    assert client.delete(f"/files/{ref['id']}").status_code == 204
    assert_problem(client.post(f"/jobs/{first['id']}/retry"), 410, "inputs_gone")


def test_retry_asks_again_for_the_passwords_a_job_does_not_keep(data_dir: Path) -> None:
    from localapi.config import Settings
    from localapi.core.errors import InvalidParams
    from localapi.core.jobs import Caller
    from localapi.core.service import Service

    service = Service.open(Settings(data_dir=data_dir))  # no workers: the job stays QUEUED until canceled
    try:
        source = data_dir / "in.pdf"
        source.write_bytes(_pdf(1))
        job = service.submit_local([source], "pdf-protect", {"userPassword": "pw-1"})
        service.jobs.cancel(job.id, Caller())
        with pytest.raises(InvalidParams) as refused:
            service.jobs.retry(job.id, Caller())
        assert "params.userPassword" in (refused.value.errors or {})
        again = service.jobs.retry(job.id, Caller(), {"userPassword": "pw-2"})
        assert again.id != job.id and again.status == "QUEUED" and again.params == {"userPassword": "***"}
    finally:
        service.close()


def _pdf(pages: int) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    for n in range(pages):
        doc.new_page().insert_text((72, 72), f"page {n + 1}")
    return doc.tobytes()


def test_a_preset_whose_step_had_a_password_is_refused_before_anything_runs(client: httpx.Client) -> None:
    r = client.post("/presets", json={"name": "Protected PDF", "steps": [
        {"tool": "image-to-pdf"}, {"tool": "pdf-protect", "params": {"userPassword": "kept-nowhere"}}]})
    assert r.status_code == 201 and r.json()["steps"][1]["params"] == {"userPassword": "***"}
    ref = upload(client, "a.png", png_bytes())
    before = client.get("/jobs").json()["items"]
    problem = assert_problem(client.post("/workflows", json={"inputFileIds": [ref["id"]], "preset": "Protected PDF"}),
                             422, "invalid_params")
    assert "Step 2 (pdf-protect)" in problem["detail"] and "steps.1.params.userPassword" in problem["errors"]
    assert client.get("/jobs").json()["items"] == before  # step 1 never ran
