"""One catalogue of error codes (``localapi.core.codes``): the API docs list exactly its codes, every code
the service and the tools give out is in it, and the desktop shows its sentence instead of the code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import localapi.core.errors as errors
from desktop.controllers.errors import describe_service_error
from desktop.models.jobs import JobRow
from localapi.core.codes import CODES
from localapi.core.errors import ServiceError
from localapi.core.states import JobStatus

ROOT = Path(__file__).resolve().parents[2]
API_DOC = ROOT / "docs" / "api.md"
CODE_WORD = re.compile(r"`([a-z]+(?:_[a-z]+)+|[a-z]+)`")


def doc_table(header: str) -> list[list[str]]:
    """The cells of the markdown table in docs/api.md that starts with ``header``."""
    lines = API_DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index(header)
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def test_the_api_docs_list_each_status_with_exactly_the_catalogues_codes() -> None:
    documented = {int(status): set(CODE_WORD.findall(codes))
                  for status, codes, _ in doc_table("| status | codes | when |")}
    expected: dict[int, set[str]] = {}
    for code, entry in CODES.items():
        for status in entry.statuses:
            expected.setdefault(status, set()).add(code)
    assert documented == expected


def test_the_api_docs_list_every_job_error_code_with_the_catalogues_words() -> None:
    documented = {CODE_WORD.fullmatch(code)[1]: (title, text)  # type: ignore[index]
                  for code, title, text in doc_table("| errorCode | title | what it means |")}
    expected = {code: (entry.title, entry.text) for code, entry in CODES.items() if entry.job}
    table = "\n".join(f"| `{c}` | {title} | {text} |" for c, (title, text) in expected.items())
    assert documented == expected, f"the table in docs/api.md should read:\n{table}"


def test_the_api_docs_name_the_model_download_codes() -> None:
    line = next(line for line in API_DOC.read_text(encoding="utf-8").splitlines()
                if line.startswith("Model downloads"))
    assert set(CODE_WORD.findall(line)) - {"filekiln models download"} == {
        code for code, entry in CODES.items() if not entry.statuses and not entry.job}


def codes_in_source() -> dict[str, str]:
    """Every error code written as a literal where an error is raised or a job is failed, in localapi/ and
    converters/: code -> where. A code given out without an entry in the catalogue would reach people as
    a bare word."""
    defaults = {name: cls.code for name, cls in vars(errors).items()
                if isinstance(cls, type) and issubclass(cls, ServiceError) and cls is not ServiceError}
    found: dict[str, str] = {}

    def note(node: ast.AST | None, where: str) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.setdefault(node.value, where)
        elif isinstance(node, ast.IfExp):
            note(node.body, where)
            note(node.orelse, where)

    for path in [*(ROOT / "localapi").rglob("*.py"), *(ROOT / "converters").rglob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                keywords = {k.arg: k.value for k in node.keywords}
                if "code" in keywords:
                    note(keywords["code"], where)
                elif name in defaults:
                    found.setdefault(defaults[name], where)
                if name == "ConversionError" and node.args:
                    note(node.args[0], where)
                elif name == "Outcome" and len(node.args) > 1:
                    note(node.args[1], where)
                elif name == "_finish" and len(node.args) > 2:
                    note(node.args[2], where)
                elif name == "problem_response" and len(node.args) > 1:
                    note(node.args[1], where)
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "code" or
                                                       isinstance(t, ast.Attribute) and t.attr == "code"
                                                       for t in node.targets):
                note(node.value, where)
    return found


def strings_in_source() -> set[str]:
    return {node.value for path in [*(ROOT / "localapi").rglob("*.py"), *(ROOT / "converters").rglob("*.py")]
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def test_every_code_the_service_and_the_tools_give_out_is_in_the_catalogue() -> None:
    found = codes_in_source()
    assert len(found) > 40, "the scan of the sources found too little to be trusted"
    missing = {code: where for code, where in found.items() if code not in CODES}
    assert not missing, f"add these to localapi/core/codes.py (and docs/api.md): {missing}"


def test_every_code_in_the_catalogue_is_given_out_somewhere() -> None:
    given_out = strings_in_source()
    assert not [code for code in CODES if code not in given_out], "codes nothing gives out any more"


@pytest.mark.parametrize("code", [c for c, e in CODES.items() if e.job])
def test_a_failed_job_reads_as_the_catalogues_sentence(code: str) -> None:
    row = JobRow("j", "pdf-compress", "Compress PDF", "a.pdf", "This app", JobStatus.FAILED, 5, 1.0,
                 error_code=code, error_message="the engine's own words")
    assert row.friendly_error == CODES[code].text and row.status_label == f"Failed: {CODES[code].text}"
    assert code in row.error_details and "the engine's own words" in row.error_details


@pytest.mark.parametrize("code", [c for c, e in CODES.items() if e.statuses])
def test_a_refused_request_reads_as_the_catalogues_sentence_or_its_detail(code: str) -> None:
    text, details = describe_service_error(ServiceError("what the service said", code=code))
    # for these two the service's detail names the field or the file, which the general sentence cannot
    assert text == ("what the service said" if code in ("invalid_params", "unsupported_format")
                    else CODES[code].text)
    assert details.startswith(f"{code}: what the service said")


def test_a_code_the_catalogue_does_not_know_shows_the_message() -> None:
    row = JobRow("j", "pdf-compress", "Compress PDF", "a.pdf", "This app", JobStatus.FAILED, 5, 1.0,
                 error_code="brand_new_code", error_message="what the engine said")
    assert row.friendly_error == "what the engine said"
