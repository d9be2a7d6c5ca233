"""GET /v1/metrics, read back with Prometheus' own text parser."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Server, assert_problem, failed_job, module_server, png_bytes, upload, wait_job


def families(text: str) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    found: dict[str, list[tuple[str, dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        found[family.name] = [(s.name, s.labels, s.value) for s in family.samples]
    return found


def test_metrics_count_jobs_by_state_and_tool_and_time_them(server: Server, client: httpx.Client) -> None:
    """The key's own jobs (the shared server has every other test's besides)."""
    for _ in range(2):
        ref = upload(client, "a.png", png_bytes())
        wait_job(client, client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]],
                                                    "outputFormat": "webp"}).json()["id"])
    data = png_bytes(400, 300)
    cut = upload(client, "cut.png", data[: len(data) // 2])
    failed_job(client, client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [cut["id"]]}),
               {"damaged_input", "engine_error"})
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4")
    found = families(r.text)
    jobs = {(labels["status"], labels["tool"]): value for _, labels, value in found["filekiln_jobs"]}
    assert jobs[("DONE", "image-convert")] == 2 and jobs[("FAILED", "image-convert")] == 1
    assert found["filekiln_queue_depth"] == [("filekiln_queue_depth", {}, 0.0)]
    duration = {(name, labels.get("le")): value for name, labels, value in found["filekiln_job_duration_seconds"]
                if labels["tool"] == "image-convert"}
    assert duration[("filekiln_job_duration_seconds_count", None)] == 2  # DONE jobs only
    assert duration[("filekiln_job_duration_seconds_bucket", "+Inf")] == 2
    buckets = [v for (name, le), v in duration.items() if name.endswith("_bucket")]
    assert buckets == sorted(buckets)  # cumulative
    assert 0 < duration[("filekiln_job_duration_seconds_sum", None)] < 120
    assert found["filekiln_workers"][0][2] == 2  # the test server's default
    assert found["filekiln_info"][0][1]["version"]


def test_a_key_sees_its_own_jobs_only(server: Server, client: httpx.Client) -> None:
    with server.client(server.create_key("another")) as other:
        ref = upload(other, "a.png", png_bytes())
        wait_job(other, other.post("/jobs", json={"tool": "image-resize", "inputFileIds": [ref["id"]],
                                                  "params": {"width": 10}}).json()["id"])
    found = families(client.get("/metrics").text)
    assert found["filekiln_jobs"] == [] and found["filekiln_workflows"] == [], found
    assert found["filekiln_job_duration_seconds"] == [] and found["filekiln_queue_depth"][0][2] == 0


@pytest.fixture(scope="module")
def everyone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from module_server(tmp_path_factory, "metrics-all-keys", metrics_all_keys=True)


def test_with_metrics_all_keys_every_key_sees_every_keys_jobs(everyone: Server) -> None:
    with everyone.client(everyone.create_key("converts")) as one:
        ref = upload(one, "a.png", png_bytes())
        wait_job(one, one.post("/jobs", json={"tool": "image-resize", "inputFileIds": [ref["id"]],
                                              "params": {"width": 10}}).json()["id"])
    with everyone.client(everyone.create_key("watches")) as dashboard:
        found = families(dashboard.get("/metrics").text)
    jobs = {(labels["status"], labels["tool"]): value for _, labels, value in found["filekiln_jobs"]}
    assert jobs == {("DONE", "image-resize"): 1}, jobs


def test_metrics_need_a_key(server: Server) -> None:
    assert_problem(httpx.get(f"{server.base_url}/metrics"), 401, "invalid_api_key")
