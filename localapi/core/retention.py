"""Retention: purge expired files, never those a queued or running job still needs."""

from __future__ import annotations

import json
import logging

from localapi.core.db import Database, now
from localapi.core.errors import StorageUnavailable
from localapi.core.files import FileStore

log = logging.getLogger("filekiln.retention")


def purge_expired(db: Database, files: FileStore) -> int:
    active: set[str] = set()
    for row in db.all("select input_file_ids from jobs where status in ('QUEUED', 'PROCESSING')"):
        active.update(json.loads(row["input_file_ids"]))
    purged = 0
    for row in db.all("select id from files where deleted_at is null and expires_at <= ?", now()):
        if row["id"] in active:
            continue
        try:
            files.delete(row["id"])
        except StorageUnavailable as exc:  # the bucket is away: the rest waits for the next round
            log.warning("purge put off: %s", exc.detail)
            break
        purged += 1
    db.execute("delete from idempotency where created_at < ?", now() - 7 * 86400)
    # the event feed: progress is of use for a day (a stream resumed after a night), the rest for a week
    db.execute("delete from job_events where created_at < ? and type = 'job.progress'", now() - 86400)
    db.execute("delete from job_events where created_at < ?", now() - 7 * 86400)
    if purged:
        log.info("purged %d expired files", purged)
    return purged
