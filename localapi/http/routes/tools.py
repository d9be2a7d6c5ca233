from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from converters.base import Tool
from localapi.core.errors import ToolNotFound
from localapi.core.service import Service
from localapi.http.deps import KeyDep, ServiceDep
from localapi.http.problems import problems
from localapi.http.schemas import ToolOut

router = APIRouter(prefix="/tools", tags=["tools"])


def tool_out(service: Service, tool: Tool) -> ToolOut:
    available, reason = service.jobs.switches.tool_status(tool)
    return ToolOut(
        id=tool.id, category=tool.category, title=tool.title, description=tool.description,
        accepts=list(tool.accepts), produces=list(tool.produces), maxInputSizeBytes=tool.max_input_size_bytes,
        mergesInputs=tool.merges_inputs, params=tool.params.model_json_schema(by_alias=True),
        available=available, unavailableReason=reason,
    )


@router.get("", response_model=list[ToolOut], responses=problems(401, 429))
def list_tools(service: ServiceDep, key: KeyDep,
               category: Annotated[str | None, Query(max_length=50)] = None) -> list[ToolOut]:
    """Every tool, or those of one category (pdf, images, audio, video, documents, ebooks, ocr, ...)."""
    return [tool_out(service, t) for t in service.catalogue.in_category(category)]


@router.get("/{id}", response_model=ToolOut, responses=problems(401, 404, 429))
def get_tool(id: str, service: ServiceDep, key: KeyDep) -> ToolOut:
    tool = service.catalogue.get(id)
    if tool is None:
        raise ToolNotFound(f"No tool {id!r}.")
    return tool_out(service, tool)
