"""Reading tools' JSON Schemas into form fields, and checking values against them (no widgets)."""

from __future__ import annotations

from typing import Any

import pytest

from desktop.schema_fields import (
    Unparsed,
    coerce_number_or_text,
    field_text,
    fields_from_schema,
    format_time,
    humanize_name,
    json_value,
    lines_value,
    params_from_values,
    parse_time,
    time_value,
    unit_of,
    validate_value,
)
from localapi.config import load_settings
from localapi.core.service import Service


@pytest.fixture(scope="module")
def schemas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    service = Service.open(load_settings(tmp_path_factory.mktemp("data")))
    try:
        return {t.id: t.params.model_json_schema(by_alias=True) for t in service.catalogue}
    finally:
        service.close()


def by_name(schema: dict[str, Any]) -> dict[str, Any]:
    return {f.name: f for f in fields_from_schema(schema)}


def test_every_catalogue_schema_reads_without_error(schemas: dict[str, dict[str, Any]]) -> None:
    for tool_id, schema in schemas.items():
        for spec in fields_from_schema(schema):
            assert spec.kind in {"enum", "integer", "number", "boolean", "string", "pages", "multi",
                                 "number-or-text", "lines", "json", "time", "colour", "choice"}, (tool_id, spec)
            assert validate_value(spec, spec.initial) in (None, "required"), (tool_id, spec)


def test_pdf_rotate_has_an_integer_enum_and_a_page_range(schemas: dict[str, dict[str, Any]]) -> None:
    fields = by_name(schemas["pdf-rotate"])
    assert fields["angle"].kind == "enum" and fields["angle"].options == (90, 180, 270)
    assert fields["angle"].default == 90
    assert fields["pages"].kind == "pages" and fields["pages"].default == "1-"


def test_optional_numbers_are_nullable_with_their_range(schemas: dict[str, dict[str, Any]]) -> None:
    bitrate = by_name(schemas["audio-convert"])["bitrate"]
    assert bitrate.kind == "integer" and bitrate.nullable
    assert (bitrate.minimum, bitrate.maximum) == (8, 512)
    assert validate_value(bitrate, None) is None
    assert validate_value(bitrate, 4) == "must be at least 8"
    assert validate_value(bitrate, 600) == "must be at most 512"


def test_exclusive_minimum_is_kept(schemas: dict[str, dict[str, Any]]) -> None:
    fps = by_name(schemas["video-to-gif"])["fps"]
    assert fps.kind == "number" and fps.exclusive_minimum and fps.minimum == 0
    assert validate_value(fps, 0) == "must be more than 0"
    assert validate_value(fps, 0.5) is None


def test_required_secret_and_several_of_a_list(schemas: dict[str, dict[str, Any]]) -> None:
    fields = by_name(schemas["pdf-protect"])
    password = fields["userPassword"]
    assert password.required and password.secret
    assert validate_value(password, None) == "required"
    assert fields["permissions"].kind == "multi" and "print" in fields["permissions"].options


def test_page_ranges_are_validated(schemas: dict[str, dict[str, Any]]) -> None:
    pages = by_name(schemas["pdf-extract-pages"])["pages"]
    assert pages.required
    for good in ("1", "1-3,5,8-", " 2 - 4 , 7 ", "-3"):
        assert validate_value(pages, good) is None, good
    for bad in ("a", "1,,2", "1-3;5", "0x2"):
        assert validate_value(pages, bad) is not None, bad


def test_number_or_text_fields_take_either(schemas: dict[str, dict[str, Any]]) -> None:
    at = by_name(schemas["video-thumbnail"])["at"]
    assert at.kind == "number-or-text" and at.default == "10%"
    assert coerce_number_or_text("12.5") == 12.5
    assert coerce_number_or_text("3") == 3
    assert coerce_number_or_text("50%") == "50%"
    assert coerce_number_or_text(" ") is None


def test_params_hold_only_choices_that_differ_from_defaults(schemas: dict[str, dict[str, Any]]) -> None:
    specs = fields_from_schema(schemas["pdf-rotate"])
    assert params_from_values(specs, {"angle": 90, "pages": "1-"}) == {}
    assert params_from_values(specs, {"angle": 180, "pages": "2-4"}) == {"angle": 180, "pages": "2-4"}
    specs = fields_from_schema(schemas["audio-convert"])
    assert params_from_values(specs, {"bitrate": None, "channels": 1}) == {"channels": 1}


def test_humanize_name_turns_json_names_into_labels() -> None:
    assert humanize_name("sampleRate") == "Sample rate"
    assert humanize_name("imageDpi") == "Image DPI"
    assert humanize_name("targetSizeKb") == "Target size (KB)"
    assert humanize_name("pages") == "Pages"


def test_lists_of_texts_are_lines_and_records_and_maps_are_json(schemas: dict[str, dict[str, Any]]) -> None:
    redact, outline, fill = by_name(schemas["pdf-redact"]), by_name(schemas["pdf-outline"]), by_name(
        schemas["pdf-form-fill"])
    assert redact["terms"].kind == redact["patterns"].kind == "lines"
    assert redact["areas"].kind == outline["bookmarks"].kind == fill["values"].kind == "json"
    assert lines_value("  Alice \n\nBob Smith\n") == ["Alice", "Bob Smith"] and lines_value(" \n") is None
    assert json_value('[{"page": 1, "title": "A"}]') == [{"page": 1, "title": "A"}] and json_value("  ") is None
    broken = json_value('{"name": ')
    assert isinstance(broken, Unparsed) and validate_value(fill["values"], broken).startswith("not valid JSON")
    assert field_text(redact["terms"], ["Alice", "Bob"]) == "Alice\nBob"
    assert json_value(field_text(fill["values"], {"name": "Zoë"})) == {"name": "Zoë"}
    # text that is not JSON yet is never sent
    assert params_from_values([fill["values"], fill["flatten"]], {"values": broken, "flatten": True}) == {
        "flatten": True}


@pytest.mark.parametrize(("text", "seconds"), [
    ("90", 90), ("1:30", 90), ("01:30", 90), ("1:02:03.5", 3723.5), ("0:00.25", 0.25), ("-0:30", -30), ("", None),
])
def test_times_are_read_as_people_write_them(text: str, seconds: float | None) -> None:
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text", ["1:75", "1:2:3:4", "a:10", "1.5:00", "::", "1 min"])
def test_what_is_not_a_time_is_refused_in_words(text: str) -> None:
    with pytest.raises(ValueError):
        parse_time(text)
    value = time_value(text)
    assert isinstance(value, Unparsed) and value.error.startswith("not a time")


def test_times_are_shown_as_minutes_and_seconds() -> None:
    assert [format_time(s) for s in (0, 5, 90, 3723.5, -30, 59.999)] == [
        "0:00", "0:05", "1:30", "1:02:03.5", "-0:30", "0:59.999"]
    assert all(parse_time(format_time(s)) == s for s in (0, 5, 90, 3723.5, -30, 7200))


def test_units_come_from_the_schema_or_the_field_s_words() -> None:
    assert unit_of("anything", {"x-unit": "kbps", "description": "in pixels"}) == "kbps"
    assert unit_of("imageDpi", {"description": "Resample images above this resolution"}) == "dpi"
    assert unit_of("width", {"description": "Width in pixels; default the video's."}) == "px"
    assert unit_of("fps", {"description": "Frames per second of the GIF."}) == "fps"
    assert unit_of("start", {"description": "Trim: start time in seconds."}) == "s"
    assert unit_of("quality", {"description": "Quality of lossy output, 1-100."}) == ""


def test_colours_times_and_known_choices_get_their_own_kinds(schemas: dict[str, dict[str, Any]]) -> None:
    assert by_name(schemas["pdf-watermark"])["color"].kind == "colour"
    trim = by_name(schemas["audio-convert"])
    assert trim["start"].kind == "time" and trim["end"].exclusive_minimum
    assert validate_value(trim["end"], 0) == "must be more than 0"
    model = by_name(schemas["transcribe"])["model"]
    assert model.kind == "choice" and "large-v3" in model.options and model.option_label("tiny").startswith("Tiny")
    bitrate = by_name(schemas["audio-convert"])["bitrate"]
    assert (bitrate.unit, bitrate.start) == ("kbps", 128) and 320 in bitrate.common
    dpi = by_name(schemas["font-preview"])["dpi"]  # common values outside the field's range are left out
    assert dpi.common == (72, 96, 150, 300)
