"""Upload names lose every invisible or direction-changing character (Unicode categories C*, line and
paragraph separators): what the API returns, the desktop shows and a download is saved as."""

from __future__ import annotations

import unicodedata
from urllib.parse import unquote

import httpx
import pytest

from tests.conftest import png_bytes, upload, wait_job

INVISIBLE = ["\u0085", "\u0090", "\u2028", "\u2029", "\u061c", "\u200b", "\u200d", "\u200e", "\u202e", "\u2066",
             "\ufeff", "\ue000", "\x1b", "\x7f", "\U000e0041"]  # NUL: httpx sends it as "%00"


def hidden(text: str) -> list[str]:
    return [f"U+{ord(ch):04X}" for ch in text
            if unicodedata.category(ch)[0] == "C" or unicodedata.category(ch) in ("Zl", "Zp")]


@pytest.mark.parametrize("char", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
def test_invisible_characters_are_removed_from_names(client: httpx.Client, char: str) -> None:
    name = f"evil{char}gnp.exe.png"
    stored = upload(client, name, png_bytes())
    assert stored["originalName"] == "evilgnp.exe.png", stored


def test_a_spoofed_name_is_clean_in_results_and_downloads(client: httpx.Client) -> None:
    stored = upload(client, "invoice\u202e\u061cgnp.exe\u2028\u200b.png", png_bytes())
    assert not hidden(stored["originalName"]), stored["originalName"]
    job = client.post("/jobs", json={"tool": "image-convert", "inputFileIds": [stored["id"]],
                                     "outputFormat": "webp"}).json()
    assert wait_job(client, job["id"])["status"] == "DONE"
    result = client.get(f"/jobs/{job['id']}/result").json()
    for listed in result["files"]:
        assert not hidden(listed["name"]), listed["name"]
    response = client.get(result["downloadUrl"])
    disposition = response.headers["content-disposition"]
    saved_as = unquote(disposition.split("filename*=UTF-8''", 1)[1])
    assert not hidden(saved_as) and not hidden(disposition), disposition
