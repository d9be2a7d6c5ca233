"""Metrics in the Prometheus text format (``GET /v1/metrics``): what a dashboard or an alert needs.

Everything is read from the job table, the source of truth, so every API process of one install
answers the same: jobs and workflows by state (and jobs by tool), the queue's depth, how long jobs
took by tool (a histogram of the finished ones still kept), the alive worker processes and their slots
(the ``workers`` table), and this process's workers and event listeners. Reads are aggregates over
indexed columns; nothing is kept between scrapes.

The job and workflow figures are the calling key's own, unless the ``metrics_all_keys`` setting shows
every key's to every key (an install whose keys all belong to one owner, scraped by a dashboard): what
one key's scripts convert is not another key's to see.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from localapi import __version__
from localapi.core.jobs.registry import alive_rows

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# seconds: a small image converts in well under 0.1 s, a feature film in over an hour
DURATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _sample(name: str, labels: dict[str, str], value: float) -> str:
    inner = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
    number = repr(float(value)) if not float(value).is_integer() else str(int(value))
    return f"{name}{{{inner}}} {number}" if inner else f"{name} {number}"


def _family(name: str, kind: str, text: str, samples: Iterable[str]) -> list[str]:
    return [f"# HELP {name} {text}", f"# TYPE {name} {kind}", *samples]


def render(service: Any, key_id: str | None) -> str:
    """The metrics of ``service`` (a :class:`~localapi.core.service.Service`) as one text document: the
    jobs and workflows of ``key_id``, or of every key when it is None."""
    db = service.db
    mine, args = ("where key_id = ?", (key_id,)) if key_id is not None else ("", ())
    lines: list[str] = []
    lines += _family("filekiln_info", "gauge", "This FileKiln's version.",
                     [_sample("filekiln_info", {"version": __version__}, 1)])
    jobs = db.all(f"select status, tool, count(*) as n from jobs {mine} group by status, tool order by status, tool",
                  *args)
    lines += _family("filekiln_jobs", "gauge", "Jobs kept, by state and tool.",
                     [_sample("filekiln_jobs", {"status": r["status"], "tool": r["tool"]}, r["n"]) for r in jobs])
    queued = sum(r["n"] for r in jobs if r["status"] == "QUEUED")
    lines += _family("filekiln_queue_depth", "gauge", "Jobs waiting for a worker.",
                     [_sample("filekiln_queue_depth", {}, queued)])
    workflows = db.all(f"select status, count(*) as n from workflows {mine} group by status order by status", *args)
    lines += _family("filekiln_workflows", "gauge", "Workflows kept, by state (QUEUED also covers running ones).",
                     [_sample("filekiln_workflows", {"status": r["status"]}, r["n"]) for r in workflows])
    lines += _duration_histogram(db, key_id)
    pool = service.pool
    lines += _family("filekiln_workers", "gauge", "Worker slots running jobs in this process.",
                     [_sample("filekiln_workers", {}, pool.workers if pool is not None else 0)])
    alive = alive_rows(db)
    lines += _family("filekiln_worker_processes", "gauge", "Alive processes running workers on this install.",
                     [_sample("filekiln_worker_processes", {}, len(alive))])
    lines += _family("filekiln_worker_slots", "gauge", "Worker slots of the alive worker processes (jobs at once).",
                     [_sample("filekiln_worker_slots", {}, sum(r["slots"] for r in alive))])
    lines += _family("filekiln_event_listeners", "gauge", "Waiting requests and event streams open in this process.",
                     [_sample("filekiln_event_listeners", {}, service.events.listening)])
    return "\n".join(lines) + "\n"


def _duration_histogram(db: Any, key_id: str | None) -> list[str]:
    """Seconds from start to end of the DONE jobs still kept (of ``key_id``, or all), by tool, as cumulative
    buckets."""
    buckets = ", ".join(f"sum(case when finished_at - started_at <= {b} then 1 else 0 end)" for b in DURATION_BUCKETS)
    mine, args = (" and key_id = ?", (key_id,)) if key_id is not None else ("", ())
    rows = db.all(f"select tool, count(*) as n, sum(finished_at - started_at) as total, {buckets} from jobs"
                  f" where status = 'DONE' and started_at is not null and finished_at is not null{mine}"
                  " group by tool order by tool", *args)
    samples = []
    name = "filekiln_job_duration_seconds"
    for row in rows:
        tool = row["tool"]
        for index, bound in enumerate(DURATION_BUCKETS):
            samples.append(_sample(f"{name}_bucket", {"tool": tool, "le": repr(bound)}, row[3 + index]))
        samples.append(_sample(f"{name}_bucket", {"tool": tool, "le": "+Inf"}, row["n"]))
        samples.append(_sample(f"{name}_sum", {"tool": tool}, row["total"] or 0.0))
        samples.append(_sample(f"{name}_count", {"tool": tool}, row["n"]))
    return _family(name, "histogram", "How long DONE jobs ran, by tool.", samples)
