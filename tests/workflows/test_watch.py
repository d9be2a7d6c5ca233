"""Watch folders on a real service: settling, the ledger across restarts, failed/, the tree, --after, the CLI."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PIL import Image

from localapi.config import Settings
from localapi.core.errors import InvalidParams
from localapi.core.service import Service
from localapi.core.watch import WatchFolders, WatchResult, open_watch
from localapi.core.workflows.records import StepSpec
from tests.conftest import ROOT, png_bytes, process_env, run_cli

WEBP = "Test to WebP"


def wait_for(check: Callable[[], bool], timeout: float = 90, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.05)


def open_service(data_dir: Path) -> Service:
    service = Service.open(Settings(data_dir=data_dir))
    service.presets.save(WEBP, [StepSpec("image-convert", {}, "webp")], replace=True)
    service.start_workers()
    return service


class Watching:
    """A service with its watch folders running, and every result they reported."""

    def __init__(self, data_dir: Path, settle_seconds: float = 0.3) -> None:
        self.service = open_service(data_dir)
        self.results: list[WatchResult] = []
        self._lock = threading.Lock()
        self.watch: WatchFolders = open_watch(self.service, settle_seconds=settle_seconds, on_result=self._heard)

    def _heard(self, result: WatchResult) -> None:
        with self._lock:
            self.results.append(result)

    def wait(self, count: int) -> list[WatchResult]:
        wait_for(lambda: len(self.results) >= count, what=f"{count} results (have {len(self.results)})")
        return list(self.results)

    def ledger(self) -> dict[str, int]:
        rows = self.service.db.all("select status, count(*) as n from watched_files group by status")
        return {r["status"]: r["n"] for r in rows}

    def close(self) -> None:
        self.watch.stop()
        self.service.close()


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "in").mkdir()
    return tmp_path / "in", tmp_path / "out"


@pytest.fixture
def watching(data_dir: Path) -> Iterator[Watching]:
    running = Watching(data_dir)
    yield running
    running.close()


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def assert_webp(path: Path, size: tuple[int, int]) -> None:
    with Image.open(path) as image:
        image.load()  # decodes the whole file: a truncated output fails here
        assert image.format == "WEBP" and image.size == size


def test_a_png_written_slowly_over_three_seconds_is_converted_once_and_whole(
        data_dir: Path, dirs: tuple[Path, Path]) -> None:
    in_dir, out_dir = dirs
    # pauses of 0.5 s between pieces against a settle time ten times as long: a loaded machine that
    # stalls the writer for a moment still never looks like a finished file
    running = Watching(data_dir, settle_seconds=5.0)
    try:
        running.watch.add(in_dir, out_dir, WEBP)
        running.watch.start()
        data = png_bytes(900, 700, (20, 120, 220))
        chunks = [data[i:i + len(data) // 6 + 1] for i in range(0, len(data), len(data) // 6 + 1)]
        with open(in_dir / "slow.png", "wb") as f:
            for chunk in chunks:  # a copy that pauses between pieces, as a slow disk or network does
                f.write(chunk)
                f.flush()
                time.sleep(3 / len(chunks))
        [result] = running.wait(1)
        assert result.ok, result.message
        assert result.outputs == [out_dir / "slow.webp"]
        assert_webp(out_dir / "slow.webp", (900, 700))
        assert running.ledger() == {"done": 1}
        assert files_under(out_dir) == [out_dir / "slow.webp"]
    finally:
        running.close()


def test_fifty_pngs_dropped_at_once_make_fifty_outputs_none_twice(
        watching: Watching, dirs: tuple[Path, Path]) -> None:
    in_dir, out_dir = dirs
    watching.watch.add(in_dir, out_dir, WEBP)
    watching.watch.start()
    for n in range(50):
        (in_dir / f"photo{n:02}.png").write_bytes(png_bytes(40 + n, 30))
    results = watching.wait(50)
    assert all(r.ok for r in results)
    assert sorted(str(r.rel_path) for r in results) == [f"photo{n:02}.png" for n in range(50)]
    assert [p.name for p in files_under(out_dir)] == [f"photo{n:02}.webp" for n in range(50)]
    assert watching.ledger() == {"done": 50}
    assert_webp(out_dir / "photo49.webp", (89, 30))


def test_a_restart_in_the_middle_converts_none_twice_and_loses_none(
        data_dir: Path, dirs: tuple[Path, Path]) -> None:
    in_dir, out_dir = dirs
    first = Watching(data_dir)
    folder = first.watch.add(in_dir, out_dir, WEBP)
    first.watch.start()
    for n in range(20):
        (in_dir / f"p{n:02}.png").write_bytes(png_bytes(32, 32 + n))
    first.wait(4)
    first.close()  # some done, some taken and running, some not taken yet

    second = Watching(data_dir)
    try:
        assert second.watch.list()[0].id == folder.id  # the folder came back from the database
        second.watch.start()
        wait_for(lambda: second.ledger().get("done", 0) == 20, what="20 done in the ledger")
        assert second.ledger() == {"done": 20}
        assert len(first.results) + len(second.results) == 20
        converted = sorted(str(r.rel_path) for r in [*first.results, *second.results])
        assert converted == [f"p{n:02}.png" for n in range(20)]
        assert [p.name for p in files_under(out_dir)] == [f"p{n:02}.webp" for n in range(20)]
        rows = second.service.db.all("select count(distinct workflow_id) as n from watched_files")
        assert rows[0]["n"] == 20  # one workflow each: those running at the restart were followed, not resubmitted
    finally:
        second.close()


@pytest.mark.parametrize("content", [png_bytes(200, 150)[:90], b"this is not a picture at all\n" * 20],
                         ids=["truncated", "garbage"])
def test_a_corrupt_png_goes_to_failed_with_its_message_and_stays(
        watching: Watching, dirs: tuple[Path, Path], content: bytes) -> None:
    in_dir, out_dir = dirs
    watching.watch.add(in_dir, out_dir, WEBP)
    watching.watch.start()
    (in_dir / "broken.png").write_bytes(content)
    [result] = watching.wait(1)
    assert not result.ok and result.message
    report = out_dir / "failed" / "broken.png.error.txt"
    assert result.report == report
    assert result.message in report.read_text() and "broken.png" in report.read_text()
    assert (in_dir / "broken.png").read_bytes() == content
    assert files_under(out_dir) == [report]
    assert watching.ledger() == {"failed": 1}
    assert watching.watch.list()[0].last_error == result.message


def test_a_recursive_watch_keeps_the_tree_and_skips_hidden_and_partial_files(
        watching: Watching, dirs: tuple[Path, Path]) -> None:
    in_dir, out_dir = dirs
    watching.watch.add(in_dir, out_dir, "Web images", recursive=True)
    watching.watch.start()
    (in_dir / "a" / "b").mkdir(parents=True)
    (in_dir / "a" / "b" / "c.png").write_bytes(png_bytes(64, 48))
    (in_dir / "top.png").write_bytes(png_bytes(16, 16))
    for skipped in (".hidden.png", "download.png.crdownload", "copy.png.part", "~$lock.png"):
        (in_dir / "a" / skipped).write_bytes(png_bytes())
    results = watching.wait(2)
    assert sorted(str(r.rel_path) for r in results) == ["a/b/c.png", "top.png"]
    assert files_under(out_dir) == [out_dir / "a" / "b" / "c.webp", out_dir / "top.webp"]
    assert_webp(out_dir / "a" / "b" / "c.webp", (64, 48))


def test_links_lead_no_read_and_no_write_outside_the_folders(watching: Watching, tmp_path: Path) -> None:
    """A link in the watched folder to a file elsewhere (the data dir's params.key, say) is never taken;
    with the output folder inside the watched one, links planted as its sub-folder and as failed/ lead
    no output and no report elsewhere."""
    in_dir = tmp_path / "in"
    out_dir = in_dir / "converted"
    elsewhere, secret = tmp_path / "elsewhere", tmp_path / "secret.png"
    for folder in (in_dir / "sub", out_dir, elsewhere):
        folder.mkdir(parents=True)
    secret.write_bytes(png_bytes(20, 20))
    (in_dir / "link.png").symlink_to(secret)
    (out_dir / "sub").symlink_to(elsewhere)
    (out_dir / "failed").symlink_to(elsewhere)
    watching.watch.add(in_dir, out_dir, WEBP, recursive=True)
    watching.watch.start()
    (in_dir / "plain.png").write_bytes(png_bytes(16, 16))
    (in_dir / "sub" / "deep.png").write_bytes(png_bytes(24, 24))
    (in_dir / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not a png")
    results = {str(r.rel_path): r for r in watching.wait(3)}
    assert sorted(results) == ["broken.png", "plain.png", "sub/deep.png"], results
    assert results["plain.png"].ok and not results["broken.png"].ok
    assert not results["sub/deep.png"].ok and "leads outside" in (results["sub/deep.png"].message or "")
    time.sleep(1.5)  # five times the settle time: the link would have been taken by now
    assert len(watching.results) == 3, watching.results
    assert list(elsewhere.iterdir()) == []
    assert sorted(p.name for p in out_dir.iterdir()) == ["failed", "plain.webp", "sub"]


def test_an_existing_file_is_taken_at_start_and_a_changed_one_again(
        watching: Watching, dirs: tuple[Path, Path]) -> None:
    in_dir, out_dir = dirs
    (in_dir / "there.png").write_bytes(png_bytes(10, 10))
    watching.watch.add(in_dir, out_dir, WEBP)
    watching.watch.start()
    watching.wait(1)
    (in_dir / "there.png").write_bytes(png_bytes(20, 20))  # a new version at the same path
    results = watching.wait(2)
    assert [r.outputs for r in results] == [[out_dir / "there.webp"], [out_dir / "there-2.webp"]]
    assert_webp(out_dir / "there-2.webp", (20, 20))  # never overwrites the first output


@pytest.mark.parametrize("after", ["move", "delete"])
def test_after_move_or_delete_clears_the_input_once_converted(
        watching: Watching, dirs: tuple[Path, Path], after: str) -> None:
    in_dir, out_dir = dirs
    watching.watch.add(in_dir, out_dir, WEBP, recursive=True, after=after)
    watching.watch.start()
    (in_dir / "sub").mkdir()
    data = png_bytes(30, 20)
    (in_dir / "sub" / "x.png").write_bytes(data)
    [result] = watching.wait(1)
    assert result.ok and result.outputs == [out_dir / "sub" / "x.webp"]
    wait_for(lambda: not (in_dir / "sub" / "x.png").exists(), what="the input cleared")
    kept = in_dir / ".filekiln-done" / "sub" / "x.png"
    assert (kept.read_bytes() == data) if after == "move" else not kept.exists()
    assert watching.ledger() == {"done": 1}  # the moved file, in a hidden folder, is not taken again


def test_a_folder_is_refused_when_paths_or_preset_are_wrong(data_dir: Path, dirs: tuple[Path, Path]) -> None:
    in_dir, out_dir = dirs
    service = Service.open(Settings(data_dir=data_dir))
    try:
        watch = open_watch(service)
        for args, field in [((Path("in"), out_dir, WEBP), "inDir"), ((in_dir, in_dir, "Web images"), "outDir"),
                            ((in_dir / "inner", in_dir, "Web images"), "inDir"),
                            ((in_dir, out_dir, "No such preset"), "preset")]:
            (in_dir / "inner").mkdir(exist_ok=True)
            with pytest.raises(InvalidParams) as refused:
                watch.add(*args)
            assert field in (refused.value.errors or {}), args
        first = watch.add(in_dir, out_dir, "Web images")
        again = watch.add(in_dir, out_dir, "Email-ready PDF", after="delete")  # the same folders: updated
        assert again.id == first.id and again.preset == "Email-ready PDF" and len(watch.list()) == 1
        assert watch.pause(first.id).paused and not watch.resume(first.id).paused
        watch.remove(first.id)
        assert watch.list() == []
    finally:
        service.close()


def test_the_cli_watches_converts_one_file_and_stops_on_sigint(data_dir: Path, dirs: tuple[Path, Path],
                                                              tmp_path: Path) -> None:
    in_dir, out_dir = dirs
    log = tmp_path / "watch.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "filekiln", "--data-dir", str(data_dir), "watch", str(in_dir),
             "--preset", "Web images", "--out", str(out_dir)], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
            env=process_env(data_dir))
    try:
        wait_for(lambda: "Watching" in log.read_text(), what="the watch to start")
        (in_dir / "cli.png").write_bytes(png_bytes(50, 40))
        wait_for(lambda: "converted cli.png" in log.read_text(), what="the conversion line")
        assert_webp(out_dir / "cli.webp", (50, 40))
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "FileKiln watch stopped." in log.read_text()
    [listed] = json.loads(run_cli(data_dir, "watch", "--list", "--json"))
    assert listed["inDir"] == str(in_dir.resolve()) and listed["preset"] == "Web images"
    run_cli(data_dir, "watch", "--remove", listed["id"])
    assert json.loads(run_cli(data_dir, "watch", "--list", "--json")) == []
