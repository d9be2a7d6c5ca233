"""Everything that can be said about a job before it runs: the tool, its params, its inputs.

Shared by job creation (:class:`~localapi.core.jobs.service.JobService`) and the CLI's local
``convert``, so a job is refused for the same reasons, in the same words, wherever it comes from.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from converters.base import ConversionError, InputFile, Params, Tool, ToolEnv
from converters.catalogue import Catalogue
from converters.inputs.safety import check_input
from localapi.core.errors import FileTooLarge, InvalidParams, Unavailable, UnsupportedFormat
from localapi.core.switches import Switches


def check_request(catalogue: Catalogue, switches: Switches, tool_id: str, params: dict[str, Any] | None,
                  output_format: str | None, input_count: int,
                  disabled: set[str] | None = None) -> tuple[Tool, Params, str]:
    """The tool, its validated params and the output format; raises a ServiceError naming what is wrong.
    ``disabled``: the disabled tools, when the caller has read them already."""
    tool = catalogue.get(tool_id)
    if tool is None:
        raise InvalidParams(f"Unknown tool {tool_id!r}.", code="unknown_tool",
                            errors={"tool": [f"unknown tool {tool_id!r}; see GET /tools"]})
    if tool.id in (switches.disabled_tools() if disabled is None else disabled):
        raise Unavailable(f"The tool {tool.id} is disabled.", code="tool_disabled", headers={"Retry-After": "60"})
    reason = switches.unavailable_reason(tool)
    if reason is not None:
        raise Unavailable(reason, code="tool_unavailable", headers={"Retry-After": "3600"})
    try:
        model = tool.params.model_validate(params or {})
    except ValidationError as exc:
        raise InvalidParams("The params are not valid for this tool.", errors=validation_errors(exc)) from None
    fmt = output_format or tool.produces[0]
    if fmt not in tool.produces:
        raise InvalidParams(f"{tool.id} cannot produce {fmt!r}.", errors={
            "outputFormat": [f"must be one of {', '.join(tool.produces)}"]})
    if input_count == 0:
        raise InvalidParams("Give at least one input file.", errors={"inputFileIds": ["must not be empty"]})
    if input_count > tool.max_inputs:
        raise InvalidParams(f"At most {tool.max_inputs} inputs.", errors={
            "inputFileIds": [f"at most {tool.max_inputs} files"]})
    return tool, model, fmt


def check_input_file(tool: Tool, name: str, fmt: str | None, size: int) -> None:
    """One input's size and sniffed format against what the tool takes."""
    if size > tool.max_input_size_bytes:
        raise FileTooLarge(f"{name} is larger than {tool.id}'s limit of {tool.max_input_size_bytes} bytes.")
    if fmt not in tool.accepts:
        raise UnsupportedFormat(f"{name} is {fmt or 'of an unknown type'} (judged by its content); "
                                f"{tool.id} accepts {', '.join(tool.accepts)}.")


def precheck(tool: Tool, model: BaseModel, inputs: Sequence[InputFile], env: ToolEnv,
             data_dir: Path | None = None) -> None:
    """The input safety checks and the tool's own cheap checks (page ranges, pixel limits ...).

    The error names inputs by their names, never by where they are stored (``data_dir`` is elided).
    """
    try:
        for item in inputs:
            check_input(item.path, item.format)
        tool.precheck(inputs, model, env)
    except ConversionError as exc:
        names = {str(item.path): item.name for item in inputs}
        message = exc.message
        for path, name in names.items():
            message = message.replace(path, name)
        if data_dir is not None:
            message = message.replace(str(data_dir), "…")
        raise InvalidParams(message, code=exc.code) from None


def validation_errors(exc: ValidationError) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "params"
        errors.setdefault(f"params.{loc}" if loc != "params" else loc, []).append(err["msg"])
    return errors
