"""The ledger of files a watch folder has taken: one row per version of a file (path + size + mtime + hash).

A row is inserted with ``on conflict do nothing`` before the file's workflow is made, so of two processes
watching one folder only one takes a given version; it ends ``done`` or ``failed`` by a guarded update,
so only one of them writes the outputs. A ``taken`` row with a workflow id is followed again after a
restart; one without (its process died between the claim and the workflow) is released after
:data:`STALE_CLAIM_SECONDS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePosixPath

from localapi.core.db import Database, Row, now

STALE_CLAIM_SECONDS = 60.0


class FileStatus(StrEnum):
    TAKEN = "taken"  # claimed; its workflow runs (or is about to be made)
    DONE = "done"  # outputs written
    FAILED = "failed"  # the error report written; the input left where it was


@dataclass(frozen=True)
class Version:
    """One version of a file in a watched folder."""

    rel_path: PurePosixPath
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Taken:
    """A ``taken`` row: the version and the workflow converting it."""

    row_id: int
    version: Version
    workflow_id: str | None


class Ledger:
    def __init__(self, db: Database) -> None:
        self.db = db

    def known(self, folder_id: str, version: Version) -> bool:
        """Whether this version was taken already (path, size and mtime: checked before hashing)."""
        return self.db.one(
            "select 1 from watched_files where folder_id = ? and rel_path = ? and size = ? and mtime_ns = ?"
            " and not (status = ? and workflow_id is null and taken_at < ?) limit 1",
            folder_id, str(version.rel_path), version.size, version.mtime_ns, FileStatus.TAKEN,
            now() - STALE_CLAIM_SECONDS) is not None

    def claim(self, folder_id: str, version: Version, sha256: str) -> int | None:
        """The new row's id, or None when this version is another's (or was done already)."""
        key = (folder_id, str(version.rel_path), version.size, version.mtime_ns, sha256)
        with self.db.transaction() as conn:
            conn.execute("delete from watched_files where folder_id = ? and rel_path = ? and size = ?"
                         " and mtime_ns = ? and sha256 = ? and status = ? and workflow_id is null"
                         " and taken_at < ?", (*key, FileStatus.TAKEN, now() - STALE_CLAIM_SECONDS))
            row = conn.execute(
                "insert into watched_files (folder_id, rel_path, size, mtime_ns, sha256, status, taken_at)"
                " values (?, ?, ?, ?, ?, ?, ?) on conflict do nothing returning id",
                (*key, FileStatus.TAKEN, now())).fetchone()
            return int(row[0]) if row else None

    def started(self, row_id: int, workflow_id: str) -> None:
        self.db.execute("update watched_files set workflow_id = ? where id = ?", workflow_id, row_id)

    def finish(self, row_id: int, status: FileStatus, message: str | None = None) -> bool:
        """Mark a taken row done or failed; False when another process did first."""
        return self.db.execute(
            "update watched_files set status = ?, message = ?, finished_at = ? where id = ? and status = ?",
            status, message, now(), row_id, FileStatus.TAKEN) == 1

    def unclaim(self, row_id: int) -> None:
        self.db.execute("delete from watched_files where id = ? and status = ?", row_id, FileStatus.TAKEN)

    def following(self, folder_id: str) -> list[Taken]:
        """The taken rows whose workflow runs: what a restart follows again rather than resubmits."""
        return [_taken(row) for row in self.db.all(
            "select * from watched_files where folder_id = ? and status = ? and workflow_id is not null"
            " order by id", folder_id, FileStatus.TAKEN)]

    def counts(self, folder_id: str) -> dict[str, int]:
        return {row["status"]: row["n"] for row in self.db.all(
            "select status, count(*) as n from watched_files where folder_id = ? group by status", folder_id)}

    def forget(self, folder_id: str) -> None:
        self.db.execute("delete from watched_files where folder_id = ?", folder_id)


def _taken(row: Row) -> Taken:
    return Taken(row["id"], Version(PurePosixPath(row["rel_path"]), row["size"], row["mtime_ns"]), row["workflow_id"])
