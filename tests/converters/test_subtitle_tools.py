"""The subtitle tools on real files: every readable format into every writable one (read back with pysubs2),
real-world samples from pysubs2's and webvtt-py's source distributions, encodings, frame rates, shifts,
damaged files; and subtitles put into videos, read back with PyAV."""

from __future__ import annotations

import codecs
import html
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import av
import pysubs2
import pytest

from converters.base import Cancelled, Context, ConversionError, InputFile, ToolEnv
from converters.catalogue import load_catalogue
from converters.inputs.sniff import sniff
from tests.converters.media_samples import write_clip
from tests.converters.runtool import ToolRun, run_tool
from tests.samples_cache import sdist_files

INPUTS = ["srt", "vtt", "ass", "ssa", "sub", "ttml"]
OUTPUTS = ["srt", "vtt", "ass", "ssa", "sub", "ttml"]
FPS = 23.976
FRAME_MS = 1000 / FPS

# The cues every synthesized file holds: (start ms, end ms, lines). Times are whole centiseconds, so the
# formats that keep milliseconds and ASS/SSA (centiseconds) agree exactly; MicroDVD is within a frame.
CUES: list[tuple[int, int, list[str]]] = [
    (1_000, 2_500, ["Ça a été déjà vu,", "où êtes-vous ?"]),
    (3_120, 5_000, ["Grüße aus München — „schön“"]),
    (61_500, 63_990, ["¿Qué pasó, señor?"]),
    (3_725_040, 3_727_000, ["Последняя строка", "最后一行"]),
]


# --------------------------------------------------------------------------- writers, independent of the tools


def _clock(ms: int, sep: str, hours: int = 2) -> str:
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, milli = divmod(rest, 1000)
    return f"{h:0{hours}d}:{m:02d}:{s:02d}{sep}{milli:03d}"


def srt_text(cues: list[tuple[int, int, list[str]]]) -> str:
    return "".join(f"{n}\n{_clock(a, ',')} --> {_clock(b, ',')}\n" + "\n".join(lines) + "\n\n"
                   for n, (a, b, lines) in enumerate(cues, 1))


def vtt_text(cues: list[tuple[int, int, list[str]]]) -> str:
    return "WEBVTT\n\n" + "".join(f"{_clock(a, '.')} --> {_clock(b, '.')}\n" + "\n".join(lines) + "\n\n"
                                  for a, b, lines in cues)


def _ass_time(ms: int) -> str:
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    return f"{h}:{m:02d}:{rest // 1000:02d}.{rest % 1000 // 10:02d}"


def ass_text(cues: list[tuple[int, int, list[str]]], ssa: bool = False) -> str:
    if ssa:
        head = ("[Script Info]\nScriptType: v4.00\n\n[V4 Styles]\nFormat: Name, Fontname, Fontsize, PrimaryColour, "
                "SecondaryColour, TertiaryColour, BackColour, Bold, Italic, BorderStyle, Outline, Shadow, Alignment, "
                "MarginL, MarginR, MarginV, AlphaLevel, Encoding\nStyle: Default,Arial,20,16777215,255,0,0,0,0,1,2,2,"
                "2,10,10,10,0,1\n\n[Events]\nFormat: Marked, Start, End, Style, Name, MarginL, MarginR, MarginV, "
                "Effect, Text\n")
        first = "Marked=0"
    else:
        head = ("[Script Info]\nScriptType: v4.00+\nPlayResX: 384\nPlayResY: 288\n\n[V4+ Styles]\nFormat: Name, "
                "Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, "
                "Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, "
                "MarginL, MarginR, MarginV, Encoding\nStyle: Default,Arial,20,&H00FFFFFF,&H000000FF,&H00000000,"
                "&H00000000,0,0,0,0,100,100,0,0,1,2,2,2,10,10,10,1\n\n[Events]\nFormat: Layer, Start, End, Style, "
                "Name, MarginL, MarginR, MarginV, Effect, Text\n")
        first = "0"
    return head + "".join(f"Dialogue: {first},{_ass_time(a)},{_ass_time(b)},Default,,0,0,0,," + r"\N".join(lines)
                          + "\n" for a, b, lines in cues)


def microdvd_text(cues: list[tuple[int, int, list[str]]], fps: float = FPS, declare: bool = True) -> str:
    head = f"{{1}}{{1}}{fps:g}\n" if declare else ""
    return head + "".join(f"{{{round(a * fps / 1000)}}}{{{round(b * fps / 1000)}}}" + "|".join(lines) + "\n"
                          for a, b, lines in cues)


def ttml_text(cues: list[tuple[int, int, list[str]]]) -> str:
    def esc(text: str) -> str:
        return text.replace("&", "&amp;").replace("<", "&lt;")

    body = "".join(f'      <p begin="{_clock(a, ".")}" end="{_clock(b, ".")}">' + "<br/>".join(map(esc, lines))
                   + "</p>\n" for a, b, lines in cues)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<tt xmlns="http://www.w3.org/ns/ttml" xml:lang="fr">\n'
            f"  <body>\n    <div>\n{body}    </div>\n  </body>\n</tt>\n")


WRITERS: dict[str, Callable[[list[tuple[int, int, list[str]]]], str]] = {
    "srt": srt_text, "vtt": vtt_text, "ass": ass_text, "ssa": lambda c: ass_text(c, ssa=True),
    "sub": microdvd_text, "ttml": ttml_text,
}


def write_sub(path: Path, fmt: str, cues: list[tuple[int, int, list[str]]] = CUES, encoding: str = "utf-8") -> Path:
    path.write_bytes(WRITERS[fmt](cues).encode(encoding))
    return path


# --------------------------------------------------------------------------- reading back


def read_back(path: Path) -> pysubs2.SSAFile:
    """The output as pysubs2 reads it on its own (MicroDVD by the frame rate its first line declares)."""
    data = path.read_bytes()
    assert not data.startswith(b"\xef\xbb\xbf"), "outputs are UTF-8 without a BOM"
    text = data.decode("utf-8")  # every output is UTF-8
    fmt = {"sub": "microdvd"}.get(path.suffix[1:], path.suffix[1:])
    return pysubs2.SSAFile.from_string(text, format_=fmt)


def visible(subs: pysubs2.SSAFile) -> list[tuple[int, int, str]]:
    return [(e.start, e.end, e.plaintext) for e in subs.events if e.is_text]


def tolerance(*formats: str) -> float:
    return FRAME_MS + 1 if "sub" in formats else 10 if {"ass", "ssa"} & set(formats) else 1


def convert(tmp_path: Path, source: Path, fmt: str, **params: Any) -> tuple[Path, ToolRun]:
    run = run_tool("subtitle-convert", [source], tmp_path / f"out-{fmt}", params=params, output_format=fmt)
    assert len(run.outputs) == 1, run.outputs
    assert run.outputs[0].name == f"{source.stem}.{fmt}"
    return run.outputs[0], run


def run_direct(tool_id: str, files: list[tuple[Path, str]], out_dir: Path, params: dict[str, Any] | None = None,
               output_format: str | None = None, cancelled: Callable[[], bool] = lambda: False) -> ToolRun:
    """Like ``run_tool``, with each input's format given rather than sniffed (for inputs sniffing misjudges)."""
    tool = load_catalogue().get(tool_id)
    assert tool is not None
    model = tool.params.model_validate(params or {})
    inputs = [InputFile(path=path, format=fmt, name=path.name) for path, fmt in files]
    out_dir.mkdir(parents=True, exist_ok=True)
    tool.precheck(inputs, model, ToolEnv())
    ctx = Context(inputs=inputs, params=model, output_format=output_format or tool.produces[0], out_dir=out_dir,
                  cancelled=cancelled)
    tool.run(ctx)
    return ToolRun(outputs=sorted(p for p in out_dir.iterdir() if p.is_file()), notes=ctx.notes)


def refused(code: str, action: Callable[[], object]) -> ConversionError:
    with pytest.raises(ConversionError) as caught:
        action()
    assert caught.value.code == code, (caught.value.code, caught.value.message)
    assert "Traceback" not in caught.value.message and "/tmp" not in caught.value.message
    return caught.value


# --------------------------------------------------------------------------- the format matrix


@pytest.mark.parametrize("out_fmt", OUTPUTS)
@pytest.mark.parametrize("in_fmt", INPUTS)
def test_every_format_into_every_format(tmp_path: Path, in_fmt: str, out_fmt: str) -> None:
    source = write_sub(tmp_path / f"film.{in_fmt}", in_fmt)
    assert sniff(source, source.name) == in_fmt
    output, run = convert(tmp_path, source, out_fmt)
    assert sniff(output, output.name) == out_fmt, "the output is recognised as what it claims to be"
    got = visible(read_back(output))
    assert len(got) == len(CUES)
    slack = tolerance(in_fmt, out_fmt)
    for (start, end, text), (want_start, want_end, lines) in zip(got, CUES, strict=True):
        assert abs(start - want_start) <= slack and abs(end - want_end) <= slack, (start, end, want_start, want_end)
        assert text.split("\n") == lines
    assert run.progress[-1] == 1.0


def test_the_formats_listed_are_what_pysubs2_can_write() -> None:
    tool = load_catalogue().get("subtitle-convert")
    assert tool is not None and tool.category == "subtitles"
    assert set(tool.accepts) == set(INPUTS) and tool.produces[0] == "srt" and set(tool.produces) == set(OUTPUTS)


# --------------------------------------------------------------------------- real-world samples


def real_samples() -> list[tuple[Path, str]]:
    """Subtitle files from two projects' test suites: pysubs2's ASS and TTML, webvtt-py's SRT and WebVTT
    (their deliberately broken ones included), with the format each sniffs as."""
    files = sdist_files("pysubs2", "1.8.1", "*/tests/data/*.ass", "*/tests/data/*.ttml")
    files += sdist_files("webvtt-py", "0.6.0", "*/tests/samples/*.srt", "*/tests/samples/*.vtt")
    samples = [(path, str(sniff(path, path.name))) for path in files]
    assert all(fmt == "ttml" for path, fmt in samples if path.suffix == ".ttml"), samples
    return samples


def test_real_world_samples_convert_to_every_format(tmp_path: Path) -> None:
    converted = broken = 0
    for index, (path, fmt) in enumerate(real_samples()):
        if fmt not in INPUTS:  # an empty file: nothing to sniff, refused at upload (415)
            assert path.stat().st_size < 10, path.name
            continue
        deliberately_broken = path.name.startswith(("invalid", "missing"))
        direct = pysubs2.SSAFile.from_string(
            path.read_bytes().decode("utf-8-sig").replace("\r\n", "\n"), format_=fmt) if fmt != "ttml" \
            else pysubs2.load(str(path))
        expected = visible(direct)
        for out_fmt in OUTPUTS:
            out_dir = tmp_path / f"{index}-{out_fmt}"
            try:
                run = run_direct("subtitle-convert", [(path, fmt)], out_dir, output_format=out_fmt)
            except ConversionError as exc:
                # the deliberately broken samples, and pysubs2's ASS of fonts with no events
                assert exc.code in ("no_text", "damaged_input"), (path.name, exc.code, exc.message)
                assert not expected or deliberately_broken, (path.name, exc.message)
                assert not list(out_dir.iterdir())
                broken += 1
                continue
            got = visible(read_back(run.outputs[0]))
            if out_fmt == "vtt":  # a WebVTT reader resolves character references; pysubs2 leaves them
                got = [(a, b, html.unescape(t)) for a, b, t in got]
            if deliberately_broken:  # what FileKiln makes of them is checked below, one by one
                broken += 1
                continue
            assert len(got) == len(expected), (path.name, out_fmt)
            slack = tolerance(fmt, out_fmt)
            for (start, end, text), (want_start, want_end, want_text) in zip(got, expected, strict=True):
                assert abs(start - want_start) <= slack and abs(end - want_end) <= slack, (path.name, out_fmt)
                # WebVTT is read without cue identifiers, NOTE blocks and inline timestamps, which pysubs2
                # alone takes for text: every word FileKiln kept is one pysubs2 found.
                if fmt == "vtt":
                    assert set(text.split()) <= set(html.unescape(re.sub(r"<[^>]*>", " ", want_text)).split())
                else:
                    assert text.split() == want_text.split(), (path.name, out_fmt, text, want_text)
            converted += 1
    assert converted >= 25 * len(OUTPUTS), converted  # 25-odd valid real files, each into six formats
    assert broken >= 10 * len(OUTPUTS), broken


@pytest.mark.parametrize(("name", "texts"), [
    # a timing line with a colon before the milliseconds is repaired (pysubs2 alone merges it into cue 1)
    ("invalid_timeframe.srt", [f"Caption text #{n}" for n in range(1, 6)]),
    # a cue without its timing line cannot be placed: its text stays with the cue before, as pysubs2 reads it
    ("missing_timeframe.srt", ["Caption text #1 2 Caption text #2", "Caption text #3", "Caption text #4",
                               "Caption text #5"]),
    ("missing_caption_text.srt", ["Caption text #1", "", "Caption text #3", "Caption text #4", "Caption text #5"]),
])
def test_real_broken_srt_samples(tmp_path: Path, name: str, texts: list[str]) -> None:
    path = next(p for p, _ in real_samples() if p.name == name)
    output, _ = convert(tmp_path, path, "srt")
    assert [" ".join(t.split()) for _, _, t in visible(read_back(output))] == texts


def test_real_vtt_cue_identifiers_notes_and_karaoke_timestamps_are_not_text(tmp_path: Path) -> None:
    samples = {path.name: path for path, _ in real_samples()}
    output, _ = convert(tmp_path, samples["using_identifiers.vtt"], "srt")
    assert [text for _, _, text in visible(read_back(output))][:2] == ["Caption text #1", "Caption text #2"]
    output, _ = convert(tmp_path / "yt", samples["youtube_dl.vtt"], "srt")
    texts = [text for _, _, text in visible(read_back(output))]
    assert "this will happen is I'm telling" in [" ".join(t.split()) for t in texts]
    assert not any(re.search(r"\d\d:\d\d", t) for t in texts), texts
    output, _ = convert(tmp_path / "notes", samples["comments.vtt"], "srt")
    assert not any("NOTE" in t or "comment" in t.lower() for _, _, t in visible(read_back(output)))


def test_real_ass_with_embedded_fonts_keeps_them_in_ass_output(tmp_path: Path) -> None:
    source = sdist_files("pysubs2", "1.8.1", "*/tests/data/subtitle_with_attached_fonts_aegisub.ass")[0]
    output, _ = convert(tmp_path, source, "ass")
    back = read_back(output)
    assert back.fonts_opaque == pysubs2.load(str(source)).fonts_opaque and len(back.fonts_opaque) == 2


# --------------------------------------------------------------------------- encodings


def test_legacy_cp1252_srt_becomes_utf8(tmp_path: Path) -> None:
    source = write_sub(tmp_path / "legacy.srt", "srt", CUES[:3], encoding="cp1252")
    with pytest.raises(UnicodeDecodeError):
        source.read_bytes().decode("utf-8")
    assert sniff(source, source.name) == "srt"
    for fmt in ("srt", "vtt", "ass"):
        output, run = convert(tmp_path / fmt, source, fmt)
        assert [t.split("\n") for _, _, t in visible(read_back(output))] == [lines for _, _, lines in CUES[:3]]
        assert any("cp1252" in note for note in run.notes), run.notes


@pytest.mark.parametrize(("encoding", "lines"), [
    ("cp1250", ["Zażółć gęślą jaźń, proszę pana.", "Nie wiem, co się stało."]),
    ("cp1251", ["Привет, как дела?", "Всё хорошо, спасибо."]),
    ("cp1253", ["Καλημέρα, τι κάνεις;"]),
    ("cp1254", ["Günaydın, nasılsın? İyiyim, teşekkürler."]),
    ("shift_jis", ["こんにちは、お元気ですか？"]),
])
def test_other_legacy_encodings_are_guessed(tmp_path: Path, encoding: str, lines: list[str]) -> None:
    cues = [(1000 * n, 1000 * n + 900, lines) for n in range(1, 6)]
    source = write_sub(tmp_path / "legacy.srt", "srt", cues, encoding=encoding)
    output, run = convert(tmp_path, source, "srt")
    assert [t.split("\n") for _, _, t in visible(read_back(output))] == [lines] * 5, run.notes


@pytest.mark.parametrize(("bom", "encoding"), [
    (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
])
def test_byte_order_marks_decide(tmp_path: Path, bom: bytes, encoding: str) -> None:
    source = tmp_path / "bom.srt"
    source.write_bytes(bom + srt_text(CUES).encode(encoding))
    # UTF-16/32 files are not sniffed as subtitles (their zero bytes read as binary): format given here
    run = run_direct("subtitle-convert", [(source, "srt")], tmp_path / "out", output_format="vtt")
    assert [t.split("\n") for _, _, t in visible(read_back(run.outputs[0]))] == [lines for _, _, lines in CUES]
    assert not any("guess" in note for note in run.notes)


def test_a_named_encoding_is_used_and_a_wrong_one_refused(tmp_path: Path) -> None:
    source = write_sub(tmp_path / "greek.srt", "srt", [(1000, 2000, ["Ωραία μέρα"])], encoding="iso8859_7")
    output, _ = convert(tmp_path, source, "srt", encoding="iso-8859-7")
    assert visible(read_back(output))[0][2] == "Ωραία μέρα"
    refused("invalid_params", lambda: convert(tmp_path / "wrong", source, "srt", encoding="utf-8"))
    refused("invalid_params", lambda: convert(tmp_path / "puny", source, "srt", encoding="punycode"))
    assert not list((tmp_path / "wrong" / "out-srt").iterdir())


@pytest.mark.parametrize("name", ["rot13", "hex", "zlib", "no-such-codec", "undefined", ""])
def test_encoding_names_that_are_not_text_codecs_are_refused(name: str) -> None:
    tool = load_catalogue().get("subtitle-convert")
    assert tool is not None
    with pytest.raises(ValueError):
        tool.params.model_validate({"encoding": name})
    assert tool.params.model_validate({"encoding": "Latin1"}).encoding == "iso8859-1"  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- frame rates, shift, styling


def test_microdvd_times_follow_the_frame_rate(tmp_path: Path) -> None:
    source = tmp_path / "film.sub"
    source.write_text("{25}{50}One second at 25 fps\n{250}{300}Ten|seconds\n")
    output, _ = convert(tmp_path, source, "srt", fps=25)
    assert [(a, b) for a, b, _ in visible(read_back(output))] == [(1000, 2000), (10000, 12000)]
    output, _ = convert(tmp_path / "default", source, "srt")  # 23.976 when nothing says otherwise
    assert visible(read_back(output))[0][:2] == (round(25 * FRAME_MS), round(50 * FRAME_MS))


def test_microdvd_declared_rate_is_used_unless_fps_is_given(tmp_path: Path) -> None:
    source = tmp_path / "declared.sub"
    source.write_text("{1}{1}25\n{25}{50}Hello\n")
    output, _ = convert(tmp_path, source, "srt")
    got = visible(read_back(output))
    assert [(a, b, t) for a, b, t in got] == [(1000, 2000, "Hello")], "the declaration is no subtitle"
    output, run = convert(tmp_path / "forced", source, "srt", fps=50)
    assert visible(read_back(output))[0][:2] == (500, 1000)
    assert any("declares 25 fps" in note for note in run.notes)
    output, _ = convert(tmp_path / "same", source, "sub")  # MicroDVD out keeps the input's frames and rate
    assert output.read_text().splitlines() == ["{1}{1}25", "{25}{50}Hello"]


def test_microdvd_output_uses_fps(tmp_path: Path) -> None:
    source = write_sub(tmp_path / "film.srt", "srt", [(1000, 2000, ["a"]), (10_000, 12_000, ["b"])])
    output, _ = convert(tmp_path, source, "sub", fps=25)
    assert output.read_text().splitlines() == ["{1}{1}25", "{25}{50}a", "{250}{300}b"]


def test_shift_moves_every_time(tmp_path: Path) -> None:
    source = write_sub(tmp_path / "film.srt", "srt")
    output, _ = convert(tmp_path, source, "srt", shift=2.5)
    assert [(a, b) for a, b, _ in visible(read_back(output))] == [(a + 2500, b + 2500) for a, b, _ in CUES]
    output, run = convert(tmp_path / "back", source, "vtt", shift=-3.5)
    got = visible(read_back(output))
    # the first cue (1.0-2.5 s) ends before 0 and goes; the second (3.12-5.0 s) starts at 0
    assert [(a, b) for a, b, _ in got] == [(0, 1500), (58_000, 60_490), (3_721_540, 3_723_500)]
    assert any("dropped" in note for note in run.notes) and any("clamped" in note for note in run.notes)


def test_styling_is_kept_or_dropped(tmp_path: Path) -> None:
    source = tmp_path / "styled.ass"
    source.write_text(ass_text([(1000, 2000, [r"{\i1}Slanted{\i0} and {\b1}bold{\b0} {\pos(10,10)}here"])]))
    output, _ = convert(tmp_path, source, "srt")
    assert output.read_text().splitlines()[2] == "<i>Slanted</i> and <b>bold</b> here"
    output, _ = convert(tmp_path / "plain", source, "srt", keepStyling=False)
    assert output.read_text().splitlines()[2] == "Slanted and bold here"
    output, _ = convert(tmp_path / "plain-ass", source, "ass", keepStyling=False)
    assert read_back(output).events[0].text == "Slanted and bold here"
    output, _ = convert(tmp_path / "vtt", source, "vtt")
    assert "<i>Slanted</i> and <b>bold</b> here" in output.read_text()


def test_srt_bold_survives_srt_to_srt_and_vtt_text_is_escaped(tmp_path: Path) -> None:
    source = tmp_path / "tags.srt"
    source.write_text("1\n00:00:01,000 --> 00:00:02,000\n<b>Tom & Jerry</b> say 1 < 2\n\n")
    output, _ = convert(tmp_path, source, "srt")
    assert output.read_text().splitlines()[2] == "<b>Tom & Jerry</b> say 1 < 2"
    output, _ = convert(tmp_path / "vtt", source, "vtt")
    assert output.read_text().splitlines()[3] == "<b>Tom &amp; Jerry</b> say 1 &lt; 2"
    back, _ = convert(tmp_path / "again", output, "srt")  # FileKiln's WebVTT reader resolves the references
    assert back.read_text().splitlines()[2] == "<b>Tom & Jerry</b> say 1 < 2"


# --------------------------------------------------------------------------- TTML


def test_ttml_ticks_frames_dur_nested_divs_and_the_old_dfxp_namespace(tmp_path: Path) -> None:
    source = tmp_path / "broadcast.ttml"
    source.write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<tt xmlns="http://www.w3.org/2006/10/ttaf1" xmlns:ttp="http://www.w3.org/2006/10/ttaf1#parameter" '
        'ttp:tickRate="10000000" ttp:frameRate="25">\n<body><div begin="10s">\n'
        '  <p begin="10000000t" end="20000000t">ticks</p>\n'
        '  <div begin="00:00:05:00"><p begin="00:00:01:12" dur="2s">frames &amp; dur</p></div>\n'
        '  <p begin="1s">no end: skipped</p>\n'
        "</div></body></tt>\n")
    # DFXP's old namespace has no "ttml" in it, and sniffing names the file xml: format given here
    run = run_direct("subtitle-convert", [(source, "ttml")], tmp_path / "out")
    assert visible(read_back(run.outputs[0])) == [(11_000, 12_000, "ticks"), (16_480, 18_480, "frames & dur")]
    assert any("without an end" in note for note in run.notes)


def test_ttml_entity_declarations_are_refused(tmp_path: Path) -> None:
    source = tmp_path / "laughs.ttml"
    source.write_text('<?xml version="1.0"?>\n<!DOCTYPE tt [<!ENTITY a "aaaaaaaaaa">]>\n'
                      '<tt xmlns="http://www.w3.org/ns/ttml"><body><div><p begin="1s" end="2s">&a;</p></div></body>'
                      "</tt>\n")
    refused("unsafe_input", lambda: convert(tmp_path, source, "srt"))


# --------------------------------------------------------------------------- damaged and hostile inputs


@pytest.mark.parametrize(("name", "content", "code"), [
    ("bad-time.ass", ass_text([(1000, 2000, ["x"])]).replace("0:00:01.00", "garbage"), "damaged_input"),
    ("hours.ass", ass_text([(1000, 2000, ["x"])]).replace("0:00:02.00", "999:00:00.00"), "damaged_input"),
    ("cut.ttml", ttml_text(CUES)[:200], "damaged_input"),
    ("endless.ttml", ttml_text(CUES).replace('begin="00:00:01.000"', f'begin="{"9" * 400}s"'), "damaged_input"),
    ("rate.ttml", ttml_text(CUES).replace('xml:lang="fr"', 'xmlns:ttp="http://www.w3.org/ns/ttml#parameter" '
                                          'ttp:frameRate="abc"'), "damaged_input"),
    ("notttml.ttml", '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><tt/></svg>', None),
    ("empty.vtt", "WEBVTT\n\nNOTE nothing here\n", "no_text"),
    ("seq.ttml", ttml_text(CUES).replace("<div>", '<div timeContainer="seq">'), "unsupported_format"),
])
def test_damaged_files_fail_cleanly(tmp_path: Path, name: str, content: str, code: str | None) -> None:
    source = tmp_path / name
    source.write_text(content)
    fmt = sniff(source, source.name)
    if code is None:  # not sniffed as a subtitle at all: the API refuses it at upload
        assert fmt not in INPUTS
        return
    refused(code, lambda: convert(tmp_path, source, "srt"))
    assert not list((tmp_path / "out-srt").iterdir()), "a failed conversion leaves nothing"


def test_absurd_times_are_clamped_not_fatal(tmp_path: Path) -> None:
    source = tmp_path / "absurd.ass"
    source.write_text(ass_text([(1000, 2000, ["ok"]), (359_999_990, 359_999_990, ["late"])]).replace(
        "Dialogue: 0,0:00:01.00,", "Dialogue: 0,-0:00:05.00,"))
    for fmt in OUTPUTS:
        output, run = convert(tmp_path / fmt, source, fmt, shift=5)
        got = visible(read_back(output))
        assert [t for _, _, t in got] == ["ok", "late"]
        assert got[0][0] == 0 and abs(got[0][1] - 7000) <= tolerance(fmt)
        limit = 10 * 3_600_000 if fmt in ("ass", "ssa") else 100 * 3_600_000  # ASS/SSA write one digit of hours
        assert limit - 1000 < got[1][1] <= limit + tolerance(fmt), fmt
        assert any("clamped" in note for note in run.notes)


def test_size_and_event_limits_are_checked_before_parsing(tmp_path: Path) -> None:
    many = tmp_path / "many.sub"
    many.write_text("".join(f"{{{n}}}{{{n + 1}}}a\n" for n in range(250_000)))
    assert many.stat().st_size < 20_000_000
    refused("input_too_large", lambda: convert(tmp_path, many, "srt"))
    big = tmp_path / "big.srt"
    big.write_bytes(srt_text(CUES[:1]).encode() + b"x" * 21_000_000)
    refused("input_too_large", lambda: convert(tmp_path / "big", big, "srt"))


def test_cancel_stops_the_conversion_and_leaves_nothing(tmp_path: Path) -> None:
    source = write_sub(tmp_path / "film.srt", "srt")
    out = tmp_path / "out"
    with pytest.raises(Cancelled):
        run_tool("subtitle-convert", [source], out, output_format="vtt", cancelled=lambda: True)
    assert not list(out.iterdir())


# --------------------------------------------------------------------------- video-add-subtitles


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("subtitle-clips")
    write_clip(folder / "clip.mp4", "mp4", seconds=3.0)
    write_clip(folder / "clip.webm", "webm", seconds=3.0)
    write_clip(folder / "clip.mkv", "mkv", seconds=3.0)
    write_clip(folder / "radio.webm", "webm", video=False)
    return folder


VIDEO_CUES = [(200, 1200, ["First line", "two rows"]), (1500, 2500, ["Ça marche — déjà !"])]


def video_packets(path: Path) -> tuple[str, int]:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return stream.codec.canonical_name, sum(1 for p in container.demux(stream) if p.size)


def subtitle_track(path: Path) -> tuple[Any, list[tuple[int, int, str]]]:
    """The output's one new subtitle stream and its cues: (start ms, end ms, decoded ASS text) per packet."""
    with av.open(str(path)) as container:
        stream = container.streams.subtitles[-1]
        cues = []
        for packet in container.demux(stream):
            if not packet.size:
                continue
            for sub in stream.decode(packet):
                text = sub.ass.decode().split(",", 8)[8]
                start = round(float(packet.pts * packet.time_base) * 1000)
                cues.append((start, start + round(float(packet.duration * packet.time_base) * 1000), text))
        info = {"codec": stream.codec.canonical_name, "language": stream.language,
                "title": stream.metadata.get("title") or stream.metadata.get("name"),
                "default": bool(stream.disposition & av.stream.Disposition.default),
                "extradata": stream.codec_context.extradata or b""}
        return info, [c for c in cues if c[2]]


def first_video_ms(path: Path) -> int:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return min(round(float(p.pts * p.time_base) * 1000) for p in container.demux(stream) if p.pts is not None)


def plain_text(ass: str) -> str:
    return re.sub(r"\{[^}]*\}", "", ass).replace(r"\N", "\n")


@pytest.mark.parametrize(("clip", "output", "codec"), [
    ("clip.mp4", "mkv", "subrip"), ("clip.mp4", "mp4", "mov_text"), ("clip.webm", "webm", "webvtt"),
    ("clip.mkv", "mkv", "subrip"), ("clip.webm", "mkv", "subrip"),
])
def test_srt_goes_in_as_a_soft_track_and_the_video_is_copied(tmp_path: Path, clips: Path, clip: str, output: str,
                                                              codec: str) -> None:
    subtitles = write_sub(tmp_path / "film.srt", "srt", VIDEO_CUES)
    run = run_tool("video-add-subtitles", [clips / clip, subtitles], tmp_path / "out", output_format=output,
                   params={"language": "FRE", "title": "Français", "default": True})
    assert [p.name for p in run.outputs] == [f"clip.{output}"]
    result = run.outputs[0]
    assert sniff(result, result.name) == output
    assert video_packets(result) == video_packets(clips / clip), "the video is copied packet for packet"
    info, cues = subtitle_track(result)
    assert info["codec"] == codec and info["language"] == "fre" and info["title"] == "Français" and info["default"]
    offset = first_video_ms(result) - first_video_ms(clips / clip)  # a muxer may move the whole file
    assert [(a - offset, b - offset, plain_text(t).split("\n")) for a, b, t in cues] == \
        [(a, b, lines) for a, b, lines in VIDEO_CUES]
    with av.open(str(clips / clip)) as source, av.open(str(result)) as made:
        assert len(made.streams.audio) == len(source.streams.audio)


def test_ass_keeps_its_styles_in_mkv_and_its_fonts_become_attachments(tmp_path: Path, clips: Path) -> None:
    source = sdist_files("pysubs2", "1.8.1", "*/tests/data/subtitle_with_attached_fonts_aegisub.ass")[0]
    fonts = {p.name: p.read_bytes() for p in sdist_files("pysubs2", "1.8.1", "*/tests/data/*.ttf")}
    run = run_tool("video-add-subtitles", [clips / "clip.mp4", source], tmp_path / "out")
    info, cues = subtitle_track(run.outputs[0])
    assert info["codec"] == "ass" and b"[V4+ Styles]" in info["extradata"]
    assert [plain_text(t) for _, _, t in cues] == ["Test subtitle."]
    with av.open(str(run.outputs[0])) as made:
        attached = {s.name: bytes(s.data) for s in made.streams if s.type == "attachment"}
    assert sorted(attached.values()) == sorted(fonts.values()), "the decoded fonts are the real font files"
    assert all(name.endswith(".ttf") for name in attached)
    run = run_tool("video-add-subtitles", [clips / "clip.mp4", source], tmp_path / "mp4", output_format="mp4")
    assert any("fonts" in note for note in run.notes)


def test_ass_styling_reaches_mov_text(tmp_path: Path, clips: Path) -> None:
    source = tmp_path / "styled.ass"
    source.write_text(ass_text([(500, 1500, [r"{\i1}Slanted{\i0} plain"])]))
    run = run_tool("video-add-subtitles", [clips / "clip.mp4", source], tmp_path / "out", output_format="mp4")
    _, cues = subtitle_track(run.outputs[0])
    assert [plain_text(t) for _, _, t in cues] == ["Slanted plain"] and r"\i1" in cues[0][2]


def test_overlapping_cues_become_consecutive_mp4_samples(tmp_path: Path, clips: Path) -> None:
    subtitles = write_sub(tmp_path / "overlap.srt", "srt", [(200, 1200, ["A"]), (700, 1700, ["B"])])
    run = run_tool("video-add-subtitles", [clips / "clip.mp4", subtitles], tmp_path / "out", output_format="mp4")
    _, cues = subtitle_track(run.outputs[0])
    offset = cues[0][0] - 200
    assert [(a - offset, b - offset, plain_text(t)) for a, b, t in cues] == \
        [(200, 700, "A"), (700, 1200, "A\nB"), (1200, 1700, "B")]
    run = run_tool("video-add-subtitles", [clips / "clip.mp4", subtitles], tmp_path / "mkv")
    assert [plain_text(t) for _, _, t in subtitle_track(run.outputs[0])[1]] == ["A", "B"], "MKV keeps them as they are"


@pytest.mark.parametrize("fmt", ["vtt", "ass", "ssa", "sub", "ttml"])
def test_every_subtitle_format_can_go_into_a_video(tmp_path: Path, clips: Path, fmt: str) -> None:
    subtitles = write_sub(tmp_path / f"film.{fmt}", fmt, VIDEO_CUES)
    run = run_tool("video-add-subtitles", [clips / "clip.mkv", subtitles], tmp_path / "out")
    info, cues = subtitle_track(run.outputs[0])
    assert info["codec"] == ("ass" if fmt in ("ass", "ssa") else "subrip")
    assert [plain_text(t).split("\n") for _, _, t in cues] == [lines for _, _, lines in VIDEO_CUES]


def test_an_existing_subtitle_track_stays(tmp_path: Path, clips: Path) -> None:
    first = run_tool("video-add-subtitles", [clips / "clip.mkv", write_sub(tmp_path / "en.srt", "srt", VIDEO_CUES)],
                     tmp_path / "one", params={"language": "eng", "default": True}).outputs[0]
    second = run_tool("video-add-subtitles", [first, write_sub(tmp_path / "fr.srt", "srt", VIDEO_CUES[:1])],
                      tmp_path / "two", params={"language": "fre", "default": True}).outputs[0]
    with av.open(str(second)) as made:
        tracks = [(s.language, bool(s.disposition & av.stream.Disposition.default)) for s in made.streams.subtitles]
    assert tracks == [("eng", False), ("fre", True)], "the new default track takes the flag from the old one"


def test_codecs_the_container_cannot_hold_are_refused(tmp_path: Path, clips: Path) -> None:
    subtitles = write_sub(tmp_path / "film.srt", "srt", VIDEO_CUES)
    out = tmp_path / "out"
    error = refused("unsupported_conversion", lambda: run_tool("video-add-subtitles", [clips / "clip.mp4", subtitles],
                                                               out, output_format="webm"))
    assert "h264" in error.message
    assert not list(out.iterdir())


def test_wrong_inputs_are_refused(tmp_path: Path, clips: Path) -> None:
    subtitles = write_sub(tmp_path / "film.srt", "srt", VIDEO_CUES)
    refused("invalid_params", lambda: run_tool("video-add-subtitles", [subtitles, clips / "clip.mp4"], tmp_path / "a"))
    refused("invalid_params", lambda: run_tool("video-add-subtitles", [subtitles, subtitles], tmp_path / "b"))
    refused("no_video_stream", lambda: run_tool("video-add-subtitles", [clips / "radio.webm", subtitles],
                                                tmp_path / "c"))
    assert not list((tmp_path / "c").iterdir())


def test_language_must_be_three_letters() -> None:
    tool = load_catalogue().get("video-add-subtitles")
    assert tool is not None
    for bad in ("en", "english", "e1g", ""):
        with pytest.raises(ValueError):
            tool.params.model_validate({"language": bad})


def test_cancel_during_the_remux_leaves_nothing(tmp_path: Path, clips: Path) -> None:
    subtitles = write_sub(tmp_path / "film.srt", "srt", VIDEO_CUES)
    calls: list[int] = []

    def cancel_later() -> bool:
        calls.append(1)
        return len(calls) > 3

    out = tmp_path / "out"
    with pytest.raises(Cancelled):
        run_tool("video-add-subtitles", [clips / "clip.mp4", subtitles], out, cancelled=cancel_later)
    assert not list(out.iterdir())
