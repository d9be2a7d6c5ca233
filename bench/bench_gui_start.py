"""Start-up time of the desktop app vs a bare QApplication + QMainWindow, in the same run.

Run: .venv/bin/python bench/bench_gui_start.py [--runs 5]

Each side is a fresh Python process. The time counted is from just before the process is
spawned to the moment the first window is shown and the event loop runs (for the app:
``desktop.app.run``'s ``on_ready``, with the service opened, the catalogue read and every
panel built; workers and the API start right after, off the GUI thread, and are not
counted). Sides alternate so that machine load hits both alike. The app reuses one data
dir (a normal start); one extra first start on an empty data dir is reported too.
Prints the median of each side and the ratio app / bare; the goal: a usable window in under 1.5 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BARE = """
import sys, time
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMainWindow
app = QApplication(sys.argv)
window = QMainWindow()
window.resize(1180, 760)
window.show()
def ready():
    print("READY", repr(time.time()), flush=True)
    app.quit()
QTimer.singleShot(0, ready)
app.exec()
"""

APP = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from desktop.app import run
from localapi.config import load_settings
run(load_settings(Path({data!r}), port={port}), on_ready=lambda: print("READY", repr(time.time()), flush=True))
"""

PHASES = """
import sys, time, tempfile
from pathlib import Path
t0 = time.perf_counter()
marks = []
def mark(name): marks.append((name, time.perf_counter() - t0))
sys.path.insert(0, {root!r})
from PySide6.QtWidgets import QApplication; mark("import Qt widgets")
from localapi.config import load_settings
from localapi.core.service import Service; mark("import the service layer")
from desktop.context import Desktop
from desktop.main_window import MainWindow
from desktop.views.shell import Shell; mark("import the desktop package")
app = QApplication(sys.argv)
service = Service.open(load_settings(Path({data!r}))); mark("Service.open (catalogue, database)")
desktop = Desktop.create(service); mark("Desktop.create (models, stores)")
window = MainWindow(desktop, Shell.system(app.clipboard(), lambda theme: None)); mark("build the window")
window.show(); app.processEvents(); mark("show")
last = 0.0
for name, at in marks:
    print(f"PHASE {{name}}|{{at - last:.3f}}")
    last = at
desktop.shutdown()
"""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def measure(code: str, env: dict[str, str]) -> float:
    started = time.time()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                            cwd=ROOT)
    for line in result.stdout.splitlines():
        if line.startswith("READY "):
            return float(line.split()[1]) - started
    raise RuntimeError(f"no READY line (exit {result.returncode}):\n{result.stdout}\n{result.stderr}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env = dict(os.environ)
    if not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env["FILEKILN_QUIT_AFTER_START"] = "1"
    with tempfile.TemporaryDirectory(prefix="bench-gui-start-") as tmp:
        first_dir = Path(tmp) / "first"
        data_dir = Path(tmp) / "data"
        first = measure(APP.format(root=str(ROOT), data=str(first_dir), port=free_port()), env)
        measure(APP.format(root=str(ROOT), data=str(data_dir), port=free_port()), env)  # creates the data dir
        bare: list[float] = []
        app: list[float] = []
        for run in range(args.runs):
            bare.append(measure(BARE, env))
            app.append(measure(APP.format(root=str(ROOT), data=str(data_dir), port=free_port()), env))
            print(f"run {run + 1}: bare {bare[-1]:.3f} s   app {app[-1]:.3f} s", flush=True)
        phases = subprocess.run([sys.executable, "-c", PHASES.format(root=str(ROOT), data=str(data_dir))],
                                capture_output=True, text=True, env=env, timeout=120, cwd=ROOT).stdout
    bare_median, app_median = statistics.median(bare), statistics.median(app)
    print("where the app's time goes (one in-process run, seconds after the interpreter is up):")
    for line in phases.splitlines():
        if line.startswith("PHASE "):
            name, seconds = line[6:].split("|")
            print(f"  {name:38} {seconds}")
    print(f"platform: {env.get('QT_QPA_PLATFORM', 'native')}, load average {os.getloadavg()[0]:.1f}")
    print(f"bare QApplication + QMainWindow: median {bare_median:.3f} s")
    print(f"FileKiln window:                 median {app_median:.3f} s (first start on an empty data dir "
          f"{first:.3f} s)")
    print(f"ratio app / bare: {app_median / bare_median:.2f}x   goal < 1.5 s: "
          f"{'met' if app_median < 1.5 else 'NOT met'}")


if __name__ == "__main__":
    main()
