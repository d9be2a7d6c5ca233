"""Idempotency-Key under hostile conditions: names the server rewrites, and a server that stops in the
middle of a request and comes back."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import Server, module_server, png_bytes


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from module_server(tmp_path_factory, "idempotency")


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client(server.create_key()) as c:
        yield c


@pytest.mark.parametrize("name", [".hidden.png", "dir/a.png", "..\\..\\a.png", "photo\u202egnp.png",
                                  "x" * 300 + ".png", "cafe\u0301.png"])
def test_a_retried_upload_whose_name_was_sanitised_is_replayed(client: httpx.Client, name: str) -> None:
    data = png_bytes()
    headers = {"Idempotency-Key": f"upload-{abs(hash(name))}"}
    first = client.post("/files", files={"file": (name, data)}, headers=headers)
    assert first.status_code == 201, first.text
    assert first.json()["originalName"] != name  # the server stored a safer name than the one sent
    again = client.post("/files", files={"file": (name, data)}, headers=headers)
    assert again.status_code == 201, again.text
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
    other = client.post("/files", files={"file": (name, data + b"\0")}, headers=headers)
    assert other.status_code == 422 and other.json()["code"] == "idempotency_mismatch"
