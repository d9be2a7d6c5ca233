"""Which worker processes are alive, and which tools each takes: the ``workers`` table.

Every process running workers (``filekiln serve``, ``filekiln worker``, the desktop app) has a row: its
identity (the ``worker`` its jobs record), host, pid, slots, when it started, its last heartbeat, and the
ids of the tools it takes. A row whose heartbeat is older than ``STALE_HEARTBEAT`` is not alive; a clean
stop removes it.

A tool is taken in full where it is available and the engines it keeps running (LibreOffice) are found
too; where those are missing it runs only in part (Document to PDF by pandoc, without the original page
layout). A process alone claims every job, as FileKiln always has. Once it has
seen another alive process that runs such a tool in full, it leaves that tool's jobs to processes that do,
for as long as it runs: they wait in the job table, QUEUED, and ``GET /health`` says so.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from converters.catalogue import Catalogue
from localapi.core.db import Database, now
from localapi.core.jobs.worker import STALE_HEARTBEAT, JobWorker
from localapi.core.processes import process_is_gone
from localapi.core.states import JobStatus
from localapi.core.switches import Switches

log = logging.getLogger("filekiln")

FORGET_SECONDS = 3600.0  # a row silent this long is deleted (a process on another host that died)
OFFER_SECONDS = 1.0  # how often idle workers look for jobs whose message another process took


@dataclass(frozen=True)
class Capabilities:
    full: frozenset[str]  # available, with every engine it keeps running
    partial: frozenset[str]  # available without an engine it keeps running


def capabilities(catalogue: Catalogue, switches: Switches) -> Capabilities:
    """What this process can run, judged as tool availability is (engines, models, settings; cached)."""
    full: set[str] = set()
    partial: set[str] = set()
    for tool in catalogue:
        if switches.unavailable_reason(tool) is not None:
            continue
        (full if all(e.found(switches.tool_env) for e in tool.resident) else partial).add(tool.id)
    return Capabilities(frozenset(full), frozenset(partial))


def alive_rows(db: Database) -> list[dict[str, Any]]:
    """The alive worker processes, oldest first, with ``tools`` and ``partial`` as lists: a recent heartbeat,
    and, on this host, the process still there (one killed outright is not alive for a minute more)."""
    rows = db.all("select * from workers where heartbeat_at > ? order by started_at, id", now() - STALE_HEARTBEAT)
    return [{**dict(r), "tools": json.loads(r["tools"]), "partial": json.loads(r["partial"])} for r in rows
            if not process_is_gone(r["id"])]


def health_view(db: Database, catalogue: Catalogue) -> dict[str, Any]:
    """``workerProcesses`` and ``waitingForWorker`` for ``GET /health``: two small reads."""
    rows = alive_rows(db)
    known = [tool.id for tool in catalogue]
    taken: set[str] = set()
    processes = []
    for row in rows:
        tools = set(row["tools"])
        taken |= tools
        processes.append({"id": row["id"], "host": row["host"], "pid": row["pid"], "slots": row["slots"],
                          "startedAt": row["started_at"], "lastSeenAt": row["heartbeat_at"],
                          "cannotRun": [t for t in known if t not in tools],
                          "inPart": sorted(tools & set(row["partial"]))})
    if rows and all(t in taken for t in known):
        waiting: dict[str, int] = {}
    else:
        # QUEUED jobs of tools no alive process takes (every one, when no worker process is alive)
        missing = [t for t in known if t not in taken] if rows else []
        where = f" and tool in ({','.join('?' * len(missing))})" if rows else ""
        waiting = {r["tool"]: r["n"] for r in db.all(
            f"select tool, count(*) as n from jobs where status = ?{where} group by tool",
            JobStatus.QUEUED, *missing)}
    return {"workerProcesses": processes, "waitingForWorker": waiting}


class WorkerRegistry:
    """This process's row in ``workers``, and which tools its workers claim (``JobWorker.excluded``)."""

    def __init__(self, db: Database, catalogue: Catalogue, switches: Switches, worker: JobWorker) -> None:
        self.db = db
        self.catalogue = catalogue
        self.switches = switches
        self.worker = worker
        self.identity = worker.identity
        self.slots = 0
        self.held: set[str] = set()  # tools run here only in part, left to alive processes running them in full
        self.peers = 0  # other alive worker processes, at the last look
        self._stopping = threading.Event()
        self._offers: threading.Thread | None = None

    def start(self, slots: int, hand: Callable[[str], bool]) -> None:
        """Register, then offer waiting jobs to idle workers every ``OFFER_SECONDS`` (see :meth:`offer`)."""
        self.register(slots)
        self._stopping.clear()
        self._offers = threading.Thread(target=self._offer_loop, args=(hand,), daemon=True,
                                        name="filekiln-offers")
        self._offers.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._offers is not None:
            self._offers.join(timeout=5)
            self._offers = None
        self.remove()

    def _offer_loop(self, hand: Callable[[str], bool]) -> None:
        while not self._stopping.wait(OFFER_SECONDS):
            try:
                self.offer(hand)
            except Exception:
                log.exception("could not offer waiting jobs to idle workers")

    def register(self, slots: int) -> None:
        self.slots = slots
        self.beat(starting=True)

    def beat(self, starting: bool = False) -> None:
        """Refresh the heartbeat and what this process takes (engines or settings may have changed).

        ``starting``: the row is written for the first time, with what the process takes already in it,
        so that ``/health`` and the other processes never see it taking nothing."""
        caps = capabilities(self.catalogue, self.switches)
        # rows of processes that ended without a clean stop: gone from this host, or silent for an hour
        for old in self.db.all("select id, heartbeat_at from workers where id != ?", self.identity):
            if old["heartbeat_at"] < now() - FORGET_SECONDS or process_is_gone(old["id"]):
                self.db.execute("delete from workers where id = ? and heartbeat_at = ?", old["id"], old["heartbeat_at"])
        others = [r for r in alive_rows(self.db) if r["id"] != self.identity]
        self.peers = len(others)
        for row in others:
            full_there = set(row["tools"]) - set(row["partial"])
            newly = (caps.partial & full_there) - self.held
            if newly:
                log.info("leaving %s to worker %s, which runs them in full", ", ".join(sorted(newly)), row["id"])
                self.held |= newly
        takes = caps.full | (caps.partial - self.held)
        if not others:  # alone, it claims every job but those it leaves to a full peer, as a process always has:
            # (a job queued before its tool was switched off, or lost its engine, does not wait for ever)
            takes = frozenset(tool.id for tool in self.catalogue) - self.held
        self.worker.excluded = tuple(sorted(tool.id for tool in self.catalogue if tool.id not in takes))
        tools, partial, t = json.dumps(sorted(takes)), json.dumps(sorted(caps.partial & takes)), now()
        if starting:
            self.db.execute(
                "insert into workers (id, host, pid, slots, started_at, heartbeat_at, tools, partial)"
                " values (?, ?, ?, ?, ?, ?, ?, ?) on conflict (id) do update set slots = excluded.slots,"
                " started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at,"
                " tools = excluded.tools, partial = excluded.partial",
                self.identity, socket.gethostname(), os.getpid(), self.slots, t, t, tools, partial)
        else:
            self.db.execute("update workers set heartbeat_at = ?, slots = ?, tools = ?, partial = ? where id = ?",
                            t, self.slots, tools, partial, self.identity)

    def remove(self) -> None:
        self.db.execute("delete from workers where id = ?", self.identity)

    def offer(self, hand: Callable[[str], bool]) -> None:
        """Hand this process's idle workers the QUEUED jobs they can run, when other processes work the same
        queue: a message taken by a process that cannot run its job is not lost on the job."""
        others = self.db.one("select count(*) as n from workers where id != ? and heartbeat_at > ?",
                             self.identity, now() - STALE_HEARTBEAT)
        self.peers = others["n"] if others is not None else 0
        if not self.peers:
            return
        excluded = self.worker.excluded
        rows = self.db.all(
            "select id from jobs where status = ?"
            + (f" and tool not in ({','.join('?' * len(excluded))})" if excluded else "")
            + " order by created_at, id limit ?", JobStatus.QUEUED, *excluded, max(1, self.slots))
        for row in rows:
            if not hand(row["id"]):
                return
