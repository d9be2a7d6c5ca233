# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""PDF forms: ``pdf-form-fields`` reads the fields and their values as JSON, ``pdf-form-fill`` fills them.

A field is known by its full name; radio buttons sharing a name are one field whose value is the
chosen button's state name. The JSON ``pdf-form-fields`` writes is what ``pdf-form-fill`` reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field

from converters.base import CamelParams, Context, ConversionError, InputFile, NoParams
from converters.engines.mupdf import save_pdf
from converters.tools.pdf.common import PdfTool, stem_of
from converters.tools.pdf.structure import MAX_JSON_BYTES, PdfAndJson, write_json

if TYPE_CHECKING:
    import pymupdf

READ_ONLY, REQUIRED = 1, 2  # field flag bits (PDF 32000-1, table 221)
MAX_FIELDS = 10_000
Value = str | bool | list[str] | None


@dataclass
class FormField:
    """One field: all the widgets (page placements) that share its name."""

    name: str
    kind: str
    widgets: list[pymupdf.Widget] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)
    held: list[pymupdf.Page] = field(default_factory=list)  # a widget holds its page only weakly

    @property
    def flags(self) -> int:
        return int(self.widgets[0].field_flags or 0)

    def options(self) -> list[str] | None:
        first = self.widgets[0]
        if self.kind in ("ComboBox", "ListBox"):
            return [choice if isinstance(choice, str) else str(choice[0]) for choice in first.choice_values or []]
        if self.kind in ("CheckBox", "RadioButton"):
            states = {str(w.on_state()) for w in self.widgets if w.on_state() not in (None, False)}
            return sorted(states)
        return None

    def value(self) -> Value:
        if self.kind == "RadioButton":
            chosen = [w for w in self.widgets if w.field_value not in (False, "Off", None, "")]
            return str(chosen[0].on_state()) if chosen else None
        if self.kind == "CheckBox":
            return self.widgets[0].field_value not in (False, "Off", None, "")
        value = self.widgets[0].field_value
        if isinstance(value, (list, tuple)):
            return [str(item) for item in value]
        return None if value in (None, "") else str(value)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name, "type": self.kind, "value": self.value(), "options": self.options(),
            "label": self.widgets[0].field_label or None, "pages": sorted(set(self.pages)),
            "readOnly": bool(self.flags & READ_ONLY), "required": bool(self.flags & REQUIRED),
        }


def form_fields(doc: pymupdf.Document) -> dict[str, FormField]:
    """The document's fields by name, in page order."""
    fields: dict[str, FormField] = {}
    for page in doc.pages():
        for widget in page.widgets():
            entry = fields.setdefault(widget.field_name or f"(unnamed {widget.xref})",
                                      FormField(widget.field_name, widget.field_type_string))
            entry.widgets.append(widget)
            entry.pages.append(page.number + 1)
            entry.held.append(page)
            if len(fields) > MAX_FIELDS:
                raise ConversionError("input_too_large", f"The form has more than {MAX_FIELDS:,} fields.")
    return fields


class PdfFormFields(PdfTool):
    """List a PDF form's fields with their types, values and choices, as JSON."""

    id = "pdf-form-fields"
    title = "Read PDF form"
    description = "List the fields of a PDF form as JSON: name, type, current value, choices, page, required."
    produces = ("json",)
    params = NoParams

    def run(self, ctx: Context) -> None:
        for done, source in enumerate(ctx.inputs, start=1):
            doc = self.open_checked(ctx, source)
            try:
                report = {"fields": [entry.describe() for entry in form_fields(doc).values()]}
            finally:
                doc.close()
            write_json(ctx.output_path(f"{stem_of(source)}-fields", "json"), report)
            ctx.progress(done / len(ctx.inputs))


# --------------------------------------------------------------------------- pdf-form-fill


class FillParams(CamelParams):
    values: dict[str, Value] = Field(
        default_factory=dict, max_length=MAX_FIELDS,
        description="Field name -> value: text for text fields, true/false for check boxes, the chosen state "
        "for radio buttons, one of the options for lists (a list of them for multi-select lists). A JSON file "
        "as a second input may hold them instead: the output of pdf-form-fields, or a plain object.",
    )
    flatten: bool = Field(False, description="Burn the filled values into the pages so they can no longer be "
                                             "edited.")
    ignore_unknown: bool = Field(False, description="Skip names the form does not have instead of refusing the job.")


def values_from_file(source: InputFile) -> dict[str, Value]:
    if source.path.stat().st_size > MAX_JSON_BYTES:
        raise ConversionError("input_too_large", f"{source.name} is larger than form values need.")
    try:
        data = json.loads(source.path.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConversionError("invalid_params", f"{source.name} is not JSON: {exc}.") from None
    if isinstance(data, dict) and isinstance(data.get("fields"), list):  # pdf-form-fields' own report
        data = {entry.get("name"): entry.get("value") for entry in data["fields"] if isinstance(entry, dict)}
    if not isinstance(data, dict):
        raise ConversionError("invalid_params", f"{source.name} must hold an object of field names and values.")
    try:
        return FillParams.model_validate({"values": data}).values
    except ValueError:
        raise ConversionError("invalid_params", f"{source.name}: each value must be text, true/false, a list of "
                                                "texts or null.") from None


def fill(entry: FormField, value: Value) -> None:
    """Set one field's value, or refuse it in words naming the field."""
    def refuse(why: str) -> ConversionError:
        return ConversionError("invalid_params", f"Field {entry.name!r} ({entry.kind}): {why}")

    if entry.flags & READ_ONLY:
        if value == entry.value():  # pdf-form-fields' report sent back as it was
            return
        raise refuse("it is read-only.")
    options = entry.options()
    if entry.kind == "CheckBox":
        if not isinstance(value, bool) and value not in (options or []) and value is not None:
            raise refuse(f"give true or false, not {value!r}.")
        on = bool(value)
        for widget in entry.widgets:
            widget.field_value = widget.on_state() if on else "Off"
            widget.update()
    elif entry.kind == "RadioButton":
        if value is not None and value not in (options or []):
            raise refuse(f"choose one of {options}, not {value!r}.")
        for widget in entry.widgets:
            widget.field_value = value is not None and widget.on_state() == value
            widget.update()
    elif entry.kind in ("Text", "ComboBox", "ListBox"):
        if isinstance(value, bool):
            raise refuse("give text, not true/false.")
        chosen = value if isinstance(value, list) else [] if value is None else [value]
        if entry.kind == "Text" and isinstance(value, list):
            raise refuse("give text, not a list.")
        if entry.kind == "ListBox" or (entry.kind == "ComboBox" and not entry.flags & (1 << 18)):  # 19: Edit
            unknown = [item for item in chosen if item not in (options or [])]
            if unknown:
                raise refuse(f"{unknown[0]!r} is not one of its options {options}.")
        for widget in entry.widgets:
            widget.field_value = value if isinstance(value, list) else ("" if value is None else value)
            widget.update()
    else:
        raise refuse("FileKiln fills text fields, check boxes, radio buttons and lists, not this kind.")


class PdfFormFill(PdfAndJson):
    """Fill a PDF form's fields from params or a JSON file, optionally flattening the result."""

    id = "pdf-form-fill"
    title = "Fill PDF form"
    description = (
        "Fill the fields of a PDF form from the params or from a JSON file given as a second input; "
        "optionally flatten the result so it can no longer be edited."
    )
    params = FillParams
    json_holds = "the values"

    def run(self, ctx: Context) -> None:
        params: FillParams = ctx.params
        self.precheck(ctx.inputs, params, ctx.env)
        values = {**(values_from_file(ctx.inputs[1]) if len(ctx.inputs) == 2 else {}), **params.values}
        doc = self.open_checked(ctx, ctx.inputs[0])
        try:
            fields = form_fields(doc)
            if not fields:
                raise ConversionError("no_form_fields", f"{ctx.inputs[0].name} has no form fields to fill.")
            unknown = sorted(name for name in values if name not in fields)
            if unknown and not params.ignore_unknown:
                raise ConversionError("invalid_params", f"The form has no field named {unknown[0]!r}"
                                      + (f" (nor {len(unknown) - 1} other names)" if len(unknown) > 1 else "")
                                      + "; pdf-form-fields lists the names.")
            for done, (name, value) in enumerate(values.items(), start=1):
                if name in fields:
                    fill(fields[name], value)
                if done % 100 == 0:
                    ctx.check_cancelled()
                    ctx.progress(0.8 * done / len(values))
            if params.flatten:
                doc.bake(annots=False, widgets=True)
            ctx.progress(0.9)
            save_pdf(doc, ctx.output_path(stem_of(ctx.inputs[0]), "pdf"))
        finally:
            doc.close()
        ctx.progress(1.0)
