"""The catalogue: discovery, the contract every tool keeps, and isolation of broken modules."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from converters.base import CATEGORIES, Tool
from converters.catalogue import discover, load_catalogue
from converters.inputs.sniff import MIME_TYPES

TOOLS = list(load_catalogue())


def test_a_module_that_fails_to_import_loses_only_its_own_tools(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "kiln_plugins"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "good.py").write_text(
        "from converters.base import Tool\n"
        "class Echo(Tool):\n    id='echo'\n    category='documents'\n    title='Echo'\n"
        "    accepts=('txt',)\n    produces=('txt',)\n"
        "TOOLS=[Echo()]\n")
    (pkg / "broken.py").write_text("import engine_that_is_not_installed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    catalogue = discover(importlib.import_module("kiln_plugins"))
    assert [t.id for t in catalogue] == ["echo"]
    assert "ModuleNotFoundError" in catalogue.broken["kiln_plugins.broken"]
    sys.modules.pop("kiln_plugins", None)


def test_catalogue_has_the_core_tools() -> None:
    ids = {t.id for t in TOOLS}
    assert {"image-convert", "pdf-compress"} <= ids


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.id)
def test_every_tool_keeps_the_contract(tool: Tool) -> None:
    assert tool.category in CATEGORIES
    assert tool.title and tool.accepts and tool.produces
    # "keep" is an output choice, not a format: the output keeps the input's format
    unknown = [f for f in (*tool.accepts, *tool.produces) if f not in MIME_TYPES and f != "keep"]
    assert not unknown, f"format ids without a MIME type: {unknown}"
    schema = tool.params.model_json_schema(by_alias=True)
    assert schema["type"] == "object"
    assert tool.timeout_seconds > 0 and tool.max_input_size_bytes > 0
