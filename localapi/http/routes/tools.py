from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from localapi.core.errors import ToolNotFound
from localapi.http.deps import KeyDep, ServiceDep
from localapi.http.problems import problems
from localapi.http.schemas import ToolOut

router = APIRouter(prefix="/tools", tags=["tools"])


@router.get("", response_model=list[ToolOut], responses=problems(401, 429))
def list_tools(service: ServiceDep, key: KeyDep,
               category: Annotated[str | None, Query(max_length=50)] = None) -> list[ToolOut]:
    """Every tool, or those of one category (pdf, images, audio, video, documents, ebooks, ocr, ...)."""
    return [ToolOut.of(t, *service.switches.tool_status(t)) for t in service.catalogue.in_category(category)]


@router.get("/{id}", response_model=ToolOut, responses=problems(401, 404, 429))
def get_tool(id: str, service: ServiceDep, key: KeyDep) -> ToolOut:
    tool = service.catalogue.get(id)
    if tool is None:
        raise ToolNotFound(f"No tool {id!r}.")
    return ToolOut.of(tool, *service.switches.tool_status(tool))
