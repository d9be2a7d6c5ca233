"""The audio and video containers beyond the common ones: each sniffed from its bytes, opened through the
demuxer allow-list, and converted — files made here with PyAV's own muxers, and real ones from mutagen's
test suite (its source distribution)."""

from __future__ import annotations

from pathlib import Path

import av
import pytest

from converters.base import ConversionError
from converters.catalogue import load_catalogue
from converters.engines.media.container import demuxer_allowed, open_input
from converters.inputs.sniff import sniff
from tests.converters import media_samples as samples_mod
from tests.converters.media_samples import probe
from tests.converters.runtool import run_tool
from tests.samples_cache import sdist_files

# format made here -> (sniffed id, FFmpeg demuxer)
AUDIO = {"amr": ("amr", "amr"), "ac3": ("ac3", "ac3"), "eac3": ("eac3", "eac3"), "wv": ("wv", "wv"),
         "caf": ("caf", "caf")}
VIDEO = {"ts": ("ts", "mpegts"), "m2ts": ("ts", "mpegts"), "mxf": ("mxf", "mxf"), "dv": ("dv", "dv"),
         "h264": ("h264", "h264"), "hevc": ("hevc", "hevc")}
# mutagen's test files: name pattern -> sniffed id
REAL = {"*.ape": "ape", "*.wv": "wv", "*.ac3": "ac3", "*.eac3": "eac3", "*.oggtheora": "ogv", "*.m4b": "mp4"}


def made_audio(folder: Path, fmt: str) -> Path:
    return samples_mod.write_audio(folder / f"tone.{fmt}", fmt, channels=1 if fmt == "amr" else 2)


def made_clip(folder: Path, fmt: str) -> Path:
    if fmt in ("dv", "mxf"):  # broadcast formats: PAL frames only
        return samples_mod.write_clip(folder / f"clip.{fmt}", fmt, seconds=1.0, size=(720, 576), fps=25)
    return samples_mod.write_clip(folder / f"clip.{fmt}", fmt, seconds=1.0, audio=fmt not in ("h264", "hevc"))


def real_files() -> list[tuple[Path, str]]:
    return [(path, fmt) for pattern, fmt in REAL.items()
            for path in sdist_files("mutagen", "1.47.0", f"*/tests/data/{pattern}")]


@pytest.mark.parametrize("fmt", sorted(AUDIO))
def test_audio_containers_are_sniffed_and_convert(tmp_path: Path, fmt: str) -> None:
    source = made_audio(tmp_path, fmt)
    sniffed, demuxer = AUDIO[fmt]
    assert sniff(source, "upload") == sniffed
    with open_input(source) as container:
        assert demuxer_allowed(container.format.name) and demuxer in container.format.name.split(",")
    output = run_tool("audio-convert", [source], tmp_path / "out", output_format="flac").outputs[0]
    info = probe(output)
    assert info.of("audio").codec == "flac" and abs(info.duration - 2.0) < 0.1


@pytest.mark.parametrize("fmt", sorted(VIDEO))
def test_video_containers_and_elementary_streams_are_sniffed_and_convert(tmp_path: Path, fmt: str) -> None:
    source = made_clip(tmp_path, fmt)
    sniffed, demuxer = VIDEO[fmt]
    assert sniff(source, "upload") == sniffed
    with open_input(source) as container:
        assert demuxer in container.format.name.split(",")
    output = run_tool("video-convert", [source], tmp_path / "out", output_format="mp4").outputs[0]
    info = probe(output)
    assert info.of("video").codec == "h264" and info.count("video") == 1
    assert info.count("audio") == (0 if fmt in ("h264", "hevc") else 1)
    assert abs(info.duration - 1.0) < 0.25


def test_real_world_files_from_mutagens_suite_are_sniffed_and_read(tmp_path: Path) -> None:
    files = real_files()
    assert len(files) >= 12
    info_tool = load_catalogue().get("media-info")
    assert info_tool is not None
    converted = 0
    for number, (path, fmt) in enumerate(files):
        assert sniff(path, path.name) == fmt, path.name
        assert fmt in info_tool.accepts
        out = tmp_path / str(number)
        try:
            if fmt == "ogv":  # Theora video: to MP4
                [output] = run_tool("video-convert", [path], out, output_format="mp4").outputs
                assert probe(output).of("video").codec == "h264"
            else:
                [output] = run_tool("audio-convert", [path], out, output_format="wav").outputs
                assert probe(output).of("audio").codec.startswith("pcm_s")
        except ConversionError as exc:  # mutagen keeps header-only files to test its tag parsing
            assert exc.code in ("damaged_input", "empty_media", "no_audio_stream"), (path.name, exc)
            continue
        converted += 1
    assert converted >= len(files) // 2, f"{converted} of {len(files)} converted"


def test_a_dts_stream_is_known_and_its_demuxer_allowed() -> None:
    # PyAV's wheel has no DTS encoder to make a sample with; the sync word and the demuxer are what
    # FileKiln adds (FFmpeg's own decoder does the rest, as for every other format)
    assert demuxer_allowed("dts")
    from converters.inputs.sniff import sniff_bytes

    assert sniff_bytes(b"\x7f\xfe\x80\x01" + bytes(60)) == "dts"


def test_text_with_a_g_every_188_characters_is_not_a_transport_stream(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(("G" + "x" * 186 + "\n") * 40, encoding="ascii")
    assert sniff(path, path.name) == "txt"


@pytest.mark.parametrize("fmt", ["m4a", "mp3", "opus"])
def test_an_audiobooks_chapters_are_kept(tmp_path: Path, fmt: str) -> None:
    book = samples_mod.write_audiobook(tmp_path / "book.m4b")
    assert sniff(book, book.name) == "m4a"
    [out] = run_tool("audio-convert", [book], tmp_path / "out", output_format=fmt).outputs
    kept = samples_mod.chapters(out)
    assert [title for _, _, title in kept] == ["Part 1", "Part 2", "Part 3"]
    assert [start for start, _, _ in kept] == [0.0, 2.0, 4.0]


def test_a_trim_moves_and_cuts_the_chapters(tmp_path: Path) -> None:
    book = samples_mod.write_audiobook(tmp_path / "book.m4b")
    [out] = run_tool("audio-convert", [book], tmp_path / "out", output_format="m4a",
                     params={"start": 1, "end": 3.5}).outputs
    assert samples_mod.chapters(out) == [(0.0, 1.0, "Part 1"), (1.0, 2.5, "Part 2")]


def test_a_videos_chapters_are_kept(tmp_path: Path) -> None:
    book = samples_mod.write_audiobook(tmp_path / "book.m4b")
    clip = samples_mod.write_clip(tmp_path / "clip.mp4", "mp4", seconds=6.0)
    with av.open(str(book)) as source:
        marks = source.chapters()
    with av.open(str(clip)) as source, av.open(str(tmp_path / "marked.mkv"), "w") as out:
        streams = {s: out.add_stream_from_template(s) for s in source.streams}
        out.set_chapters(marks)
        for packet in source.demux():
            if packet.dts is not None:
                packet.stream = streams[packet.stream]
                out.mux(packet)
    [out_path] = run_tool("video-convert", [tmp_path / "marked.mkv"], tmp_path / "out", output_format="mp4").outputs
    assert [title for _, _, title in samples_mod.chapters(out_path)] == ["Part 1", "Part 2", "Part 3"]
