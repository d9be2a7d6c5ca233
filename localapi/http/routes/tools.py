from __future__ import annotations

import json
from collections import OrderedDict
from typing import Annotated

from fastapi import APIRouter, Query, Response

from localapi.core.errors import ToolNotFound
from localapi.http.deps import KeyDep, ServiceDep
from localapi.http.problems import problems
from localapi.http.schemas import ToolOut

router = APIRouter(prefix="/tools", tags=["tools"])

# The list as sent, by category and every tool's availability: it changes only when a switch or an
# engine does, and building it (some 70 tools, each with its params schema) costs more than the rest
# of the request.
_RENDERED: OrderedDict[tuple[object, ...], bytes] = OrderedDict()
RENDERED_KEPT = 32


@router.get("", response_model=list[ToolOut], responses=problems(401, 429))
def list_tools(service: ServiceDep, key: KeyDep,
               category: Annotated[str | None, Query(max_length=50)] = None) -> Response:
    """Every tool, or those of one category (pdf, images, audio, video, documents, ebooks, ocr, ...)."""
    tools = service.catalogue.in_category(category)
    disabled = service.switches.disabled_tools()
    statuses = [service.switches.tool_status(t, disabled) for t in tools]
    cache_key = (id(service.catalogue), category, *statuses)
    body = _RENDERED.get(cache_key)
    if body is None:
        items = [ToolOut.of(t, *status).model_dump(mode="json") for t, status in zip(tools, statuses, strict=True)]
        body = _RENDERED[cache_key] = json.dumps(items, separators=(",", ":")).encode()
        while len(_RENDERED) > RENDERED_KEPT:
            _RENDERED.popitem(last=False)
    return Response(body, media_type="application/json")


@router.get("/{id}", response_model=ToolOut, responses=problems(401, 404, 429))
def get_tool(id: str, service: ServiceDep, key: KeyDep) -> ToolOut:
    tool = service.catalogue.get(id)
    if tool is None:
        raise ToolNotFound(f"No tool {id!r}.")
    return ToolOut.of(tool, *service.switches.tool_status(tool))
