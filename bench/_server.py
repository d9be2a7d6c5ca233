"""Start a real `filekiln serve` for benchmarks (same way the tests do)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import Server, free_port, run_cli, start_server  # noqa: E402

__all__ = ["Server", "free_port", "run_cli", "start_server"]
