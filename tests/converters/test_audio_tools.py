"""audio-convert on real files: every input format x every output format, then the params, error codes and safety."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
from pydantic import ValidationError

from converters.base import Cancelled, Context, ConversionError, InputFile, ToolEnv
from converters.catalogue import load_catalogue
from converters.engines.media.container import demuxer_allowed
from converters.engines.media.lame import system_library
from converters.inputs.sniff import sniff
from tests.converters import media_samples as samples_mod
from tests.converters.media_samples import probe
from tests.converters.runtool import cancel_midway, run_tool

INPUTS = ["mp3", "wav", "flac", "ogg", "opus", "m4a", "aac", "aiff", "wma", "webm"]
OUTPUTS = ["mp3", "m4a", "opus", "ogg", "flac", "wav"]
# What an independent reader should find in each output: sniffed format id and codec.
EXPECTED = {
    "mp3": ("mp3", "mp3"), "m4a": ("m4a", "aac"), "opus": ("opus", "opus"),
    "ogg": ("opus", "opus"), "flac": ("flac", "flac"), "wav": ("wav", "pcm_s16le"),
}
INPUT_CODEC = {
    "mp3": "mp3", "wav": "pcm_s16le", "flac": "flac", "ogg": "vorbis", "opus": "opus", "m4a": "aac",
    "aac": "aac", "aiff": "pcm_s16be", "wma": "wmav2", "webm": "opus",
}
DEFAULT_KBPS = {"mp3": 192, "m4a": 192, "opus": 128, "ogg": 128}


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Read-only inputs shared by the module; every test writes its outputs under its own tmp_path."""
    folder = tmp_path_factory.mktemp("audio-samples")
    for fmt in INPUTS:
        samples_mod.write_audio(folder / f"tone.{fmt}", fmt)
    samples_mod.write_audio(folder / "quiet.wav", "wav", amplitude=0.02)
    samples_mod.write_audio(folder / "click.wav", "wav", amplitude=0.02, click=True)
    samples_mod.write_audio(folder / "long.wav", "wav", seconds=60.0)
    samples_mod.write_clip(folder / "silent-film.mp4", "mp4", audio=False)
    samples_mod.write_empty_wav(folder / "empty.wav")
    samples_mod.write_truncated(folder / "tone.m4a", folder / "cut.m4a", keep=0.3)
    return folder


def convert(source: Path, out_dir: Path, fmt: str, **params: object) -> Path:
    run = run_tool("audio-convert", [source], out_dir, params=params, output_format=fmt)
    assert len(run.outputs) == 1
    return run.outputs[0]


def run_direct(tool_id: str, path: Path, claimed: str, out_dir: Path, fmt: str) -> None:
    """Run a tool on ``path`` as if sniffing had said ``claimed`` (the case of a sniffer fooled)."""
    tool = load_catalogue().get(tool_id)
    assert tool is not None
    out_dir.mkdir(parents=True, exist_ok=True)
    source = InputFile(path, claimed, path.name)
    ctx = Context(inputs=[source], params=tool.params(), output_format=fmt, out_dir=out_dir)
    tool.run(ctx)


@pytest.mark.parametrize("out_fmt", OUTPUTS)
@pytest.mark.parametrize("in_fmt", INPUTS)
def test_every_input_converts_to_every_output(samples: Path, tmp_path: Path, in_fmt: str, out_fmt: str) -> None:
    source = samples / f"tone.{in_fmt}"
    assert sniff(source, source.name) in load_catalogue().get("audio-convert").accepts  # type: ignore[union-attr]
    out = convert(source, tmp_path, out_fmt)
    sniffed, codec = EXPECTED[out_fmt]
    assert sniff(out, out.name) == sniffed
    info = probe(out)
    assert [s.kind for s in info.streams] == ["audio"]
    assert info.of("audio").codec == codec
    assert info.duration == pytest.approx(probe(source).duration, abs=0.1)
    assert info.of("audio").channels == 2


@pytest.mark.parametrize("fmt", ["mp3", "m4a", "opus", "ogg"])
def test_default_bitrate_is_used_for_lossy_outputs(samples: Path, tmp_path: Path, fmt: str) -> None:
    out = convert(samples / "tone.wav", tmp_path, fmt)
    assert probe(out).of("audio").bitrate == pytest.approx(DEFAULT_KBPS[fmt] * 1000, rel=0.1)


@pytest.mark.parametrize(("fmt", "kbps"), [("mp3", 128), ("mp3", 320), ("m4a", 96), ("opus", 64), ("ogg", 160)])
def test_requested_bitrate_is_honoured(samples: Path, tmp_path: Path, fmt: str, kbps: int) -> None:
    out = convert(samples / "tone.flac", tmp_path, fmt, bitrate=kbps)
    assert probe(out).of("audio").bitrate == pytest.approx(kbps * 1000, rel=0.1)


def test_sample_rate_and_channels_are_applied(samples: Path, tmp_path: Path) -> None:
    out = convert(samples / "tone.wav", tmp_path, "mp3", sampleRate=22050, channels=1)
    stream = probe(out).of("audio")
    assert (stream.rate, stream.channels) == (22050, 1)


def test_opus_input_at_44100_becomes_48000(samples: Path, tmp_path: Path) -> None:
    out = convert(samples / "tone.wav", tmp_path, "opus")
    assert probe(out).of("audio").rate == 48000


@pytest.mark.parametrize("fmt", ["mp3", "m4a", "flac", "opus"])
def test_trim_keeps_only_the_requested_span(samples: Path, tmp_path: Path, fmt: str) -> None:
    out = convert(samples / "tone.wav", tmp_path, fmt, start=0.5, end=1.5)
    assert probe(out).duration == pytest.approx(1.0, abs=0.1)


def test_trim_end_past_the_media_means_to_the_end(samples: Path, tmp_path: Path) -> None:
    out = convert(samples / "tone.wav", tmp_path, "flac", start=1.0, end=30)
    assert probe(out).duration == pytest.approx(1.0, abs=0.05)


def decoded(path: Path) -> np.ndarray:
    """Every sample a player gets from ``path``, as float32 (channels x samples), encoder delay and padding skipped."""
    planar = av.AudioResampler(format="fltp")
    with av.open(str(path)) as container:
        frames = [g.to_ndarray() for f in container.decode(audio=0) for g in planar.resample(f)]
    return np.concatenate(frames, axis=1)


@pytest.mark.parametrize("encoder", ["system", "lameenc"])
@pytest.mark.parametrize(("params", "rate", "channels"), [
    ({}, 44100, 2),  # s16 stereo at the output rate: straight to LAME
    ({"sampleRate": 22050, "channels": 1, "bitrate": 64}, 22050, 1),  # MPEG-2 layer III: 576-sample frames
    ({"start": 0.25, "end": 1.5}, 44100, 2),
    ({"normalize": True}, 44100, 2),
])
def test_mp3_is_gapless_and_sounds_like_the_input(samples: Path, tmp_path: Path, params: dict[str, object],
                                                  rate: int, channels: int, encoder: str) -> None:
    if encoder == "system" and system_library() is None:
        pytest.skip("no libmp3lame on this system (Debian: apt-get install libmp3lame0)")
    source = samples / "tone.wav"
    run = run_tool("audio-convert", [source], tmp_path, params=params, output_format="mp3",
                   env=ToolEnv(models_dir=tmp_path / "models", settings={"mp3_encoder": encoder}))
    out = run.outputs[0]
    got = decoded(out)
    start, end = float(params.get("start", 0.0)), float(params.get("end", 2.0))  # type: ignore[arg-type]
    # The LAME header records encoder delay and padding, so players return exactly the input's samples ...
    assert got.shape == (channels, round((end - start) * rate))
    # ... in place: the decoded music lines up with the source sample for sample. (LAME's low-pass leaves a
    # relative error of about 0.2 here, as with the ffmpeg CLI; shifted by the encoder delay it would be over 1.)
    reference = decoded(convert(source, tmp_path / "ref", "wav", **params))
    if params.get("normalize"):  # compare the shape, not the level
        got, reference = got / np.sqrt(np.mean(got**2)), reference / np.sqrt(np.mean(reference**2))
    error = np.sqrt(np.mean((got - reference) ** 2)) / np.sqrt(np.mean(reference**2))
    assert error < 0.35, f"relative RMS error {error:.3f}"
    with open(out, "rb") as f:
        head = f.read(4096)
    info = head.find(b"Info")  # the CBR LAME header FFmpeg's muxer writes
    assert info > 0
    delay_padding = int.from_bytes(head[info + 141 : info + 144], "big")
    assert delay_padding >> 12 == 576  # LAME's encoder delay


def test_mp3_encoder_falls_back_to_the_wheel_without_a_system_lame(monkeypatch: pytest.MonkeyPatch) -> None:
    from converters.engines.media import lame

    monkeypatch.setattr(lame, "system_library", lambda: None)
    assert lame.open_encoder(44100, 2, 192).name == "lameenc"
    with pytest.raises(ConversionError) as caught:
        lame.open_encoder(44100, 2, 192, "system")
    assert caught.value.code == "engine_missing"


def test_normalize_brings_quiet_audio_to_minus_16_lufs(samples: Path, tmp_path: Path) -> None:
    assert samples_mod.loudness(samples / "quiet.wav") < -35
    run = run_tool("audio-convert", [samples / "quiet.wav"], tmp_path, params={"normalize": True}, output_format="m4a")
    assert samples_mod.loudness(run.outputs[0]) == pytest.approx(-16.0, abs=1.0)
    assert any("LUFS" in note for note in run.notes)


def test_normalize_stops_short_of_clipping_peaks_and_says_so(samples: Path, tmp_path: Path) -> None:
    run = run_tool("audio-convert", [samples / "click.wav"], tmp_path, params={"normalize": True}, output_format="wav")
    assert samples_mod.peak(run.outputs[0]) <= 0.9  # -1 dBTP is 0.891
    assert samples_mod.peak(run.outputs[0]) > 0.85
    assert any("peaks would have clipped" in note for note in run.notes)


def test_same_codec_without_changes_is_copied_not_reencoded(samples: Path, tmp_path: Path) -> None:
    run = run_tool("audio-convert", [samples / "tone.mp3"], tmp_path, output_format="mp3")
    assert any("copied" in note for note in run.notes)
    # The input's 128 kbps stays: a re-encode would have used the 192 kbps default.
    assert probe(run.outputs[0]).of("audio").bitrate == pytest.approx(128_000, rel=0.05)


def test_lossless_output_notes_that_bitrate_does_not_apply(samples: Path, tmp_path: Path) -> None:
    run = run_tool("audio-convert", [samples / "tone.mp3"], tmp_path, params={"bitrate": 128}, output_format="flac")
    assert any("lossless" in note for note in run.notes)


def test_audio_of_a_video_file_is_converted(samples: Path, tmp_path: Path) -> None:
    clip = samples_mod.write_clip(tmp_path / "clip.mp4", "mp4")
    out = convert(clip, tmp_path / "out", "mp3")
    assert [s.kind for s in probe(out).streams] == ["audio"]


def test_progress_rises_to_one(samples: Path, tmp_path: Path) -> None:
    run = run_tool("audio-convert", [samples / "long.wav"], tmp_path, output_format="mp3")
    assert run.progress[-1] == 1.0
    assert run.progress == sorted(run.progress)
    assert len(run.progress) >= 2


def test_cancel_stops_the_encode_quickly_and_leaves_no_file(samples: Path, tmp_path: Path) -> None:
    took, raised = cancel_midway("audio-convert", [samples / "long.wav"], tmp_path, after=0.4,
                                 params={"normalize": True}, output_format="mp3")
    assert took < 2.0 and isinstance(raised, Cancelled)
    assert list(tmp_path.iterdir()) == []


def test_unsupported_sample_rate_for_opus_is_invalid_params(samples: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as err:
        convert(samples / "tone.wav", tmp_path, "opus", sampleRate=44100)
    assert err.value.code == "invalid_params"


def test_more_than_two_channels_in_mp3_is_invalid_params(samples: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as err:
        convert(samples / "tone.wav", tmp_path, "mp3", channels=6)
    assert err.value.code == "invalid_params"


def test_end_before_start_is_rejected_by_the_params_model() -> None:
    tool = load_catalogue().get("audio-convert")
    assert tool is not None
    with pytest.raises(ValidationError):
        tool.params.model_validate({"start": 2, "end": 1})


def test_params_use_camel_case_names_in_the_schema() -> None:
    tool = load_catalogue().get("audio-convert")
    assert tool is not None
    assert {"bitrate", "sampleRate", "channels", "start", "end", "normalize"} == set(
        tool.params.model_json_schema()["properties"]
    )


def test_start_past_the_end_is_invalid_trim(samples: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as err:
        convert(samples / "tone.wav", tmp_path, "mp3", start=10)
    assert err.value.code == "invalid_trim"


def test_file_without_audio_fails_with_no_audio_stream(samples: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as err:
        convert(samples / "silent-film.mp4", tmp_path, "mp3")
    assert err.value.code == "no_audio_stream"
    assert list(tmp_path.iterdir()) == []


def test_wav_without_samples_fails_with_empty_media(samples: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as err:
        convert(samples / "empty.wav", tmp_path, "mp3")
    assert err.value.code == "empty_media"
    assert list(tmp_path.iterdir()) == []


def test_truncated_file_fails_with_damaged_input(samples: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as err:
        convert(samples / "cut.m4a", tmp_path, "mp3")
    assert err.value.code == "damaged_input"


def test_playlists_are_not_accepted_by_any_media_tool(tmp_path: Path) -> None:
    playlists = samples_mod.write_playlists(tmp_path, tmp_path / "canary.wav")
    assert sniff(playlists["m3u8"], "list.m3u8") == "m3u8"
    assert sniff(playlists["ffconcat"], "list.ffconcat") == "ffconcat"
    for tool in load_catalogue():
        if tool.category in ("audio", "video"):
            assert not {"m3u8", "ffconcat"} & set(tool.accepts), tool.id


@pytest.mark.parametrize(("kind", "claimed"), [("m3u8", "mp3"), ("ffconcat", "wav"), ("avi", "m4a"), ("mkv", "ogg")])
def test_playlist_posing_as_audio_is_refused_and_never_read_through(
    samples: Path, tmp_path: Path, kind: str, claimed: str
) -> None:
    canary = samples_mod.write_audio(tmp_path / "canary.wav", "wav", seconds=0.5)
    playlist = samples_mod.write_playlists(tmp_path, canary)[kind]
    out_dir = tmp_path / "out"
    with pytest.raises(ConversionError) as err:
        run_direct("audio-convert", playlist, claimed, out_dir, "wav")
    assert err.value.code == "unsafe_input"
    assert list(out_dir.iterdir()) == []


def test_demuxers_that_open_other_files_are_off_the_allow_list() -> None:
    for name in ("hls", "concat", "dash", "image2", "sdp", "rtsp", "tee", "lavfi", "applehttp"):
        assert not demuxer_allowed(name), name
    assert demuxer_allowed("mov,mp4,m4a,3gp,3g2,mj2")
    assert demuxer_allowed("matroska,webm")


def test_container_off_the_allow_list_is_refused_by_ffmpeg(tmp_path: Path) -> None:
    # An SDP file makes FFmpeg open RTP sockets; no text-playlist check catches it, the format allow-list does.
    sdp = tmp_path / "stream.mp3"
    sdp.write_text("v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nt=0 0\nm=audio 5004 RTP/AVP 0\n")
    assert "sdp" in av.formats_available
    with pytest.raises(ConversionError) as err:
        run_direct("audio-convert", sdp, "mp3", tmp_path / "out", "wav")
    assert err.value.code == "unsafe_input"
