"""A workflow's end as an event: to its own webhookUrl, to a key's hooks, and in the key's SSE stream."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from tests.api import test_webhooks as webhook_tests
from tests.api.test_webhooks import Receiver, hook, verify
from tests.conftest import png_bytes, upload
from tests.workflows.test_workflows_api import wait_workflow

# the webhook tests' fixtures: one fast-retrying server for the module, a client, real receivers
server, client, receivers = webhook_tests.server, webhook_tests.client, webhook_tests.receivers


def start(client: httpx.Client, **extra: Any) -> dict[str, Any]:
    ref = upload(client, "a.png", png_bytes())
    r = client.post("/workflows", json={"inputFileIds": [ref["id"]], "steps": [
        {"tool": "image-convert", "outputFormat": "jpg"}, {"tool": "image-to-pdf"}], **extra})
    assert r.status_code == 201, r.text
    return r.json()


def test_a_workflows_webhook_url_gets_its_end_signed_with_the_key_job_secret(client: httpx.Client,
                                                                               receivers: Any) -> None:
    receiver: Receiver = receivers()
    secret = client.get("/webhooks/job-secret").json()["secret"]
    workflow = start(client, webhookUrl=receiver.url)
    assert wait_workflow(client, workflow["id"])["status"] == "DONE"
    hit = receiver.wait_events("workflow.done")[0]
    verify(secret, hit)
    body = json.loads(hit.body)
    assert body["event"] == "workflow.done" and body["workflow"]["id"] == workflow["id"]
    assert body["workflow"]["status"] == "DONE" and [s["status"] for s in body["workflow"]["steps"]] == ["DONE"] * 2
    assert all(json.loads(h.body)["event"].startswith("workflow.") for h in receiver.hits)  # not its jobs'


def test_a_keys_hook_can_take_workflow_failures(client: httpx.Client, receivers: Any) -> None:
    receiver: Receiver = receivers()
    made = hook(client, receiver.url, ["workflow.failed"])
    ref = upload(client, "one.png", png_bytes())
    r = client.post("/workflows", json={"inputFileIds": [ref["id"]], "steps": [
        {"tool": "image-to-pdf"}, {"tool": "pdf-extract-pages", "params": {"pages": "7"}}]})
    assert wait_workflow(client, r.json()["id"])["status"] == "FAILED"
    hit = receiver.wait_events("workflow.failed")[0]
    verify(made["secret"], hit)
    body = json.loads(hit.body)["workflow"]
    assert body["failedStep"] == 2 and "one.pdf" in body["errorMessage"]
    client.delete(f"/webhooks/{made['id']}")


@pytest.mark.backends
def test_the_key_stream_carries_the_workflow_end(client: httpx.Client) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    opened = threading.Event()

    def listen() -> None:
        with client.stream("GET", "/events", timeout=60) as r:
            event = None
            for line in r.iter_lines():
                if line.startswith(": connected"):
                    opened.set()
                elif line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event:
                    seen.append((event, json.loads(line[6:])))
                    if event.startswith("workflow."):
                        return

    reader = threading.Thread(target=listen, daemon=True)
    reader.start()
    assert opened.wait(30)
    workflow = start(client)
    reader.join(60)
    ends = [data for event, data in seen if event == "workflow.done"]
    assert ends and ends[0]["id"] == workflow["id"] and ends[0]["progress"] == 100
    job_events = [data for event, data in seen if event == "job.done"]
    assert {j["workflowId"] for j in job_events} == {workflow["id"]} and len(job_events) == 2


def read_stream(client: httpx.Client, url: str, headers: dict[str, str] | None = None) -> list[tuple[str, str, dict]]:
    """(id, event, data) of each event until the stream ends."""
    seen: list[tuple[str, str, dict]] = []
    with client.stream("GET", url, headers=headers or {}, timeout=60) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        event_id = event = ""
        for line in r.iter_lines():
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                seen.append((event_id, event, json.loads(line[6:])))
    return seen


@pytest.mark.backends
def test_a_workflows_stream_has_its_jobs_then_its_end(client: httpx.Client) -> None:
    workflow = start(client)
    # from the feed's start (Last-Event-ID: 0): a stream opened live may come after the first step's end,
    # which small jobs reach within milliseconds
    seen = read_stream(client, f"/workflows/{workflow['id']}/events", {"Last-Event-ID": "0"})
    events = [event for _, event, _ in seen]
    assert events[-1] == "workflow.done" and events.count("workflow.done") == 1
    assert events.count("job.done") == 2  # one job per step here
    assert all(data["workflowId"] == workflow["id"] for _, event, data in seen if event.startswith("job."))
    assert seen[-1][2]["status"] == "DONE" and seen[-1][2]["progress"] == 100
    # ended already: its end at once; resumed after the first job's end: everything after it, in order
    assert [e for _, e, _ in read_stream(client, f"/workflows/{workflow['id']}/events")] == ["workflow.done"]
    first_done = next(i for i, (_, e, _) in enumerate(seen) if e == "job.done")
    resumed = read_stream(client, f"/workflows/{workflow['id']}/events",
                          {"Last-Event-ID": seen[first_done][0]})
    changes = [e for e in events[first_done + 1:] if e != "job.progress"]  # progress is coalesced per stream
    assert [e for _, e, _ in resumed if e != "job.progress"] == changes
