from __future__ import annotations

import dataclasses
from typing import Annotated

from fastapi import APIRouter, Path, Response

from localapi.http.deps import KeyDep, ServiceDep
from localapi.http.problems import problems
from localapi.http.schemas import JobSecretOut, WebhookCreate, WebhookCreatedOut, WebhookListOut, WebhookOut, iso

router = APIRouter(prefix="/webhooks", tags=["webhooks"])


@router.post("", status_code=201, response_model=WebhookCreatedOut, responses=problems(400, 401, 409, 422, 429))
def create_webhook(body: WebhookCreate, service: ServiceDep, key: KeyDep) -> WebhookCreatedOut:
    """Send this key's job events to ``url``. The ``secret`` that signs them is in this answer only.
    The URL must be on this computer unless the ``webhook_allowed_hosts`` setting lists its host. A key
    may have 20 hooks (409 ``too_many_webhooks``)."""
    hook, secret = service.webhooks.create(key.id, body.url, body.events)
    return WebhookCreatedOut.model_validate({**dataclasses.asdict(hook), "secret": secret})


@router.get("", response_model=WebhookListOut, responses=problems(401, 429))
def list_webhooks(service: ServiceDep, key: KeyDep) -> WebhookListOut:
    """This key's webhooks, oldest first (without their secrets)."""
    return WebhookListOut(items=[WebhookOut.model_validate(h) for h in service.webhooks.list(key.id)])


@router.get("/job-secret", response_model=JobSecretOut, responses=problems(401, 429))
def get_job_secret(service: ServiceDep, key: KeyDep) -> JobSecretOut:
    """The secret that signs deliveries to the ``webhookUrl`` of this key's jobs (made on first use)."""
    secret, created = service.webhooks.job_secret(key.id)
    return JobSecretOut(secret=secret, createdAt=iso(created))  # type: ignore[arg-type]


@router.post("/job-secret", status_code=201, response_model=JobSecretOut, responses=problems(401, 429))
def rotate_job_secret(service: ServiceDep, key: KeyDep) -> JobSecretOut:
    """Replace the job secret; deliveries from now on, pending retries included, are signed with the new one."""
    secret, created = service.webhooks.rotate_job_secret(key.id)
    return JobSecretOut(secret=secret, createdAt=iso(created))  # type: ignore[arg-type]


@router.delete("/{id}", status_code=204, response_class=Response, responses=problems(401, 404, 429))
def delete_webhook(service: ServiceDep, key: KeyDep,
                   id: Annotated[str, Path(description="The webhook id", max_length=100)]) -> Response:
    """Delete a webhook; deliveries it had not made yet are dropped."""
    service.webhooks.delete(key.id, id)
    return Response(status_code=204)
