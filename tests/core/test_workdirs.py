"""Jobs' scratch dirs: spares renamed into place and back, never carrying one job's files into the next."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import psutil

from localapi.core.jobs.workdirs import SPARE, WorkDirs
from localapi.core.processes import process_identity


def leave_files(work: Path) -> None:
    """What a job may leave: results not moved out, a bundle, a log, inputs fetched from a bucket."""
    (work / "out" / "left.webp").write_bytes(b"result")
    (work / "out" / "pages").mkdir()
    (work / "out" / "pages" / "1.png").write_bytes(b"page")
    (work / "bundle.zip").write_bytes(b"zip")
    (work / "in").mkdir()
    (work / "in" / "input.pdf").write_bytes(b"input")


def test_a_finished_jobs_dir_is_emptied_and_becomes_the_next_jobs(tmp_path: Path) -> None:
    dirs = WorkDirs(tmp_path, keep=2)
    first = dirs.take("job_1")
    assert first == tmp_path / "job_1" and list(first.iterdir()) == [first / "out"]
    inode = first.stat().st_ino
    leave_files(first)
    dirs.give_back(first, reuse=True)
    assert not first.exists()
    assert [p.stat().st_ino for p in (tmp_path / SPARE).iterdir()] == [inode]

    second = dirs.take("job_2")
    assert second.stat().st_ino == inode  # the same dir, renamed: no new one made
    assert list(second.iterdir()) == [second / "out"] and list((second / "out").iterdir()) == []
    assert list((tmp_path / SPARE).iterdir()) == []


def test_a_dir_is_not_reused_after_a_job_that_did_not_finish(tmp_path: Path) -> None:
    dirs = WorkDirs(tmp_path, keep=2)
    work = dirs.take("job_1")
    leave_files(work)
    dirs.give_back(work, reuse=False)  # killed: something it started may still hold the dir
    assert not work.exists()
    assert not (tmp_path / SPARE).exists() or list((tmp_path / SPARE).iterdir()) == []
    assert list(dirs.take("job_2").iterdir()) == [tmp_path / "job_2" / "out"]


def test_no_more_spares_are_kept_than_asked(tmp_path: Path) -> None:
    dirs = WorkDirs(tmp_path, keep=1)
    works = [dirs.take(f"job_{n}") for n in range(3)]
    for work in works:
        dirs.give_back(work, reuse=True)
    assert len(list((tmp_path / SPARE).iterdir())) == 1
    assert not any(w.exists() for w in works)


def test_a_spare_removed_by_someone_else_is_made_anew(tmp_path: Path) -> None:
    dirs = WorkDirs(tmp_path, keep=1)
    dirs.give_back(dirs.take("job_1"), reuse=True)
    shutil.rmtree(tmp_path / SPARE)
    work = dirs.take("job_2")
    assert list(work.iterdir()) == [work / "out"]


def test_an_earlier_attempts_leftovers_are_removed_at_the_take(tmp_path: Path) -> None:
    (tmp_path / "job_1" / "out").mkdir(parents=True)
    (tmp_path / "job_1" / "out" / "half.pdf").write_bytes(b"%PDF-")
    dirs = WorkDirs(tmp_path)
    work = dirs.take("job_1")
    assert list((work / "out").iterdir()) == []


def test_the_spares_of_a_process_that_is_gone_are_removed_at_a_start(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    parent = psutil.Process(os.getppid())
    alive = f"{socket.gethostname()}:{parent.pid}:{parent.create_time():.3f}"
    dead = WorkDirs(tmp_path, identity=f"{socket.gethostname()}:{gone.stdout.strip()}:1.000")
    living = WorkDirs(tmp_path, identity=alive)
    mine = WorkDirs(tmp_path, identity=process_identity())
    for dirs, job in ((dead, "job_d"), (living, "job_l"), (mine, "job_m")):
        dirs.give_back(dirs.take(job), reuse=True)
    assert len(list((tmp_path / SPARE).iterdir())) == 3

    WorkDirs(tmp_path, identity=process_identity()).clean()
    owners = sorted(p.name.rsplit("+", 1)[0] for p in (tmp_path / SPARE).iterdir())
    assert owners == sorted(i.replace(":", "+") for i in (alive, process_identity()))


def test_a_stop_removes_the_spares_of_this_process_only(tmp_path: Path) -> None:
    ours, other = WorkDirs(tmp_path, keep=2), WorkDirs(tmp_path, keep=2, identity="elsewhere:1:1.000")
    running = [(ours, ours.take("job_1")), (ours, ours.take("job_2")), (other, other.take("job_3"))]
    for dirs, work in running:
        dirs.give_back(work, reuse=True)
    assert len(list((tmp_path / SPARE).iterdir())) == 3
    ours.close()
    assert [p.name.split("+")[0] for p in (tmp_path / SPARE).iterdir()] == ["elsewhere"]
    assert list(ours.take("job_9").iterdir()) == [tmp_path / "job_9" / "out"]  # made anew
