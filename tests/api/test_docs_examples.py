"""docs/api.md's examples of waiting, events, webhooks and the Python client work as written (the port and
the ``wh_…``-style placeholders aside) against a real server.

Each example is the fenced block after an ``<!-- example: NAME -->`` comment in the docs; shell examples
run in bash with the variables the docs use (``FILEKILN``, ``KEY``, ``FILE_ID``, ``JOB_ID``) set."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pymupdf
import pytest

from tests.api.test_webhooks import Receiver, run_job
from tests.conftest import ROOT, Server, image_pdf_bytes, png_bytes, upload

EXAMPLE = re.compile(r"^( *)<!-- example: (\S+) -->\n\1```\w+\n(.*?)^\1```", re.M | re.S)
DOCS_URL = "http://127.0.0.1:8741/v1"


def examples() -> dict[str, str]:
    text = (ROOT / "docs" / "api.md").read_text()
    return {m.group(2): textwrap.dedent(m.group(3)) for m in EXAMPLE.finditer(text)}


def example(name: str, server: Server) -> str:
    return examples()[name].replace(DOCS_URL, server.base_url)


def commands(script: str) -> list[str]:
    """A shell example's commands, one each: continued lines joined, comment-only lines dropped."""
    return [c for c in script.replace("\\\n", " ").splitlines() if c.strip() and not c.lstrip().startswith("#")]


def sh(script: str, **variables: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env={**os.environ, **variables},
                            capture_output=True, text=True)  # a hang is pytest-timeout's to end
    assert result.returncode == 0, result.stderr
    return result


def json_values(text: str) -> list[Any]:
    """The JSON values curl printed one after another (``curl -s`` adds no newline between answers)."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while at < len(text.rstrip()):
        value, at = decoder.raw_decode(text, at)
        values.append(value)
        while at < len(text) and text[at].isspace():
            at += 1
    return values


def run_python(code: str, **names: Any) -> tuple[dict[str, Any], str]:
    """Runs ``code`` with ``names`` defined (what the text around it calls ``key``, ``file_id``...)."""
    scope = dict(names)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "docs/api.md", "exec"), scope)  # noqa: S102 - the docs' own example
    return scope, printed.getvalue()


@pytest.fixture(scope="module")
def key(shared_server: Server) -> str:
    return shared_server.create_key("docs")


@pytest.fixture
def client(server: Server, key: str) -> Iterator[httpx.Client]:
    with server.client(key) as c:
        yield c


def shell(server: Server, key: str, **more: str) -> dict[str, str]:
    return {"FILEKILN": server.base_url, "KEY": key, **more}


def done_job(client: httpx.Client) -> dict[str, Any]:
    job = run_job(client)
    assert job["status"] == "DONE", job
    return job


def test_every_example_is_found() -> None:
    assert sorted(examples()) == sorted(["wait-sh", "wait-python", "events-sh", "events-python", "hooks-sh",
                                         "job-secret-sh", "verify-python", "client-python"])


def test_waiting_with_curl(server: Server, key: str, client: httpx.Client) -> None:
    file_id = upload(client, "a.png", png_bytes())["id"]
    earlier = done_job(client)["id"]
    out = sh(example("wait-sh", server), **shell(server, key, FILE_ID=file_id, JOB_ID=earlier)).stdout
    created, fetched = json_values(out)
    assert created["status"] == "DONE" and created["inputFileIds"] == [file_id]
    assert fetched["id"] == earlier and fetched["status"] == "DONE"
    for job in (created, fetched):
        assert httpx.get(job["result"]["downloadUrl"]).content[8:12] == b"WEBP"


def test_waiting_in_python(server: Server, key: str, client: httpx.Client) -> None:
    file_id = upload(client, "a.png", png_bytes())["id"]
    scope, _ = run_python(example("wait-python", server), key=key, file_id=file_id)
    assert scope["job"]["status"] == "DONE"
    assert scope["data"][8:12] == b"WEBP"


def test_events_with_curl(server: Server, key: str, client: httpx.Client) -> None:
    job = done_job(client)
    one_job, every_job = commands(example("events-sh", server))
    out = sh(one_job, **shell(server, key, JOB_ID=job["id"])).stdout  # a job that has ended: its end, then EOF
    done_id = int(re.findall(r"^id: (\d+)$", out, re.M)[-1])
    assert re.findall(r"^event: (\S+)$", out, re.M) == ["job.done"]
    resumed = every_job.replace("Last-Event-ID: 1042", f"Last-Event-ID: {done_id - 1}")
    assert resumed != every_job
    # the key's stream never ends: it is read until the replayed event has come (pytest-timeout bounds it)
    curl = subprocess.Popen(["bash", "-c", f"exec {resumed}"], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, **shell(server, key)})
    try:
        assert curl.stdout is not None
        lines = iter(curl.stdout.readline, "")
        for line in lines:
            if line == f"id: {done_id}\n":
                break
        else:
            pytest.fail(f"the key's stream ended without event {done_id}")
        assert next(lines) == "event: job.done\n"
        assert json.loads(next(lines).removeprefix("data: "))["id"] == job["id"]
    finally:
        curl.kill()
        curl.wait()


def test_events_in_python(server: Server, client: httpx.Client) -> None:
    file_id = upload(client, "a.png", png_bytes())["id"]
    r = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [file_id], "outputFormat": "webp"})
    _, printed = run_python(example("events-python", server), job_id=r.json()["id"])
    lines = printed.splitlines()
    assert lines[-1] == "job.done 100", printed
    progress = [int(line.split()[1]) for line in lines]
    assert progress == sorted(progress)


def test_hooks_with_curl(server: Server, key: str, client: httpx.Client) -> None:
    receiver = Receiver()
    try:
        create, listing, delete = commands(example("hooks-sh", server))
        made = json_values(sh(create.replace("http://127.0.0.1:9000/filekiln", receiver.url),
                              **shell(server, key)).stdout)[0]
        assert made["url"] == receiver.url and made["events"] == ["job.done", "job.failed"]
        assert made["secret"].startswith("whsec_") and made["disabledAt"] is None
        listed = json_values(sh(listing, **shell(server, key)).stdout)[0]["items"]
        assert listed == [{k: v for k, v in made.items() if k != "secret"}]
        done_job(client)
        hit = receiver.wait_events("job.done")[0]
        scope, _ = run_python(example("verify-python", server))
        verify_webhook = scope["verify_webhook"]
        assert verify_webhook(made["secret"], hit.body, hit.headers["filekiln-signature"])
        assert not verify_webhook(made["secret"], hit.body + b" ", hit.headers["filekiln-signature"])
        assert not verify_webhook("whsec_not-it", hit.body, hit.headers["filekiln-signature"])
        assert not verify_webhook(made["secret"], hit.body, hit.headers["filekiln-signature"], tolerance=-1)
        assert sh(delete.replace("wh_…", made["id"]), **shell(server, key)).stdout == ""
        assert client.get("/webhooks").json()["items"] == []
    finally:
        receiver.close()


def test_the_job_secret_with_curl(server: Server, key: str) -> None:
    read, replace = commands(example("job-secret-sh", server))
    first = json_values(sh(read, **shell(server, key)).stdout)[0]
    assert first["secret"].startswith("whsec_") and first["createdAt"]
    assert json_values(sh(read, **shell(server, key)).stdout)[0] == first
    second = json_values(sh(replace, **shell(server, key)).stdout)[0]
    assert second["secret"].startswith("whsec_") and second["secret"] != first["secret"]
    assert json_values(sh(read, **shell(server, key)).stdout)[0] == second


def test_the_python_client_example(server: Server, key: str, tmp_path: Path) -> None:
    (tmp_path / "report.pdf").write_bytes(image_pdf_bytes(pages=3, size=300))
    code = examples()["client-python"] + "print(json.dumps([[str(p) for p in pages], [str(p) for p in merged]]))\n"
    result = subprocess.run([sys.executable, "-c", "import json\n" + code], cwd=tmp_path, capture_output=True,
                            text=True,  # a hang is pytest-timeout's to end
                            env={**os.environ, "FILEKILN_URL": server.base_url, "FILEKILN_API_KEY": key})
    assert result.returncode == 0, result.stderr
    *progress, written = result.stdout.splitlines()
    fractions = [float(line) for line in progress]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0, result.stdout
    pages, merged = json.loads(written)
    assert [pymupdf.open(tmp_path / p).page_count for p in pages] == [1, 1, 1]
    assert len(merged) == 1 and pymupdf.open(tmp_path / merged[0]).page_count == 3
