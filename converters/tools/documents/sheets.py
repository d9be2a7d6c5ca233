"""Spreadsheets to CSV without LibreOffice: xlsx through openpyxl, ods by reading its XML directly.

Both formats store each formula's last computed value, so no calculation engine is needed. Dates come out
as ISO 8601. A workbook with several sheets gives one CSV per sheet.
"""

from __future__ import annotations

import csv
import datetime
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from xml.etree import ElementTree

from converters.base import ConversionError
from converters.inputs import safexml

Row = list[str]
Sheet = tuple[str, list[Row]]

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
}
_MAX_REPEAT = 10_000  # a trailing "repeat this empty cell 16384 times" must not become 16384 commas


def cell_text(value: object) -> str:
    """How a cell value reads in CSV."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime.datetime):
        if value.time() == datetime.time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def trim(rows: list[Row]) -> list[Row]:
    """Drop trailing empty cells and trailing empty rows (spreadsheets pad both)."""
    out = []
    for row in rows:
        end = len(row)
        while end and row[end - 1] == "":
            end -= 1
        out.append(row[:end])
    while out and not out[-1]:
        out.pop()
    return out


def read_xlsx(path: Path, cancelled: Callable[[], bool]) -> list[Sheet]:
    import openpyxl

    safexml.check_archive(path)  # openpyxl parses the parts with expat, entities and all
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises a zoo of exceptions for broken files
        raise ConversionError("damaged_input", f"The workbook could not be read: {exc}") from exc
    sheets: list[Sheet] = []
    try:
        for ws in book.worksheets:
            rows: list[Row] = []
            for n, values in enumerate(ws.iter_rows(values_only=True)):
                if n % 500 == 0 and cancelled():
                    break
                rows.append([cell_text(v) for v in values])
            sheets.append((ws.title, trim(rows)))
    except MemoryError:
        raise
    except Exception as exc:  # read-only mode parses each sheet's XML only now, with the same zoo of exceptions
        raise ConversionError("damaged_input", f"The workbook could not be read: {exc}") from exc
    finally:
        book.close()
    return sheets


def _ods_cell(cell: ElementTree.Element) -> str:
    office = "{" + _NS["office"] + "}"
    kind = cell.get(f"{office}value-type")
    if kind in ("float", "percentage", "currency"):
        return cell_text(float(cell.get(f"{office}value", "0")))
    if kind == "date":
        return (cell.get(f"{office}date-value") or "").replace("T00:00:00", "").replace("T", " ")
    if kind == "boolean":
        return "TRUE" if cell.get(f"{office}boolean-value") == "true" else "FALSE"
    paragraphs = cell.findall("text:p", _NS)
    return "\n".join("".join(p.itertext()) for p in paragraphs)


def _ods_rows(table: ElementTree.Element) -> Iterator[Row]:
    """Rows of one table. Empty cells and rows are only spelled out when something follows them: spreadsheets
    pad a sheet with "repeat this empty cell 16384 times" runs."""
    tns = "{" + _NS["table"] + "}"
    empty_rows = 0
    for row in table.iter(f"{tns}table-row"):
        cells: Row = []
        empty_cells = 0
        for cell in row:
            if cell.tag not in (f"{tns}table-cell", f"{tns}covered-table-cell"):
                continue
            repeat = int(cell.get(f"{tns}number-columns-repeated", "1"))
            value = _ods_cell(cell)
            if value == "":
                empty_cells += repeat
                continue
            cells.extend([""] * min(empty_cells, _MAX_REPEAT))
            cells.extend([value] * min(repeat, _MAX_REPEAT))
            empty_cells = 0
        repeat_rows = int(row.get(f"{tns}number-rows-repeated", "1"))
        if not cells:
            empty_rows += repeat_rows
            continue
        for _ in range(min(empty_rows, _MAX_REPEAT)):
            yield []
        empty_rows = 0
        for _ in range(min(repeat_rows, _MAX_REPEAT)):
            yield list(cells)


def read_ods(path: Path) -> list[Sheet]:
    try:
        with zipfile.ZipFile(path) as zf:
            root = safexml.fromstring(zf.read("content.xml"))
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError) as exc:
        raise ConversionError("damaged_input", f"The spreadsheet could not be read: {exc}") from exc
    tns = "{" + _NS["table"] + "}"
    return [(t.get(f"{tns}name", f"Sheet{i + 1}"), trim(list(_ods_rows(t))))
            for i, t in enumerate(root.iter(f"{tns}table"))]


def write_csv(rows: list[Row], target: Path) -> None:
    """UTF-8 CSV, comma-separated, quoted where needed, CRLF line ends (RFC 4180)."""
    with open(target, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)


def read_sheets(path: Path, fmt: str, cancelled: Callable[[], bool]) -> list[Sheet]:
    """Every sheet of an xlsx or ods file, as rows of strings."""
    sheets = read_xlsx(path, cancelled) if fmt == "xlsx" else read_ods(path)
    if not sheets:
        raise ConversionError("damaged_input", "The workbook has no sheets")
    return sheets
