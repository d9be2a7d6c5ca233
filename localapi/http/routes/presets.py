"""Presets: named lists of steps, usable as ``preset`` in POST /jobs (one step) and POST /workflows."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from localapi.core.service import Service
from localapi.core.workflows.records import Preset, StepSpec
from localapi.http.deps import KeyDep, ServiceDep
from localapi.http.problems import problems
from localapi.http.schemas import PresetIn, PresetListOut, PresetOut, PresetUpdate, StepIn

router = APIRouter(prefix="/presets", tags=["presets"])

PresetName = Annotated[str, Path(description="The preset's name", max_length=80)]


def save(service: Service, name: str, description: str, steps: list[StepIn], replace: bool, key_id: str) -> Preset:
    specs = [StepSpec(s.tool, s.params or {}, s.outputFormat) for s in steps]
    return service.workflows.save_preset(name, specs, description, replace=replace, key_id=key_id)


@router.get("", response_model=PresetListOut, responses=problems(401, 429))
def list_presets(service: ServiceDep, key: KeyDep) -> PresetListOut:
    """The built-in presets, then the saved ones by name. Presets are shared by the whole install: every
    key reads and uses them all, and changes or deletes only those it made."""
    return PresetListOut(items=[PresetOut.of(p) for p in service.presets.all()])


@router.post("", status_code=201, response_model=PresetOut, responses=problems(400, 401, 409, 422, 429, 503))
def create_preset(body: PresetIn, service: ServiceDep, key: KeyDep) -> PresetOut:
    """Save a new preset; a name in use is 409 ``preset_exists`` (PUT replaces one)."""
    return PresetOut.of(save(service, body.name, body.description, body.steps, replace=False, key_id=key.id))


@router.get("/{name}", response_model=PresetOut, responses=problems(401, 404, 429))
def get_preset(name: PresetName, service: ServiceDep, key: KeyDep) -> PresetOut:
    return PresetOut.of(service.presets.get(name))


@router.put("/{name}", response_model=PresetOut, responses=problems(400, 401, 403, 409, 422, 429, 503))
def put_preset(name: PresetName, body: PresetUpdate, service: ServiceDep, key: KeyDep) -> PresetOut:
    """Create or replace a saved preset. Built-in ones cannot be changed (409 ``preset_builtin``), nor
    one another key made, or the desktop or CLI (403 ``preset_not_yours``)."""
    return PresetOut.of(save(service, name, body.description, body.steps, replace=True, key_id=key.id))


@router.delete("/{name}", status_code=204, response_class=Response, responses=problems(401, 403, 404, 409, 429))
def delete_preset(name: PresetName, service: ServiceDep, key: KeyDep) -> Response:
    """Delete a saved preset. Built-in ones cannot be deleted (409 ``preset_builtin``), nor one another
    key made, or the desktop or CLI (403 ``preset_not_yours``)."""
    service.presets.delete(name, key_id=key.id)
    return Response(status_code=204)
