"""The video tools on real files: input x output matrix, codecs and params, A/V sync, stills, info, errors, safety."""

from __future__ import annotations

import json
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import pytest
from PIL import Image

from converters.base import Cancelled, Context, ConversionError, InputFile
from converters.catalogue import load_catalogue
from converters.engines.media.pipeline import PacketGate
from converters.inputs.sniff import sniff
from tests.conftest import MachineDelays
from tests.converters import media_samples as samples_mod
from tests.converters.media_samples import probe
from tests.converters.runtool import ToolRun, run_tool

INPUTS = ["mp4", "mov", "mkv", "webm", "avi", "mpeg", "flv", "wmv", "3gp", "m4v"]
OUTPUTS = ["mp4", "webm", "mkv", "mov"]
# The behaviour asked of video-convert, written down independently of its tables:
# a codec the container takes is copied, anything else gets the container's default codec.
DEFAULT_VIDEO = {"mp4": "h264", "webm": "vp9", "mkv": "h264", "mov": "h264"}
DEFAULT_AUDIO = {"mp4": "aac", "webm": "opus", "mkv": "aac", "mov": "aac"}
COPIES_VIDEO = {
    "mp4": {"h264", "hevc", "av1"}, "webm": {"vp9", "vp8", "av1"}, "mov": {"h264", "hevc"},
    "mkv": {"h264", "hevc", "vp9", "vp8", "av1", "mpeg4", "mpeg2video"},
}
COPIES_AUDIO = {
    "mp4": {"aac", "mp3"}, "webm": {"opus", "vorbis"}, "mov": {"aac", "mp3"},
    "mkv": {"aac", "mp3", "opus", "vorbis", "flac", "mp2"},
}
SNIFFED = {"mp4": "mp4", "webm": "webm", "mkv": "mkv", "mov": "mov"}
SIZE = (160, 120)
LONG_SECONDS = 20.0  # the length of the samples' long.mp4


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Read-only inputs shared by the module; every test writes its outputs under its own tmp_path."""
    folder = tmp_path_factory.mktemp("video-samples")
    for fmt in INPUTS:
        samples_mod.write_clip(folder / f"clip.{fmt}", fmt, size=SIZE)
    for fmt in ("mp4", "webm", "mkv"):
        samples_mod.write_clip(folder / f"flash.{fmt}", fmt, size=SIZE, flash_at=1.0)
    samples_mod.write_clip(folder / "portrait.mp4", "mp4", size=SIZE, rotation=90)
    samples_mod.write_clip(folder / "h264.mkv", "mkv", size=SIZE, vcodec="libx264")
    samples_mod.write_clip(folder / "anamorphic.mp4", "mp4", size=SIZE, sar=Fraction(2, 1))
    samples_mod.write_clip(folder / "mute.mp4", "mp4", size=SIZE, audio=False)
    samples_mod.write_clip(folder / "radio.webm", "webm", video=False)
    samples_mod.write_clip(folder / "long.mp4", "mp4", seconds=LONG_SECONDS, size=(320, 240))
    samples_mod.write_truncated(folder / "clip.mp4", folder / "cut.mp4", keep=0.5)
    return folder


def video_convert(source: Path, out_dir: Path, fmt: str, **params: object) -> ToolRun:
    run = run_tool("video-convert", [source], out_dir, params=params, output_format=fmt)
    assert len(run.outputs) == 1
    return run


def error_code(tool_id: str, source: Path, out_dir: Path, fmt: str, **params: object) -> str:
    with pytest.raises(ConversionError) as err:
        run_tool(tool_id, [source], out_dir, params=params, output_format=fmt)
    return err.value.code


@pytest.mark.parametrize("out_fmt", OUTPUTS)
@pytest.mark.parametrize("in_fmt", INPUTS)
def test_every_input_converts_to_every_output(samples: Path, tmp_path: Path, in_fmt: str, out_fmt: str) -> None:
    source = samples / f"clip.{in_fmt}"
    assert sniff(source, source.name) == in_fmt
    before = probe(source)
    out = video_convert(source, tmp_path, out_fmt).outputs[0]
    assert sniff(out, out.name) == SNIFFED[out_fmt]
    info = probe(out)
    assert sorted(s.kind for s in info.streams) == ["audio", "video"]
    vcodec, acodec = before.of("video").codec, before.of("audio").codec
    assert info.of("video").codec == (vcodec if vcodec in COPIES_VIDEO[out_fmt] else DEFAULT_VIDEO[out_fmt])
    assert info.of("audio").codec == (acodec if acodec in COPIES_AUDIO[out_fmt] else DEFAULT_AUDIO[out_fmt])
    assert (info.of("video").width, info.of("video").height) == SIZE
    assert info.duration == pytest.approx(before.duration, abs=0.1)


@pytest.mark.parametrize(("fmt", "codec", "expected"), [
    ("mp4", "h265", "hevc"), ("mp4", "av1", "av1"), ("webm", "av1", "av1"),
    ("mkv", "vp9", "vp9"), ("mov", "h265", "hevc"),
])
def test_chosen_video_codec_is_used(samples: Path, tmp_path: Path, fmt: str, codec: str, expected: str) -> None:
    info = probe(video_convert(samples / "clip.mp4", tmp_path, fmt, videoCodec=codec).outputs[0])
    assert info.of("video").codec == expected
    assert info.duration == pytest.approx(2.0, abs=0.1)


def test_h265_in_mp4_is_tagged_hvc1_for_apple_players(samples: Path, tmp_path: Path) -> None:
    out = video_convert(samples / "clip.mp4", tmp_path, "mp4", videoCodec="h265").outputs[0]
    with av.open(str(out)) as container:
        assert container.streams.video[0].codec_context.codec_tag == "hvc1"


def test_lower_crf_gives_a_bigger_file(samples: Path, tmp_path: Path) -> None:
    fine = probe(video_convert(samples / "clip.mp4", tmp_path / "fine", "mp4", crf=12).outputs[0])
    coarse = probe(video_convert(samples / "clip.mp4", tmp_path / "coarse", "mp4", crf=40).outputs[0])
    assert fine.of("video").bitrate > 1.3 * coarse.of("video").bitrate


@pytest.mark.parametrize(("params", "size"), [
    ({"width": 80}, (80, 60)), ({"height": 60}, (80, 60)), ({"width": 100, "height": 100}, (100, 76)),
])
def test_resize_keeps_the_aspect_ratio(samples: Path, tmp_path: Path, params: dict[str, int],
                                       size: tuple[int, int]) -> None:
    info = probe(video_convert(samples / "clip.mp4", tmp_path, "mp4", **params).outputs[0])
    assert (info.of("video").width, info.of("video").height) == size


def test_resizing_anamorphic_video_gives_square_pixels_at_the_displayed_aspect(samples: Path, tmp_path: Path) -> None:
    out = video_convert(samples / "anamorphic.mp4", tmp_path, "mp4", width=160).outputs[0]
    with av.open(str(out)) as container:
        context = container.streams.video[0].codec_context
        assert (context.width, context.height) == (160, 60)
        assert context.sample_aspect_ratio in (None, 1)


def test_fps_changes_the_frame_count_not_the_duration(samples: Path, tmp_path: Path) -> None:
    out = video_convert(samples / "clip.mp4", tmp_path, "mp4", fps=10).outputs[0]
    with av.open(str(out)) as container:
        stream = container.streams.video[0]
        assert stream.average_rate == 10
        assert sum(1 for _ in container.decode(stream)) == 20


@pytest.mark.parametrize("fmt", ["mp4", "webm"])
def test_trim_cuts_both_streams_to_the_span(samples: Path, tmp_path: Path, fmt: str) -> None:
    info = probe(video_convert(samples / "clip.mp4", tmp_path, fmt, start=0.5, end=1.5).outputs[0])
    assert info.duration == pytest.approx(1.0, abs=0.1)
    assert info.of("video").duration == pytest.approx(1.0, abs=0.1)
    assert info.of("audio").duration == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize(("source", "fmt", "params"), [
    ("flash.mp4", "webm", {}),
    ("flash.mkv", "mp4", {}),
    ("flash.webm", "mov", {"width": 80}),
    ("flash.mp4", "mkv", {"start": 0.4}),
    ("flash.mp4", "mp4", {"start": 0.3, "end": 1.8, "fps": 25}),
])
def test_sound_and_picture_stay_in_sync(samples: Path, tmp_path: Path, source: str, fmt: str,
                                        params: dict[str, float]) -> None:
    out = video_convert(samples / source, tmp_path, fmt, **params).outputs[0]
    flash, beep = samples_mod.flash_and_beep(out)
    assert flash == pytest.approx(1.0 - params.get("start", 0.0), abs=0.07)
    assert beep == pytest.approx(flash, abs=0.07)


def test_audio_bitrate_is_honoured(samples: Path, tmp_path: Path) -> None:
    info = probe(video_convert(samples / "clip.mp4", tmp_path, "mp4", audioBitrate=64).outputs[0])
    assert info.of("audio").codec == "aac"
    assert info.of("audio").bitrate == pytest.approx(64_000, rel=0.1)


def test_audio_codec_choice_is_used(samples: Path, tmp_path: Path) -> None:
    info = probe(video_convert(samples / "clip.mp4", tmp_path, "mkv", audioCodec="opus").outputs[0])
    assert info.of("audio").codec == "opus"


def test_remove_audio_leaves_only_video(samples: Path, tmp_path: Path) -> None:
    info = probe(video_convert(samples / "clip.mp4", tmp_path, "mp4", removeAudio=True).outputs[0])
    assert [s.kind for s in info.streams] == ["video"]


def video_payloads(path: Path) -> list[bytes]:
    with av.open(str(path)) as container:
        return [bytes(p) for p in container.demux(video=0) if p.size]


@pytest.mark.parametrize(("source", "fmt"), [("clip.mp4", "mkv"), ("h264.mkv", "mp4"), ("clip.webm", "mkv")])
def test_nothing_to_change_means_a_lossless_stream_copy(samples: Path, tmp_path: Path, source: str, fmt: str) -> None:
    run = video_convert(samples / source, tmp_path, fmt)
    assert any("copied" in note for note in run.notes)
    assert video_payloads(run.outputs[0]) == video_payloads(samples / source)


def test_video_without_audio_converts_to_video_only(samples: Path, tmp_path: Path) -> None:
    info = probe(video_convert(samples / "mute.mp4", tmp_path, "webm").outputs[0])
    assert [s.kind for s in info.streams] == ["video"]


def test_rotated_video_is_encoded_upright(samples: Path, tmp_path: Path) -> None:
    out = video_convert(samples / "portrait.mp4", tmp_path, "mp4", crf=30).outputs[0]
    with av.open(str(out)) as container:
        frame = next(container.decode(video=0))
        assert (frame.width, frame.height, frame.rotation) == (120, 160, 0)


def test_rotated_video_keeps_its_rotation_when_copied(samples: Path, tmp_path: Path) -> None:
    out = video_convert(samples / "portrait.mp4", tmp_path, "mkv").outputs[0]
    with av.open(str(out)) as container:
        assert next(container.decode(video=0)).rotation != 0


def test_codec_the_container_cannot_hold_is_invalid_params(samples: Path, tmp_path: Path) -> None:
    assert error_code("video-convert", samples / "clip.mp4", tmp_path, "webm", videoCodec="h264") == "invalid_params"


def test_crf_beyond_the_codec_scale_is_invalid_params(samples: Path, tmp_path: Path) -> None:
    assert error_code("video-convert", samples / "clip.mp4", tmp_path, "mp4", crf=60) == "invalid_params"


def test_audio_only_file_fails_with_no_video_stream(samples: Path, tmp_path: Path) -> None:
    assert error_code("video-convert", samples / "radio.webm", tmp_path, "mp4") == "no_video_stream"
    assert list(tmp_path.iterdir()) == []


def test_truncated_mp4_fails_with_damaged_input(samples: Path, tmp_path: Path) -> None:
    assert error_code("video-convert", samples / "cut.mp4", tmp_path, "webm") == "damaged_input"


def video_context(source: Path, out_dir: Path, output_format: str, progress: Any, cancelled: Any,
                  **params: object) -> Context:
    tool = load_catalogue().get("video-convert")
    assert tool is not None
    return Context(inputs=[InputFile(source, sniff(source, source.name) or "", source.name)],
                   params=tool.params(**params), output_format=output_format, out_dir=out_dir,
                   progress=progress, cancelled=cancelled)


def test_progress_is_reported_at_least_every_second(samples: Path, tmp_path: Path) -> None:
    stamps: list[float] = []
    tool = load_catalogue().get("video-convert")
    assert tool is not None
    ctx = video_context(samples / "long.mp4", tmp_path, "webm", lambda fraction: stamps.append(time.monotonic()),
                        lambda: False, crf=30)
    with MachineDelays() as machine:
        began = time.monotonic()
        tool.run(ctx)
        ended = time.monotonic()
    assert len(stamps) >= 3
    # a second between reports, not counting the time the machine held every process back
    gaps = [(b - a - machine.lost(a, b), b - a) for a, b in zip([began, *stamps], [*stamps, ended], strict=True)]
    assert max(own for own, _ in gaps) < 1.0, gaps


def test_progress_follows_what_the_encoder_wrote(samples: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """x264 with lookahead takes in seconds of frames before it writes one: a report never runs ahead of
    the video written so far (the read position reached 80 % while under 10 % was written), and the
    reports go on through the encoder's flush."""
    written = [0.0]  # seconds of video muxed so far
    mux = PacketGate.mux

    def watched(gate: PacketGate, packets: Any) -> None:
        for packet in packets:  # one by one, as they come: the encoder's flush hands them over lazily
            if packet.stream.type == "video" and packet.pts is not None and gate._waiting == 0:
                written[0] = max(written[0], float((packet.pts + (packet.duration or 0)) * packet.time_base))
            mux(gate, [packet])

    monkeypatch.setattr(PacketGate, "mux", watched)
    reports: list[tuple[float, float]] = []
    tool = load_catalogue().get("video-convert")
    assert tool is not None
    ctx = video_context(samples / "long.mp4", tmp_path, "mp4", lambda f: reports.append((f, written[0] / LONG_SECONDS)),
                        lambda: False, videoCodec="h264", preset="slow")
    tool.run(ctx)
    assert reports[-1][0] == 1.0
    during = [fraction for fraction, _ in reports[:-1]]
    assert during == sorted(during) and len(set(during)) >= 3, reports
    assert all(fraction <= done + 0.01 for fraction, done in reports[:-1]), reports


def test_cancel_during_the_encode_stops_it_at_once_and_leaves_no_file(samples: Path, tmp_path: Path) -> None:
    reports: list[float] = []
    asked_after_cancel = 0

    def cancelled() -> bool:
        # cancel once the encode has reported progress twice, then count what it still asks
        nonlocal asked_after_cancel
        if len(reports) >= 2:
            asked_after_cancel += 1
        return len(reports) >= 2

    tool = load_catalogue().get("video-convert")
    assert tool is not None
    ctx = video_context(samples / "long.mp4", tmp_path, "mkv", reports.append, cancelled, videoCodec="h265")
    with pytest.raises(Cancelled):
        tool.run(ctx)
    assert reports[-1] < 0.9, reports  # the cancel landed mid-encode
    assert asked_after_cancel == 1, f"the encode went on after the cancel and asked {asked_after_cancel} times"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("fmt", "codec"), [
    ("mp3", "mp3"), ("m4a", "aac"), ("wav", "pcm_s16le"), ("flac", "flac"), ("opus", "opus"),
])
def test_video_to_audio_extracts_the_soundtrack(samples: Path, tmp_path: Path, fmt: str, codec: str) -> None:
    run = run_tool("video-to-audio", [samples / "clip.webm"], tmp_path, output_format=fmt)
    info = probe(run.outputs[0])
    assert [s.kind for s in info.streams] == ["audio"]
    assert info.of("audio").codec == codec
    assert info.duration == pytest.approx(2.0, abs=0.1)


def test_video_to_audio_copies_aac_into_m4a(samples: Path, tmp_path: Path) -> None:
    run = run_tool("video-to-audio", [samples / "clip.mp4"], tmp_path, output_format="m4a")
    assert any("copied" in note for note in run.notes)
    assert sniff(run.outputs[0], run.outputs[0].name) == "m4a"


def test_video_to_audio_trims(samples: Path, tmp_path: Path) -> None:
    run = run_tool("video-to-audio", [samples / "clip.mp4"], tmp_path, params={"start": 1, "end": 1.5},
                   output_format="wav")
    assert probe(run.outputs[0]).duration == pytest.approx(0.5, abs=0.05)


def test_video_to_audio_without_soundtrack_fails_with_no_audio_stream(samples: Path, tmp_path: Path) -> None:
    assert error_code("video-to-audio", samples / "mute.mp4", tmp_path, "mp3") == "no_audio_stream"


def test_gif_has_the_requested_width_rate_and_length(samples: Path, tmp_path: Path) -> None:
    run = run_tool("video-to-gif", [samples / "clip.mp4"], tmp_path, params={"fps": 10, "width": 100, "start": 0.5})
    out = run.outputs[0]
    assert out.read_bytes()[:6] == b"GIF89a"
    with av.open(str(out)) as container:
        frames = list(container.decode(video=0))
    assert (frames[0].width, frames[0].height) == (100, 76)
    assert len(frames) == 15
    with Image.open(out) as image:
        assert image.info.get("loop") == 0
        total = 0
        for index in range(image.n_frames):
            image.seek(index)
            total += image.info["duration"]
    assert total == pytest.approx(1500, abs=20)


def test_gif_defaults_to_the_input_width_up_to_480(samples: Path, tmp_path: Path) -> None:
    run = run_tool("video-to-gif", [samples / "clip.mp4"], tmp_path)
    with Image.open(run.outputs[0]) as image:
        assert image.size == SIZE


@pytest.mark.parametrize(("fmt", "magic"), [("jpg", b"\xff\xd8\xff"), ("png", b"\x89PNG"), ("webp", b"RIFF")])
def test_thumbnail_formats(samples: Path, tmp_path: Path, fmt: str, magic: bytes) -> None:
    run = run_tool("video-thumbnail", [samples / "clip.mp4"], tmp_path, output_format=fmt)
    assert run.outputs[0].read_bytes().startswith(magic)
    with Image.open(run.outputs[0]) as image:
        assert image.size == SIZE


@pytest.mark.parametrize(("at", "white"), [(1.0, True), ("1.0", True), ("50%", True), (0.5, False), ("90%", False)])
def test_thumbnail_is_taken_at_the_requested_time(samples: Path, tmp_path: Path, at: object, white: bool) -> None:
    run = run_tool("video-thumbnail", [samples / "flash.mp4"], tmp_path, params={"at": at}, output_format="png")
    assert (samples_mod.mean_brightness(run.outputs[0]) > 200) is white


def test_thumbnail_past_the_end_takes_the_last_frame_and_says_so(samples: Path, tmp_path: Path) -> None:
    run = run_tool("video-thumbnail", [samples / "clip.mp4"], tmp_path, params={"at": 99}, output_format="jpg")
    assert run.outputs and any("last frame" in note for note in run.notes)


def test_thumbnail_of_rotated_video_is_upright_and_resized(samples: Path, tmp_path: Path) -> None:
    run = run_tool("video-thumbnail", [samples / "portrait.mp4"], tmp_path, params={"width": 60}, output_format="png")
    with Image.open(run.outputs[0]) as image:
        assert image.size == (60, 80)


def test_thumbnail_of_anamorphic_video_has_the_displayed_shape(samples: Path, tmp_path: Path) -> None:
    run = run_tool("video-thumbnail", [samples / "anamorphic.mp4"], tmp_path, output_format="png")
    with Image.open(run.outputs[0]) as image:
        assert image.size == (320, 120)


def test_thumbnail_rejects_a_malformed_time() -> None:
    tool = load_catalogue().get("video-thumbnail")
    assert tool is not None
    for bad in ("soon", "150%", -1):
        with pytest.raises(ValueError):
            tool.params.model_validate({"at": bad})


def test_media_info_describes_a_video(samples: Path, tmp_path: Path) -> None:
    run = run_tool("media-info", [samples / "clip.mp4"], tmp_path)
    info = json.loads(run.outputs[0].read_text())
    assert info["kind"] == "video"
    assert info["format"]["duration"] == pytest.approx(2.0, abs=0.05)
    assert info["format"]["bitRate"] > 0
    video, audio = info["streams"]
    assert (video["type"], video["codec"], video["width"], video["height"]) == ("video", "h264", *SIZE)
    assert video["frameRate"] == 15
    assert (audio["type"], audio["codec"], audio["sampleRate"], audio["channels"]) == ("audio", "aac", 44100, 2)


def test_media_info_describes_an_audio_file_and_a_rotation(samples: Path, tmp_path: Path) -> None:
    audio = json.loads(run_tool("media-info", [samples / "radio.webm"], tmp_path / "a").outputs[0].read_text())
    assert audio["kind"] == "audio"
    assert [s["codec"] for s in audio["streams"]] == ["opus"]
    portrait = json.loads(run_tool("media-info", [samples / "portrait.mp4"], tmp_path / "p").outputs[0].read_text())
    assert portrait["streams"][0]["rotation"] in (90, -90, 270)


def test_media_info_of_a_damaged_file_is_damaged_input(samples: Path, tmp_path: Path) -> None:
    assert error_code("media-info", samples / "cut.mp4", tmp_path, "json") == "damaged_input"


VIDEO_TOOLS = ["video-convert", "video-to-audio", "video-to-gif", "video-thumbnail", "media-info"]


@pytest.mark.parametrize("tool_id", VIDEO_TOOLS)
@pytest.mark.parametrize(("kind", "claimed"), [("avi", "avi"), ("mkv", "mkv"), ("m3u8", "mp4")])
def test_playlist_disguised_as_video_is_refused_and_never_read_through(
    samples: Path, tmp_path: Path, tool_id: str, kind: str, claimed: str
) -> None:
    canary = tmp_path / "canary.mp4"
    canary.write_bytes((samples / "clip.mp4").read_bytes() + b"CANARY-BYTES-7f3a")
    playlist = samples_mod.write_playlists(tmp_path, canary)[kind]
    tool = load_catalogue().get(tool_id)
    assert tool is not None
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    ctx = Context(inputs=[InputFile(playlist, claimed, playlist.name)], params=tool.params(),
                  output_format=tool.produces[0], out_dir=out_dir)
    with pytest.raises(ConversionError) as err:
        tool.run(ctx)
    assert err.value.code == "unsafe_input"
    assert list(out_dir.iterdir()) == []
