"""Dependencies, as ``Annotated`` aliases so that route signatures read like sentences.

They are ``async``: FastAPI runs a plain ``def`` dependency on a worker thread, and the hop costs
more than what they do, at most one indexed read (SQLite in WAL mode: a read never waits for a
writer). What writes (a key's last use) goes to a thread.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.concurrency import run_in_threadpool

from localapi.core.errors import InvalidApiKey, JobNotFound, RateLimited
from localapi.core.jobs import Caller, Job
from localapi.core.keys import ApiKey
from localapi.core.ratelimit import retry_after
from localapi.core.service import Service


def get_service_of(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


async def get_service(request: Request) -> Service:  # async: no thread hop for a lookup
    return get_service_of(request)


ServiceDep = Annotated[Service, Depends(get_service)]


# where a key checked before the request's body was read is left for ``sent_key`` (see middleware.JsonBodyGate)
KEY_SCOPE = "filekiln.api_key"


def secret_from(x_api_key: str | None, authorization: str | None) -> str | None:
    if x_api_key:
        return x_api_key.strip()
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
        raise InvalidApiKey("The Authorization header must be 'Bearer <API key>'.")
    return None


def _rate_limit(service: Service, caller: str, request: Request) -> None:
    wait = service.limiter.take(caller, request.method)
    if wait > 0:
        raise RateLimited("Too many requests for this key; slow down.", headers={"Retry-After": retry_after(wait)})


def anonymous_caller(request: Request) -> str:
    """The buckets of a caller without a key: its address (the peer's, or the one a trusted proxy names)."""
    return f"anon:{request.client.host if request.client else '-'}"


async def key_for(service: Service, secret: str) -> ApiKey | None:
    """The active key whose secret this is, or None. The lookup is one indexed read, cheaper on the event
    loop than the hop to a worker thread; the write of the key's last use (at most every 30 s) goes to one."""
    key = service.keys.lookup(secret)
    if key is not None and service.keys.stale_use(key):
        await run_in_threadpool(service.keys.mark_used, key.id)
    return key


_SENT = "filekiln.sent_key"  # the scope's memo of sent_key: a request is charged once, whatever asks
_ANONYMOUS_CHARGED = "filekiln.anonymous_charged"  # and optional_key's, for a caller without a key


async def sent_key(request: Request) -> ApiKey | None:
    """The calling key, if one was sent; a key that is sent must be valid, and is charged to its buckets.
    Where the anonymous caller is charged is left to the dependant (see ``optional_key``, ``load_job``).

    The key dependencies take the request alone and call each other directly: FastAPI's resolution of
    each ``Depends`` and ``Header`` costs more than the little they do. The headers are not in the
    OpenAPI document (the security scheme says how to send a key)."""
    scope = request.scope
    if _SENT in scope:
        sent: ApiKey | None = scope[_SENT]
        return sent
    service = get_service_of(request)
    secret = secret_from(request.headers.get("x-api-key"), request.headers.get("authorization"))
    if secret is None:
        if service.settings.keys_everywhere:
            raise InvalidApiKey("Send an API key in X-API-Key or Authorization: Bearer.")
        key = None
    else:
        # checked already, before the body was read (middleware.JsonBodyGate)
        key = scope[KEY_SCOPE] if KEY_SCOPE in scope else await key_for(service, secret)
        if key is None:
            raise InvalidApiKey("The API key is not valid or was revoked.")
        _rate_limit(service, key.id, request)
    scope[_SENT] = key
    return key


async def optional_key(request: Request) -> ApiKey | None:
    """The calling key, if one was sent; without one, the caller's address is charged."""
    key = await sent_key(request)
    if key is None and not request.scope.get(_ANONYMOUS_CHARGED):
        request.scope[_ANONYMOUS_CHARGED] = True
        _rate_limit(get_service_of(request), anonymous_caller(request), request)
    return key


async def required_key(request: Request) -> ApiKey:
    key = await optional_key(request)
    if key is None:
        raise InvalidApiKey("Send an API key in X-API-Key or Authorization: Bearer.")
    return key


KeyDep = Annotated[ApiKey, Depends(required_key)]
OptionalKeyDep = Annotated[ApiKey | None, Depends(optional_key)]


async def key_caller(key: KeyDep) -> Caller:
    return Caller(key=key)


async def job_id_caller(request: Request) -> Caller:
    """GET /jobs/{id} and its result answer without a key (job ids carry 128 random bits);
    with a key, only that key's jobs are visible."""
    key = await sent_key(request)
    return Caller(key=key) if key is not None else Caller(any_owner=True)


CallerDep = Annotated[Caller, Depends(key_caller)]
JobReaderDep = Annotated[Caller, Depends(job_id_caller)]


async def load_job(service: ServiceDep, caller: JobReaderDep, request: Request,
                   id: Annotated[str, Path(description="The job id", max_length=100)]) -> Job:
    """The job ``id``. A reader without a key is charged to its address's buckets for this job alone, so
    that one eager poller does not starve the others on the same machine; an id that names no job is
    charged to the address's own buckets, so that guessing ids buys no fresh ones. One indexed read:
    on the event loop, like the key lookup."""
    if caller.key is not None:
        return service.jobs.get(id, caller)
    try:
        job = service.jobs.get(id, caller)
    except JobNotFound:
        _rate_limit(service, anonymous_caller(request), request)
        raise
    _rate_limit(service, f"{anonymous_caller(request)}:{job.id}", request)
    return job


async def load_own_job(service: ServiceDep, caller: CallerDep,
                       id: Annotated[str, Path(description="The job id", max_length=100)]) -> Job:
    return service.jobs.get(id, caller)


JobDep = Annotated[Job, Depends(load_job)]
OwnJobDep = Annotated[Job, Depends(load_own_job)]
