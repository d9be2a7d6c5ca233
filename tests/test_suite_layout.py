"""The suite's own bookkeeping: `make test` runs the tests marked ``alone`` in a pass of their own that
collects only the files the Makefile lists (``ALONE_TESTS``); a test marked so anywhere else would be
left out of both passes."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT


def test_the_alone_pass_lists_every_file_with_a_test_marked_alone() -> None:
    found = re.search(r"^ALONE_TESTS := (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert found is not None, "the Makefile has no ALONE_TESTS"
    listed = set(found.group(1).split())
    marked = {path.relative_to(ROOT).as_posix() for path in (ROOT / "tests").rglob("test_*.py")
              if path != Path(__file__) and re.search(r"pytest\.mark\.alone\b", path.read_text(encoding="utf-8"))}
    assert marked and listed == marked, (sorted(listed), sorted(marked))
