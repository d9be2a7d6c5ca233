"""``filekiln presets`` and ``filekiln convert`` on folders and with presets: the real CLI, the real engine."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
from PIL import Image

from tests.conftest import ROOT, install_db, png_bytes, process_env, run_cli, slow_pdf_bytes

SMALL_WEBP = {"tool": "image-resize", "params": {"width": 20, "height": 20}, "outputFormat": "png"}
TO_WEBP = {"tool": "image-convert", "outputFormat": "webp"}


def cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``filekiln ARGS`` as run_cli runs it, with its exit code and standard error to look at."""
    return subprocess.run([sys.executable, "-m", "filekiln", "--data-dir", str(data_dir), *args],
                          capture_output=True, text=True, timeout=180, cwd=ROOT, env=process_env(data_dir))


def presets_file(path: Path, *presets: tuple[str, list[dict[str, Any]]]) -> Path:
    path.write_text(json.dumps({"format": "filekiln-presets", "version": 1, "presets": [
        {"name": name, "description": f"{name} for tests", "steps": steps} for name, steps in presets]}))
    return path


def saved(data_dir: Path) -> dict[str, Any]:
    return {p["name"]: p for p in json.loads(run_cli(data_dir, "presets", "list", "--json")) if not p["builtin"]}


def write_png(path: Path, size: tuple[int, int] = (40, 30)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png_bytes(*size))
    return path


# --------------------------------------------------------------------------- presets


def test_presets_export_and_import_round_trip(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    source = presets_file(tmp_path / "in.json", ("Small WebP", [SMALL_WEBP, TO_WEBP]), ("Just WebP", [TO_WEBP]))
    out = run_cli(first, "presets", "import", str(source))
    assert "Imported Small WebP." in out and "Imported Just WebP." in out

    exported = tmp_path / "exported.json"
    run_cli(first, "presets", "export", "Small WebP", "--out", str(exported))
    assert [p["name"] for p in json.loads(exported.read_text())["presets"]] == ["Small WebP"]
    everything = json.loads(run_cli(first, "presets", "export"))  # standard output; saved ones only
    assert sorted(p["name"] for p in everything["presets"]) == ["Just WebP", "Small WebP"]

    run_cli(second, "presets", "import", str(exported))
    copied = saved(second)
    assert list(copied) == ["Small WebP"]
    assert copied["Small WebP"] == saved(first)["Small WebP"]
    assert [s["tool"] for s in copied["Small WebP"]["steps"]] == ["image-resize", "image-convert"]
    assert copied["Small WebP"]["steps"][0]["params"]["width"] == 20

    run_cli(second, "presets", "delete", "Small WebP")
    assert saved(second) == {}


def test_importing_an_existing_name_needs_replace(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run_cli(data, "presets", "import", str(presets_file(tmp_path / "a.json", ("Mine", [TO_WEBP]))))
    again = presets_file(tmp_path / "b.json", ("Mine", [SMALL_WEBP]))
    refused = cli(data, "presets", "import", str(again))
    assert refused.returncode == 1 and "preset_exists" in refused.stderr and "--replace" in refused.stderr
    assert [s["tool"] for s in saved(data)["Mine"]["steps"]] == ["image-convert"]
    run_cli(data, "presets", "import", str(again), "--replace")
    assert [s["tool"] for s in saved(data)["Mine"]["steps"]] == ["image-resize"]


def test_a_builtin_preset_cannot_be_deleted_or_overwritten(tmp_path: Path) -> None:
    data = tmp_path / "data"
    deleted = cli(data, "presets", "delete", "Web images")
    assert deleted.returncode != 0 and "built in" in deleted.stderr
    overwrite = presets_file(tmp_path / "web.json", ("Web images", [TO_WEBP]))
    replaced = cli(data, "presets", "import", str(overwrite), "--replace")
    assert replaced.returncode != 0 and "built-in" in replaced.stderr
    web = next(p for p in json.loads(run_cli(data, "presets", "list", "--json")) if p["name"] == "Web images")
    assert web["builtin"] and web["steps"][0]["tool"] == "image-resize"


def test_importing_a_chain_that_cannot_run_is_refused_naming_the_step(tmp_path: Path) -> None:
    data = tmp_path / "data"
    bad = presets_file(tmp_path / "bad.json", ("Fine", [TO_WEBP]),
                       ("Broken", [TO_WEBP, {"tool": "pdf-compress", "params": {"level": "recommended"}}]))
    refused = cli(data, "presets", "import", str(bad))
    assert refused.returncode != 0
    assert "Step 2 (pdf-compress)" in refused.stderr and "Broken" in refused.stderr, refused.stderr
    assert saved(data) == {}  # nothing of the file is saved unless all of it can be


def test_a_presets_file_nested_too_deeply_is_refused_in_words(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    refused = cli(tmp_path / "data", "presets", "import", str(deep))
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert "nested too deeply" in refused.stderr


# --------------------------------------------------------------------------- folder batches


def test_a_recursive_folder_batch_keeps_the_tree_and_skips_what_the_tool_does_not_take(tmp_path: Path) -> None:
    src, out = tmp_path / "photos", tmp_path / "web"
    for rel in ("top.png", "a/one.png", "a/b/two.png", ".cache/hidden.png"):
        write_png(src / rel)
    (src / "a" / "notes.txt").write_text("not an image")

    result = cli(tmp_path / "data", "convert", str(src), "--recursive", "--tool", "image-convert", "--to", "webp",
                 "--out", str(out))

    assert result.returncode == 0, result.stderr
    made = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert made == ["a/b/two.webp", "a/one.webp", "top.webp"]
    for rel in made:
        with Image.open(out / rel) as img:
            assert img.format == "WEBP" and img.size == (40, 30)
    assert "skipped a/notes.txt:" in result.stderr
    assert "ok a/b/two.png -> " in result.stderr and "failed" not in result.stderr
    assert sorted(Path(line).relative_to(out).as_posix() for line in result.stdout.split()) == made


def test_a_two_step_preset_runs_on_each_file_of_a_folder(tmp_path: Path) -> None:
    data, src, out = tmp_path / "data", tmp_path / "in", tmp_path / "out"
    run_cli(data, "presets", "import", str(presets_file(tmp_path / "p.json", ("Small WebP", [SMALL_WEBP, TO_WEBP]))))
    write_png(src / "wide.png", (80, 40))
    write_png(src / "tall.png", (30, 60))

    result = cli(data, "convert", str(src), "--preset", "Small WebP", "--out", str(out))

    assert result.returncode == 0, result.stderr
    sizes = {}
    for name in ("wide.webp", "tall.webp"):
        with Image.open(out / name) as img:
            assert img.format == "WEBP"
            sizes[name] = img.size
    assert sizes == {"wide.webp": (20, 10), "tall.webp": (10, 20)}  # resized by step 1, converted by step 2


def test_a_failing_file_makes_exit_1_and_the_others_still_convert(tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    write_png(src / "good.png")
    write_png(src / "sub" / "also-good.png")
    data = png_bytes(400, 300)
    (src / "broken.png").write_bytes(data[: len(data) // 2])  # sniffed as PNG; its pixel data is cut

    result = cli(tmp_path / "data", "convert", str(src), "--recursive", "--tool", "image-convert", "--to", "webp",
                 "--out", str(out))

    assert result.returncode == 1, result.stderr
    assert "failed broken.png:" in result.stderr
    assert (out / "good.webp").is_file() and (out / "sub" / "also-good.webp").is_file()
    assert not (out / "broken.webp").exists()


def test_an_unknown_tool_or_preset_or_both_given_is_exit_2(tmp_path: Path) -> None:
    data, src = tmp_path / "data", tmp_path / "in"
    write_png(src / "x.png")
    for args in (["--tool", "no-such-tool"], ["--preset", "No such preset"],
                 ["--tool", "image-convert", "--preset", "Web images"], []):
        result = cli(data, "convert", str(src), *args, "--out", str(tmp_path / "out"))
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.strip(), args
    assert not (tmp_path / "out").exists()


def test_a_preset_whose_later_step_merges_makes_one_output_of_the_files_named(tmp_path: Path) -> None:
    """JPG each photo, then one PDF of them all: as in the desktop, a merging step takes every file."""
    import pymupdf

    data = tmp_path / "data"
    run_cli(data, "presets", "import", str(presets_file(tmp_path / "p.json", ("Photos to PDF", [
        {"tool": "image-convert", "outputFormat": "jpg"}, {"tool": "image-to-pdf"}]))))
    photos = [write_png(tmp_path / f"{name}.png") for name in ("first", "second", "third")]
    out = tmp_path / "out"
    proc = cli(data, "convert", *map(str, photos), "--preset", "Photos to PDF", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    made = sorted(out.iterdir())
    assert [p.suffix for p in made] == [".pdf"] and pymupdf.open(made[0]).page_count == 3


# --------------------------------------------------------------------------- Ctrl-C


def slow_pdfs(folder: Path, count: int) -> list[Path]:
    """PDFs of image pages that pdf-compress at level extreme takes several seconds on."""
    folder.mkdir(parents=True, exist_ok=True)
    data = slow_pdf_bytes()
    paths = [folder / f"scan-{n}.pdf" for n in range(count)]
    for path in paths:
        path.write_bytes(data)
    return paths


def interrupted(data_dir: Path, args: list[str], when: str, ready: Callable[[subprocess.Popen[str]], bool]
                ) -> tuple[int, str]:
    """Run ``filekiln ARGS``, press Ctrl-C once ``ready`` says so, and give its exit code and standard error."""
    proc = subprocess.Popen([sys.executable, "-m", "filekiln", "--data-dir", str(data_dir), *args], cwd=ROOT,
                            env=process_env(data_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready(proc):
            assert time.monotonic() < deadline, f"timed out waiting for {when}"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, stderr


def jobs_by_status(data_dir: Path) -> dict[str, int]:
    """Read once the CLI has exited (it made the database; on the scale backends it may be elsewhere)."""
    db = install_db(data_dir)
    try:
        return {r[0]: int(r[1]) for r in db.all("select status, count(*) from jobs group by status")}
    finally:
        db.close()


def running_jobs(data_dir: Path) -> list[Path]:
    """The work dirs of the jobs running now (``jobs/<job id>``; spares and pool logs start with ``_``)."""
    jobs = data_dir / "jobs"
    return [p for p in jobs.iterdir() if not p.name.startswith("_")] if jobs.is_dir() else []


def test_ctrl_c_stops_a_folder_batch_and_cancels_what_it_started(tmp_path: Path) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    slow_pdfs(tmp_path / "in", 3)
    code, stderr = interrupted(data, ["convert", str(tmp_path / "in"), "--tool", "pdf-compress", "--param",
                                      "level=extreme", "--out", str(out)],
                               "a job of the batch to run", lambda _: bool(running_jobs(data)))
    assert code == 1, stderr
    canceled = re.search(r"Interrupted: (\d+) canceled\.", stderr)
    assert canceled and int(canceled[1]) >= 1, stderr
    made = list(out.iterdir()) if out.exists() else []
    jobs = jobs_by_status(data)  # the files whose jobs were made before Ctrl-C: each converted or canceled
    assert len(made) + int(canceled[1]) == sum(jobs.values()), (made, stderr, jobs)
    assert set(jobs) <= {"CANCELED", "DONE"}, jobs


def test_ctrl_c_stops_a_single_file_conversion_and_its_child(tmp_path: Path) -> None:
    out = tmp_path / "out"
    [pdf] = slow_pdfs(tmp_path / "in", 1)
    children: list[psutil.Process] = []

    def converting(proc: subprocess.Popen[str]) -> bool:
        if not children:
            children.extend(psutil.Process(proc.pid).children())
            return False
        return True  # a look later: into the conversion

    code, stderr = interrupted(tmp_path / "data", ["convert", str(pdf), "--tool", "pdf-compress", "--param",
                                                   "level=extreme", "--out", str(out)],
                               "the conversion child to start", converting)
    assert code == 1, stderr
    assert "pdf-compress failed:" in stderr and "canceled" in stderr
    assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)
    assert not out.exists() or not any(out.iterdir())
