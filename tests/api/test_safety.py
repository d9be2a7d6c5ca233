"""Localhost safety, key hygiene and the OpenAPI document."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from tests.conftest import ROOT, Server, assert_problem, database_text, png_bytes, upload, wait_job


def test_non_loopback_host_header_is_refused(server: Server, api_key: str) -> None:
    for host in ("evil.example", "127.0.0.1.nip.io", f"evil.example:{server.port}"):
        r = httpx.get(f"{server.base_url}/tools", headers={"Host": host, "X-API-Key": api_key})
        assert_problem(r, 403, "host_not_allowed")
    for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}"):
        assert httpx.get(f"{server.base_url}/tools", headers={"Host": host, "X-API-Key": api_key}).status_code == 200


def test_cross_site_browser_posts_are_refused(server: Server, api_key: str) -> None:
    headers = {"X-API-Key": api_key}
    for extra in ({"Origin": "https://evil.example"}, {"Origin": "null"},
                  {"Origin": "http://localhost:3000"}, {"Sec-Fetch-Site": "cross-site"}):
        r = httpx.post(f"{server.base_url}/files", headers={**headers, **extra},
                       files={"file": ("a.png", png_bytes())})
        assert_problem(r, 403, "cross_site_request")
        assert "access-control-allow-origin" not in r.headers
        r = httpx.post(f"{server.base_url}/jobs", headers={**headers, **extra},
                       json={"tool": "image-convert", "inputFileIds": ["x"]})
        assert_problem(r, 403, "cross_site_request")
    same = {"Origin": f"http://127.0.0.1:{server.port}", "Sec-Fetch-Site": "same-origin"}
    r = httpx.post(f"{server.base_url}/files", headers={**headers, **same}, files={"file": ("a.png", png_bytes())})
    assert r.status_code == 201


@pytest.mark.fresh_server
def test_key_secrets_never_reach_logs_or_database(server: Server, api_key: str) -> None:
    with server.client(api_key) as c:
        ref = upload(c, "a.png", png_bytes())
        job = c.post("/jobs", json={"tool": "image-convert", "inputFileIds": [ref["id"]]}).json()
        wait_job(c, job["id"])
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {api_key}"}) as c:
        c.get("/tools")
    with server.client(api_key + "x") as bad:
        bad.get("/tools")
    server.stop()
    logs = [server.log(), *(p.read_text(errors="replace") for p in (server.data_dir / "logs").iterdir())]
    assert logs[0], "the server wrote no log at all"
    for text in logs:
        assert api_key not in text and api_key[10:] not in text
    dump = database_text(server)
    assert api_key not in dump and api_key[10:] not in dump


def test_openapi_declares_the_status_codes_the_api_returns(server: Server) -> None:
    spec = httpx.get(f"{server.base_url}/openapi.json").json()
    expected = {
        ("/v1/files", "post"): {201, 400, 401, 413, 429},
        ("/v1/jobs", "post"): {201, 400, 401, 402, 409, 413, 415, 422, 429, 503},
        ("/v1/jobs/{id}", "get"): {200, 404},
        ("/v1/jobs/{id}/result", "get"): {200, 404, 409, 410},
        ("/v1/jobs/{id}/cancel", "post"): {200, 404, 409},
        ("/v1/downloads/{file_id}/{name}", "get"): {200, 206, 403, 404, 410, 416},
        ("/v1/tools", "get"): {200, 401},
    }
    for (path, method), codes in expected.items():
        declared = {int(c) for c in spec["paths"][path][method]["responses"]}
        assert codes <= declared, (path, method, codes - declared)
        for code in codes - {200, 201, 206}:
            content = spec["paths"][path][method]["responses"][str(code)]["content"]
            assert "application/problem+json" in content, (path, method, code)


def test_cli_key_create_json_and_list(server: Server) -> None:
    import json

    from tests.conftest import run_cli

    created = json.loads(run_cli(server.data_dir, "keys", "create", "--name", "ci", "--daily-quota", "5", "--json"))
    assert set(created) >= {"id", "name", "prefix", "secret"} and created["dailyJobQuota"] == 5
    assert created["secret"].startswith(created["prefix"]) and len(created["secret"]) >= 43
    listed = json.loads(run_cli(server.data_dir, "keys", "list", "--json"))
    # the shared server's keys: every test made its own
    mine = [k for k in listed if k["id"] == created["id"]]
    assert len(mine) == 1 and mine[0]["prefix"] == created["prefix"] and mine[0]["dailyJobQuota"] == 5
    assert not any("secret" in k for k in listed)
    assert httpx.get(f"{server.base_url}/tools", headers={"X-API-Key": created["secret"]}).status_code == 200


def test_cli_tools_and_convert_without_a_server(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from PIL import Image

    from tests.conftest import run_cli

    data = tmp_path / "data"
    tools = json.loads(run_cli(data, "tools", "--category", "images", "--json"))
    assert "image-convert" in {t["id"] for t in tools} and all(t["category"] == "images" for t in tools)
    src = tmp_path / "in.png"
    src.write_bytes(png_bytes(40, 30))
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "filekiln", "--data-dir", str(data), "convert", str(src),
                             "--tool", "image-convert", "--to", "jpg", "--param", "quality=70", "--out", str(out)],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "100%" in result.stderr
    produced = out / "in.jpg"
    assert result.stdout.strip() == str(produced)
    assert Image.open(produced).format == "JPEG"
    bad = subprocess.run([sys.executable, "-m", "filekiln", "convert", str(src), "--tool", "image-convert",
                          "--to", "mp3", "--data-dir", str(data)], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "mp3" in bad.stderr


def test_cli_models_import_and_list(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from converters.tools.ai.background import packaged_u2netp
    from tests.conftest import run_cli

    data = tmp_path / "data"
    before = {m["name"]: m for m in json.loads(run_cli(data, "models", "list", "--json"))}
    assert before["u2netp"]["installed"] is False and before["u2netp"]["verified"] is True
    source = packaged_u2netp()
    assert source is not None
    out = run_cli(data, "models", "import", str(source), "--kind", "background").strip()
    assert out == str(data / "models" / "background" / "u2netp.onnx")
    after = {m["name"]: m for m in json.loads(run_cli(data, "models", "list", "--json"))}
    assert after["u2netp"]["installed"] is True
    bad = tmp_path / "notes.txt"
    bad.write_text("not a model")
    result = subprocess.run([sys.executable, "-m", "filekiln", "--data-dir", str(data), "models", "import", str(bad),
                             "--kind", "llm"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 1 and "damaged_input" in result.stderr
