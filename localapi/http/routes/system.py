from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi import APIRouter

from localapi import API_VERSION, __version__
from localapi.http.deps import KeyDep, OptionalKeyDep, ServiceDep
from localapi.http.problems import problems
from localapi.http.schemas import HealthOut, UsageOut

router = APIRouter(tags=["system"])


@router.get("/health", response_model=HealthOut, responses=problems(401, 429))
def health(service: ServiceDep, key: OptionalKeyDep) -> HealthOut:
    """Version, engines and their availability. Needs no key."""
    return HealthOut(status="ok", version=__version__, apiVersion=API_VERSION, **service.health())


@router.get("/usage", response_model=UsageOut, responses=problems(401, 429))
def usage(service: ServiceDep, key: KeyDep) -> UsageOut:
    """Today's job count and quota for the calling key (days are UTC)."""
    used = service.keys.jobs_today(key.id)
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    remaining = None if key.daily_job_quota is None else max(key.daily_job_quota - used, 0)
    return UsageOut(keyId=key.id, name=key.name, dailyJobQuota=key.daily_job_quota, jobsToday=used,
                    remainingToday=remaining, resetsAt=tomorrow)
