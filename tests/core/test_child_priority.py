"""A conversion child stays below the service whatever its engine asks for (localapi/core/jobs/priority.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")

# a conversion child's priority, then an AV1 encode by SVT-AV1 (which, run as root, asks for SCHED_FIFO),
# then an attempt of its own to go real-time
CHILD = """
import os, sys
import av, numpy as np
from localapi.core.jobs.priority import lower_priority

lower_priority()
with av.open(sys.argv[1], "w") as out:
    stream = out.add_stream("libsvtav1", rate=10)
    stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p"
    for n in range(5):
        frame = av.VideoFrame.from_ndarray(np.full((64, 64, 3), n * 40, dtype="uint8"), format="rgb24")
        out.mux(stream.encode(frame))
    out.mux(stream.encode())
print(os.sched_getscheduler(0))
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    print("raised")
except OSError:
    print("refused")
"""


def test_an_av1_encode_leaves_the_child_idle_and_it_cannot_go_real_time(tmp_path: Path) -> None:
    video = tmp_path / "clip.mp4"
    done = subprocess.run([sys.executable, "-c", CHILD, str(video)], cwd=ROOT, capture_output=True, text=True,
                          timeout=240)  # SCHED_IDLE: slow on a busy machine
    assert done.returncode == 0, done.stderr
    policy, attempt = done.stdout.split()
    assert int(policy) == os.SCHED_IDLE, f"the child runs under policy {policy} after the encode"
    assert attempt == "refused"
    assert video.stat().st_size > 0  # the encode itself went on
