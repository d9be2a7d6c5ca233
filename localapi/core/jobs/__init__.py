"""Jobs, from request to result.

- :mod:`.records` — what a job is (``Job``, ``JobPage``, ``Result``) and who asks (``Caller``);
- :mod:`.service` — the API side: validate, create, read, cancel, delete;
- :mod:`.validation` — the checks a job passes before it is queued (shared with the CLI);
- :mod:`.worker` — the worker side: claim, run supervised, record, recover;
- :mod:`.runner` — a conversion child process, supervised (progress, cancel, timeout, kill);
- :mod:`.messages` — what the worker and the child say to each other;
- :mod:`.child` — the child process itself.
"""

from localapi.core.jobs.records import Caller, Job, JobPage, Result, quota_headers
from localapi.core.jobs.service import JobService

__all__ = ["Caller", "Job", "JobPage", "JobService", "Result", "quota_headers"]
