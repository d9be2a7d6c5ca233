"""What a watched folder is, and what became of one file taken from it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from localapi.core.db import Row

AFTER = ("keep", "move", "delete")  # what happens to an input once its outputs are written
DONE_DIR = ".filekiln-done"  # --after move: IN_DIR/.filekiln-done/<rel>, hidden, so never watched
FAILED_DIR = "failed"  # OUT_DIR/failed/<rel subdir>/<name>.error.txt


@dataclass(frozen=True)
class WatchFolder:
    id: str
    in_dir: Path
    out_dir: Path
    preset: str
    recursive: bool
    after: str
    paused: bool
    created_at: float
    last_activity_at: float | None
    last_error: str | None

    @classmethod
    def from_row(cls, row: Row) -> WatchFolder:
        return cls(id=row["id"], in_dir=Path(row["in_dir"]), out_dir=Path(row["out_dir"]), preset=row["preset"],
                   recursive=bool(row["recursive"]), after=row["after"], paused=bool(row["paused"]),
                   created_at=row["created_at"], last_activity_at=row["last_activity_at"],
                   last_error=row["last_error"])

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "inDir": str(self.in_dir), "outDir": str(self.out_dir), "preset": self.preset,
                "recursive": self.recursive, "after": self.after, "paused": self.paused,
                "createdAt": self.created_at, "lastActivityAt": self.last_activity_at, "lastError": self.last_error}


@dataclass(frozen=True)
class WatchResult:
    """One file done with: its outputs, or why it failed and where that was written."""

    folder_id: str
    rel_path: PurePosixPath
    ok: bool
    outputs: list[Path]
    message: str | None = None
    report: Path | None = None  # OUT_DIR/failed/.../<name>.error.txt
