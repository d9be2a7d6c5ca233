"""Workflows: several steps, each run as ordinary jobs, the outputs of one the inputs of the next.

A merging tool (``pdf-merge``, ``image-to-pdf`` ...) takes all of a step's inputs in one job; any
other tool fans out, one job per input. Every step is checked when the workflow is created (the
tool, its params, its output format, and that each step takes what the one before it makes), so a
chain that cannot run is refused before anything runs.

The job table is the source of truth: a workflow row records the step it is on and how it ended,
and :meth:`WorkflowService.advance` moves it on whenever one of its jobs ends (the worker and the
job service call it) and at every housekeeping tick (a crash between a job's end and the advance
loses nothing). Each move is guarded by the step it was decided on, so two threads or processes
advancing at once never make a step twice. Status and progress are derived from the steps' jobs.
When a workflow ends, the files its earlier steps made are deleted: only its inputs and the last
step's outputs stay.
"""

from __future__ import annotations

import json
import logging
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from converters.base import SECRET_MASK, Params, Tool
from converters.catalogue import Catalogue
from localapi.core.db import Database, Row, new_id, now
from localapi.core.errors import (
    Conflict,
    InvalidParams,
    JobNotFinished,
    ServiceError,
    Unavailable,
    WorkflowNotFound,
)
from localapi.core.files import FileStore, StoredFile
from localapi.core.jobs.events import TYPE_OF_STATUS, EventFeed, append, append_workflow
from localapi.core.jobs.records import Caller, Job
from localapi.core.jobs.sealed import Sealer
from localapi.core.jobs.service import JobService
from localapi.core.jobs.validation import check_request
from localapi.core.keys import KeyService
from localapi.core.states import ACTIVE, JobStatus
from localapi.core.switches import Switches
from localapi.core.workflows.presets import PresetStore, check_name, steps_from_json
from localapi.core.workflows.records import Preset, StepSpec, StepState, Workflow, WorkflowPage

log = logging.getLogger("filekiln.workflows")

WORKFLOW_TYPE_OF_STATUS = {JobStatus.DONE: "workflow.done", JobStatus.FAILED: "workflow.failed",
                           JobStatus.CANCELED: "workflow.canceled"}
MAX_INPUTS = 100
JOB_COLUMNS = "id, workflow_id, step, status, progress, started_at"  # what a workflow's state is derived from


class WorkflowService:
    def __init__(self, db: Database, files: FileStore, catalogue: Catalogue, switches: Switches, jobs: JobService,
                 events: EventFeed, sealer: Sealer, keys: KeyService, presets: PresetStore,
                 enqueue: Callable[[str], None]) -> None:
        self.db = db
        self.files = files
        self.catalogue = catalogue
        self.switches = switches
        self.jobs = jobs
        self.events = events
        self.sealer = sealer
        self.keys = keys
        self.presets = presets
        self.enqueue = enqueue

    # ---- checking ----

    def resolve(self, steps: Any, preset: str | None) -> tuple[list[StepSpec], str | None]:
        """The steps asked for, from the request itself or from a preset (not both)."""
        if preset is not None and steps:
            raise InvalidParams("Give steps or a preset, not both.", errors={"preset": ["not with steps"]})
        if preset is not None:
            try:
                return self.presets.get(preset).steps, preset
            except ServiceError:
                raise InvalidParams(f"No preset {preset!r}.", code="unknown_preset",
                                    errors={"preset": [f"no preset {preset!r}; see GET /presets"]}) from None
        return steps_from_json(steps), None

    def check_chain(self, steps: Sequence[StepSpec], input_formats: set[str] | None = None,
                    input_count: int = 1) -> list[tuple[Tool, Params, str]]:
        """Each step's tool, params and output format, checked in order, and each step against what the
        one before makes (``input_formats``: what the first step gets; None: anything it accepts)."""
        checked = []
        formats = input_formats
        count = input_count
        disabled = self.switches.disabled_tools()  # one read for the whole chain
        for index, spec in enumerate(steps):
            tool = self.catalogue.get(spec.tool)
            try:
                tool, model, fmt = check_request(self.catalogue, self.switches, spec.tool, spec.params,
                                                 spec.output_format, count if tool and tool.merges_inputs else 1,
                                                 disabled)
            except ServiceError as exc:
                raise _in_step(exc, index, spec.tool) from None
            if formats is not None:
                refused = sorted(f for f in formats if f not in tool.accepts)
                if refused:
                    what = "the input files" if index == 0 else f"step {index} ({steps[index - 1].tool})"
                    raise InvalidParams(
                        f"Step {index + 1} ({tool.id}) cannot take {', '.join(refused)}, which {what} "
                        f"{'are' if index == 0 else 'makes'}; it takes {', '.join(tool.accepts)}.",
                        code="incompatible_steps",
                        errors={f"steps.{index}.tool": [f"{tool.id} does not accept {', '.join(refused)}"]})
            if fmt != "keep":  # "keep" passes on whatever came in (anything, when that is not known)
                formats = {fmt}
            count = 1 if tool.merges_inputs else count
            checked.append((tool, model, fmt))
        return checked

    def preset_steps(self, steps: Sequence[StepSpec]) -> list[StepSpec]:
        """Steps checked as a workflow's would be (before any input is known), as a preset keeps them:
        params as validated, passwords never (they show as ``***`` and are asked for at run time)."""
        return [StepSpec(t.id, m.public(), f) for t, m, f in self.check_chain(steps, None)]

    def save_preset(self, name: str, steps: Sequence[StepSpec], description: str = "", *,
                    replace: bool = True, key_id: str | None = None) -> Preset:
        """Check a chain, then save it as a preset (``replace``: overwrite a saved one of that name;
        ``key_id``: the API key saving it, see :meth:`PresetStore.save`)."""
        return self.presets.save(check_name(name), self.preset_steps(steps), description, replace=replace,
                                 key_id=key_id)

    # ---- creation ----

    def create(self, caller: Caller, input_file_ids: Sequence[str], steps: Any = None, preset: str | None = None,
               tag: str | None = None, webhook_url: str | None = None) -> Workflow:
        """Check every step, then queue the first step's jobs."""
        if self.switches.maintenance:
            raise Unavailable("FileKiln is in maintenance mode; try again later.", code="maintenance",
                              headers={"Retry-After": "60"})
        specs, preset_name = self.resolve(steps, preset)
        if not input_file_ids:
            raise InvalidParams("Give at least one input file.", errors={"inputFileIds": ["must not be empty"]})
        if len(input_file_ids) > MAX_INPUTS:
            raise InvalidParams(f"At most {MAX_INPUTS} inputs.", errors={"inputFileIds": [f"at most {MAX_INPUTS}"]})
        stored: list[StoredFile] = []
        for index, file_id in enumerate(input_file_ids):
            try:
                stored.append(self.files.get(file_id, key_id=caller.key_id))
            except ServiceError:
                raise InvalidParams(f"Unknown input file {file_id!r}.", code="unknown_file", errors={
                    f"inputFileIds.{index}": [f"no file {file_id!r}"]}) from None
        checked = self.check_chain(specs, {f.format or "" for f in stored}, len(stored))
        for index, (step_tool, step_model, _) in enumerate(checked):  # a preset keeps no password: say so now
            revealed = step_model.revealed()
            masked = sorted(n for n in step_model.secret_names() if revealed[n] == SECRET_MASK)
            if masked:
                raise InvalidParams(
                    f"Step {index + 1} ({step_tool.id}) needs its password given again: presets and jobs do not "
                    "keep passwords. Give the steps with the password in their params.",
                    errors={f"steps.{index}.params.{name}": ["give the value again"] for name in masked})
        tool, model, fmt = checked[0]
        groups = _groups(tool, list(input_file_ids))
        try:
            for group in groups:  # sizes, sniffed formats and the tool's own checks, per job
                self.jobs.validate(caller, tool.id, group, model.revealed(), fmt)
        except ServiceError as exc:
            raise _in_step(exc, 0, tool.id) from None
        public = [StepSpec(t.id, m.public(), f) for t, m, f in checked]
        secrets = {str(i): {n: m.revealed()[n] for n in m.secret_names()} for i, (_, m, _) in enumerate(checked)}
        workflow_id = new_id("wf")
        t = now()
        with self.events.changing() as conn:
            for _ in groups:
                self.jobs.charge(conn, caller)
            conn.execute(
                "insert into workflows (id, key_id, status, steps, secret_steps, preset, tag, webhook_url,"
                " input_file_ids, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (workflow_id, caller.key_id, JobStatus.QUEUED, json.dumps([s.to_json() for s in public]),
                 self.sealer.seal({k: v for k, v in secrets.items() if v}), preset_name, tag, webhook_url,
                 json.dumps(list(input_file_ids)), t, t))
            made = [self.jobs.insert(conn, caller.key_id, tool, model, fmt, group, tag=tag,
                                     workflow_id=workflow_id, step=0) for group in groups]
        for job in made:
            self.enqueue(job.id)
        return self.get(workflow_id, caller)

    # ---- reading ----

    def get(self, workflow_id: str, caller: Caller) -> Workflow:
        row = self.db.one("select * from workflows where id = ?", workflow_id)
        if row is None or not caller.owns(row["key_id"]):
            raise WorkflowNotFound(f"No workflow {workflow_id!r}.")
        return self._workflow(row, self.db.all(
            f"select {JOB_COLUMNS} from jobs where workflow_id = ? order by step, created_at, id", workflow_id))

    def page(self, caller: Caller, *, status: str | None = None, tag: str | None = None, limit: int = 50,
             cursor: str | None = None) -> WorkflowPage:
        """Newest first, like :meth:`JobService.page`."""
        where = ["key_id is not distinct from ?"]
        args: list[Any] = [caller.key_id]
        if tag:
            where.append("tag = ?")
            args.append(tag)
        if cursor:
            created_text, _, last_id = cursor.partition("~")
            created = float(created_text)
            where.append("(created_at < ? or (created_at = ? and id < ?))")
            args.extend([created, created, last_id])
        rows = self.db.all(f"select id from workflows where {' and '.join(where)}"
                           " order by created_at desc, id desc", *args)
        items = []
        for row in rows:  # status is derived from the jobs, so it is filtered after reading
            workflow = self.get(row["id"], Caller(any_owner=True))
            if status is None or workflow.status == status:
                items.append(workflow)
                if len(items) > limit:
                    break
        page = items[:limit]
        next_cursor = f"{page[-1].created_at!r}~{page[-1].id}" if len(items) > limit else None
        return WorkflowPage(page, next_cursor)

    def many(self, workflow_ids: Sequence[str]) -> list[Workflow]:
        """Several workflows as they stand, in a few reads (a batch's progress); unknown ids are left out."""
        found: list[Workflow] = []
        for start in range(0, len(workflow_ids), 500):
            ids = list(workflow_ids[start:start + 500])
            marks = ",".join("?" * len(ids))
            jobs: dict[str, list[Row]] = {}
            for job in self.db.all(f"select {JOB_COLUMNS} from jobs where workflow_id in ({marks})"
                                   " order by step, created_at, id", *ids):
                jobs.setdefault(job["workflow_id"], []).append(job)
            found += [self._workflow(row, jobs.get(row["id"], []))
                      for row in self.db.all(f"select * from workflows where id in ({marks})", *ids)]
        return found

    def result_files(self, workflow_id: str, caller: Caller) -> tuple[list[StoredFile], StoredFile | None]:
        """A DONE workflow's outputs (the last step's) and, when there are several, their ZIP."""
        workflow = self.get(workflow_id, caller)
        if workflow.status == JobStatus.FAILED:
            raise Conflict(f"Workflow {workflow.id} failed ({workflow.error_code}); it has no result.",
                           code="workflow_failed")
        if workflow.status == JobStatus.CANCELED:
            raise Conflict(f"Workflow {workflow.id} was canceled; it has no result.", code="workflow_canceled")
        if workflow.status != JobStatus.DONE:
            raise JobNotFinished(f"Workflow {workflow.id} is {workflow.status}, not DONE.",
                                 code="workflow_not_finished", headers={"Retry-After": "1"})
        files = [self.jobs._result_file(fid) for fid in workflow.result_file_ids]
        bundle = self.jobs._result_file(workflow.bundle_file_id) if workflow.bundle_file_id else None
        return files, bundle

    def result_paths(self, workflow_id: str) -> list[tuple[str, Path]]:
        """(name, path in the store) of a DONE workflow's outputs: for the desktop, the CLI and watch folders."""
        files, _ = self.result_files(workflow_id, Caller(any_owner=True))
        return [(f.original_name, self.files.path_of(f.id)) for f in files]

    def _workflow(self, row: Row, job_rows: list[Row]) -> Workflow:
        specs = [StepSpec.from_json(s) for s in json.loads(row["steps"])]
        stored_status = JobStatus(row["status"])
        by_step: dict[int, list[Row]] = {}
        for job in job_rows:
            by_step.setdefault(job["step"], []).append(job)
        states = []
        for index, spec in enumerate(specs):
            jobs = by_step.get(index, [])
            states.append(StepState(spec, _step_status(jobs, stored_status), [j["id"] for j in jobs],
                                    _step_progress(jobs)))
        status = stored_status
        if stored_status.active:  # derived: PROCESSING from the moment any of its jobs is taken
            started = row["current_step"] > 0 or any(j["status"] != JobStatus.QUEUED for j in job_rows)
            status = JobStatus.PROCESSING if started else JobStatus.QUEUED
        progress = 100 if status == JobStatus.DONE else min(99, sum(s.progress for s in states) // len(states))
        started_at = row["started_at"]
        if started_at is None:
            started_at = min((j["started_at"] for j in job_rows if j["started_at"] is not None), default=None)
        return Workflow(
            id=row["id"], key_id=row["key_id"], status=status, progress=progress, steps=states,
            input_file_ids=json.loads(row["input_file_ids"]), result_file_ids=json.loads(row["result_file_ids"]),
            bundle_file_id=row["bundle_file_id"], preset=row["preset"], tag=row["tag"],
            webhook_url=row["webhook_url"], current_step=row["current_step"], error_code=row["error_code"],
            error_message=row["error_message"], error_step=row["error_step"], created_at=row["created_at"],
            started_at=started_at, finished_at=row["finished_at"], updated_at=row["updated_at"])

    # ---- moving on ----

    def job_ended(self, job: Job) -> None:
        """A job has ended (done, failed, canceled): move its workflow, if it has one, on."""
        if job.workflow_id is not None:
            try:
                self.advance(job.workflow_id)
            except Exception:  # the housekeeping sweep tries again
                log.exception("advancing workflow %s failed", job.workflow_id)

    def sweep(self) -> None:
        """Advance every running workflow: whatever a crash left between a job's end and its advance."""
        for row in self.db.all("select id from workflows where status in (?, ?)", *ACTIVE):
            try:
                self.advance(row["id"])
            except Exception:
                log.exception("advancing workflow %s failed", row["id"])

    def advance(self, workflow_id: str) -> None:
        """Decide from the current step's jobs what comes next, and do it (guarded by that step)."""
        row = self.db.one("select * from workflows where id = ?", workflow_id)
        if row is None or not JobStatus(row["status"]).active:
            return
        step = row["current_step"]
        specs = [StepSpec.from_json(s) for s in json.loads(row["steps"])]
        jobs = [Job.from_row(r) for r in self.db.all(
            "select * from jobs where workflow_id = ? and step = ? order by created_at, id", workflow_id, step)]
        if not jobs:
            inputs = json.loads(row["input_file_ids"]) if step == 0 else self._outputs(workflow_id, step - 1)
            self._start_step(row, specs, step, inputs)
            return
        ended = next((j for j in jobs if j.status in (JobStatus.FAILED, JobStatus.CANCELED)), None)
        if ended is not None:
            name = self._input_names(ended)
            status = JobStatus.FAILED if ended.status == JobStatus.FAILED else JobStatus.CANCELED
            verb = "failed on" if status == JobStatus.FAILED else "was canceled while working on"
            self._end(workflow_id, step, status, ended.error_code or "canceled",
                      f"Step {step + 1} ({specs[step].tool}) {verb} {name}: {ended.error_message or 'canceled'}")
            return
        if any(j.status != JobStatus.DONE for j in jobs):
            return  # still running: status and progress are read from the jobs
        outputs = [fid for j in jobs for fid in j.result_file_ids]
        if step + 1 < len(specs):
            with self.events.changing() as conn:
                moved = conn.execute("update workflows set current_step = ?, updated_at = ? where id = ?"
                                     " and current_step = ? and status in (?, ?)",
                                     (step + 1, now(), workflow_id, step, *ACTIVE)).rowcount
            if moved:
                self._start_step(self._row(workflow_id), specs, step + 1, outputs)
            return
        bundle = self._bundle(row, outputs) if len(outputs) > 1 else None
        finished = self._end(workflow_id, step, JobStatus.DONE, None, None, outputs, bundle.id if bundle else None)
        if not finished and bundle is not None:  # someone else ended it first
            self.files.delete(bundle.id)

    def cancel(self, workflow_id: str, caller: Caller) -> Workflow:
        """Cancel a running workflow: its running jobs are canceled, the steps not begun never start."""
        self.get(workflow_id, caller)
        if not self._end(workflow_id, None, JobStatus.CANCELED, "canceled", "Canceled on request."):
            raise Conflict(f"Workflow {workflow_id} is already {self.get(workflow_id, caller).status}.",
                           code="workflow_finished")
        return self.get(workflow_id, caller)

    def _start_step(self, row: Row, specs: list[StepSpec], step: int, inputs: list[str]) -> None:
        """Queue step ``step``'s jobs on ``inputs``; a step that cannot run on them ends the workflow."""
        workflow_id = row["id"]
        spec = specs[step]
        caller = Caller(key=self._key(row["key_id"]), any_owner=True)
        try:
            tool = self.catalogue.get(spec.tool)
            if tool is None:
                raise InvalidParams(f"The tool {spec.tool} is no longer installed.", code="unknown_tool")
            secrets = self.sealer.unseal(row["secret_steps"]).get(str(step), {})
            model = tool.params.model_validate({**spec.params, **secrets})
            fmt = spec.output_format or tool.produces[0]
            groups = _groups(tool, inputs)
            for group in groups:
                self.jobs.validate(caller, tool.id, group, model.revealed(), fmt, continuing=True)
        except ServiceError as exc:
            names = ", ".join(self.files.get(f, any_owner=True, include_deleted=True).original_name for f in inputs)
            self._end(workflow_id, step, JobStatus.FAILED, exc.code,
                      f"Step {step + 1} ({spec.tool}) cannot run on {names or 'its inputs'}: {exc.detail}")
            return
        with self.events.changing() as conn:
            current = conn.execute("select status, current_step from workflows where id = ?",
                                   (workflow_id,)).fetchone()
            begun = conn.execute("select 1 from jobs where workflow_id = ? and step = ? limit 1",
                                 (workflow_id, step)).fetchone()
            if current is None or not JobStatus(current["status"]).active or current["current_step"] != step or begun:
                return  # another thread or process got here first, or the workflow ended meanwhile
            made = []
            for group in groups:
                self.jobs.charge(conn, caller, refuse=False)  # the quota let the workflow in: it runs to its end
                made.append(self.jobs.insert(conn, row["key_id"], tool, model, fmt, group, tag=row["tag"],
                                             workflow_id=workflow_id, step=step))
        for job in made:
            self.enqueue(job.id)

    def _end(self, workflow_id: str, step: int | None, status: JobStatus, code: str | None, message: str | None,
             outputs: list[str] | None = None, bundle_id: str | None = None) -> bool:
        """End the workflow (if it is still running, and still on ``step`` when given), cancel its jobs
        still running, record the event, and delete what its earlier steps made. False: it had ended."""
        t = now()
        with self.events.changing() as conn:
            guard = " and current_step = ?" if step is not None else ""
            ended = conn.execute(
                "update workflows set status = ?, error_code = ?, error_message = ?, error_step = ?,"
                " result_file_ids = ?, bundle_file_id = ?, finished_at = ?, updated_at = ?, secret_steps = null,"
                " started_at = coalesce(started_at, (select min(started_at) from jobs where workflow_id = ?))"
                f" where id = ? and status in (?, ?){guard}",
                (status, code, message, step if status != JobStatus.DONE else None, json.dumps(outputs or []),
                 bundle_id, t, t, workflow_id, workflow_id, *ACTIVE, *((step,) if step is not None else ())),
            ).rowcount
            if not ended:
                return False
            for job in conn.execute("select id from jobs where workflow_id = ? and status in (?, ?)",
                                    (workflow_id, *ACTIVE)).fetchall():
                conn.execute("update jobs set status = ?, finished_at = ?, updated_at = ?, error_code = 'canceled',"
                             " error_message = ?, secret_params = null where id = ?",
                             (JobStatus.CANCELED, t, t, "Its workflow ended.", job["id"]))
                append(conn, job["id"], TYPE_OF_STATUS[JobStatus.CANCELED])
            row = conn.execute("select * from workflows where id = ?", (workflow_id,)).fetchone()
            job_rows = conn.execute(f"select {JOB_COLUMNS} from jobs where workflow_id = ?"
                                    " order by step, created_at, id", (workflow_id,)).fetchall()
            append_workflow(conn, self._workflow(row, job_rows), WORKFLOW_TYPE_OF_STATUS[status])
        self._clean(workflow_id, row["steps"])
        return True

    def _clean(self, workflow_id: str, steps_json: str) -> None:
        """Delete what the steps before the last made: only inputs and final outputs outlive a workflow."""
        last = len(json.loads(steps_json)) - 1
        for job in self.db.all("select result_file_ids, bundle_file_id from jobs where workflow_id = ? and step < ?",
                               workflow_id, last):
            for file_id in [*json.loads(job["result_file_ids"]), *([job["bundle_file_id"]] if job["bundle_file_id"]
                                                                    else [])]:
                self.files.delete(file_id)

    def _bundle(self, row: Row, outputs: list[str]) -> StoredFile:
        """One ZIP of a workflow's outputs, named after its first input."""
        first = self.files.get(json.loads(row["input_file_ids"])[0], any_owner=True, include_deleted=True)
        with tempfile.TemporaryDirectory(dir=self.files.tmp_dir) as tmp:
            path = Path(tmp) / "bundle.zip"
            seen: set[str] = set()
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, strict_timestamps=False) as zf:  # files before 1980
                for file_id in outputs:
                    f = self.files.get(file_id, any_owner=True)
                    zf.write(self.files.path_of(f.id), _unique(f.original_name, seen))
            return self.files.add(path, f"{Path(first.original_name).stem or 'results'}-workflow.zip",
                                  key_id=row["key_id"], kind="bundle", fmt="zip")

    def _outputs(self, workflow_id: str, step: int) -> list[str]:
        rows = self.db.all("select result_file_ids from jobs where workflow_id = ? and step = ?"
                           " order by created_at, id", workflow_id, step)
        return [fid for r in rows for fid in json.loads(r["result_file_ids"])]

    def _input_names(self, job: Job) -> str:
        names = []
        for file_id in job.input_file_ids:
            try:
                names.append(self.files.get(file_id, any_owner=True, include_deleted=True).original_name)
            except ServiceError:
                names.append(file_id)
        return ", ".join(names)

    def _row(self, workflow_id: str) -> Row:
        row = self.db.one("select * from workflows where id = ?", workflow_id)
        assert row is not None
        return row

    def _key(self, key_id: str | None) -> Any:
        if key_id is None:
            return None
        try:
            return self.keys.get(key_id)
        except KeyError:
            return None


def _groups(tool: Tool, inputs: list[str]) -> list[list[str]]:
    """The jobs of a step: one for all its inputs (a merging tool), or one per input."""
    return [inputs] if tool.merges_inputs else [[file_id] for file_id in inputs]


def _in_step(exc: ServiceError, index: int, tool_id: str) -> ServiceError:
    """The same error, saying which step it is about."""
    exc.detail = f"Step {index + 1} ({tool_id}): {exc.detail}"
    exc.errors = {(k if k.startswith("inputFileIds") else f"steps.{index}.{k}"): v
                  for k, v in (exc.errors or {}).items()} or {f"steps.{index}": [exc.detail]}
    exc.args = (exc.detail,)
    return exc


def _step_status(jobs: list[Row], workflow_status: JobStatus) -> JobStatus:
    statuses = {JobStatus(j["status"]) for j in jobs}
    if not statuses:  # not begun: waits, or never will
        return JobStatus.QUEUED if workflow_status.active else JobStatus.CANCELED
    for final in (JobStatus.FAILED, JobStatus.CANCELED):
        if final in statuses:
            return final
    if statuses == {JobStatus.DONE}:
        return JobStatus.DONE
    return JobStatus.QUEUED if statuses == {JobStatus.QUEUED} else JobStatus.PROCESSING


def _step_progress(jobs: list[Row]) -> int:
    if not jobs:
        return 0
    return sum(100 if j["status"] == JobStatus.DONE else j["progress"] for j in jobs) // len(jobs)


def _unique(name: str, seen: set[str]) -> str:
    """``name``, or ``name (2)`` ... when an earlier file in the same ZIP has it."""
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    candidate, n = name, 1
    while candidate in seen:
        n += 1
        candidate = f"{stem} ({n}){dot}{ext}"
    seen.add(candidate)
    return candidate
