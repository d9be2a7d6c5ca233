"""The suite's own clock: at the end of a run, the time each test directory took, the slowest modules and
tests, and how many ``filekiln serve`` processes the run started (docs/testing.md says what to make of them).

Times are each test's setup, call and teardown added up, so a module-scoped server counts once, against
the test that started it. Under pytest-xdist the reports come to the controller and are added up there;
the servers are counted in a file that every worker appends to (``FILEKILN_TEST_SERVER_COUNT``).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

SLOWEST = 25
SERVER_MODULES = 15
COUNT_VAR = "FILEKILN_TEST_SERVER_COUNT"
TIMES_VAR = "FILEKILN_TEST_TIMES"  # a file to write every test's time to, as JSON


def count_server() -> None:
    """Called by every server start: one line in the run's count file, naming the module of the test that
    started it (writes under PIPE_BUF are atomic)."""
    path = os.environ.get(COUNT_VAR)
    if path:
        module = os.environ.get("PYTEST_CURRENT_TEST", "?").split("::")[0]
        with open(path, "a") as f:
            f.write(f"{module}\n")


def _directory(nodeid: str) -> str:
    parts = nodeid.split("::")[0].split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


class SuiteClock:
    def __init__(self) -> None:
        self.durations: dict[str, float] = defaultdict(float)
        self.started = time.monotonic()
        fd, self.count_file = tempfile.mkstemp(prefix="filekiln-servers-")
        os.close(fd)
        os.environ[COUNT_VAR] = self.count_file  # workers started after this inherit it

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.durations[report.nodeid] += report.duration

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.durations:
            return
        wall = time.monotonic() - self.started
        by_dir: dict[str, list[float]] = defaultdict(list)
        for nodeid, seconds in self.durations.items():
            by_dir[_directory(nodeid)].append(seconds)
        started = Path(self.count_file).read_text().splitlines()
        Path(self.count_file).unlink(missing_ok=True)
        servers = len(started)
        write = terminalreporter.write_line
        terminalreporter.section("where the time went")
        write(f"{'directory':<28}{'tests':>7}{'seconds':>10}")
        for name, times in sorted(by_dir.items(), key=lambda item: -sum(item[1])):
            write(f"{name:<28}{len(times):>7}{sum(times):>10.1f}")
        write(f"{'all (test time)':<28}{len(self.durations):>7}{sum(self.durations.values()):>10.1f}")
        write(f"wall time {wall:.1f} s; filekiln serve processes started: {servers}")
        by_module: dict[str, float] = defaultdict(float)
        for nodeid, seconds in self.durations.items():
            by_module[nodeid.split("::")[0]] += seconds
        write(f"the {SLOWEST} slowest modules:")
        for module, seconds in sorted(by_module.items(), key=lambda item: -item[1])[:SLOWEST]:
            write(f"{seconds:8.1f} s  {module}")
        write("the modules that started the most servers:")
        for module, count in Counter(started).most_common(SERVER_MODULES):
            write(f"{count:8d}    {module}")
        write(f"the {SLOWEST} slowest tests (setup + call + teardown):")
        for nodeid, seconds in sorted(self.durations.items(), key=lambda item: -item[1])[:SLOWEST]:
            write(f"{seconds:8.1f} s  {nodeid}")
        saved = os.environ.get(TIMES_VAR)
        if saved:  # every test's time, for a closer look (docs/testing.md)
            Path(saved).write_text(json.dumps(dict(sorted(self.durations.items())), indent=0))


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) keeps the clock
        config.pluginmanager.register(SuiteClock(), "filekiln-suite-clock")
