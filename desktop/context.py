"""Everything the windows need, built once for a service: stores, models and controllers. No widgets.

Tests build the same bundle for a temp data dir; ``app.run`` builds it for the real one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from PySide6.QtGui import QIcon

from desktop.controllers.api import ApiController
from desktop.controllers.batches import BatchTracker
from desktop.controllers.jobs import JobsController
from desktop.controllers.presets import PresetsController, preset_entries
from desktop.controllers.watch import WatchController
from desktop.controllers.workflows import WorkflowsController
from desktop.engines import EngineRow, engine_rows
from desktop.models.files import FileEntry, FileListModel
from desktop.models.jobs import JobsModel
from desktop.models.keys import KeysModel
from desktop.models.tools import ToolInfo, ToolTreeModel, tool_infos
from desktop.store import DeliveryStore, Prefs, PresetStore, SettingsFile
from desktop.threads import Background
from localapi.core.service import Service

if TYPE_CHECKING:
    from localapi.server import ApiServer

log = logging.getLogger("filekiln.desktop")


@dataclass
class Desktop:
    service: Service
    folder: Path  # the app's own files inside the data dir
    prefs: Prefs
    presets: PresetStore
    settings_file: SettingsFile
    deliveries: DeliveryStore
    tools: ToolTreeModel
    files: FileListModel
    jobs: JobsModel
    jobs_controller: JobsController
    keys: KeysModel
    api: ApiController
    tracker: BatchTracker
    service_presets: PresetsController  # the service's presets (shared with the API and the CLI)
    workflows: WorkflowsController
    watch: WatchController  # the watch folders: stored in the service, run while the workers run
    background: Background
    workers_started: bool = False
    _closed: bool = field(default=False, repr=False)
    _workers_thread_done: threading.Event = field(default_factory=threading.Event, repr=False)
    _tools_asked: int = field(default=0, repr=False)  # refresh_tools calls so far: only the newest read counts

    @classmethod
    def create(cls, service: Service, server: ApiServer | None = None,
               icon_for: Callable[[FileEntry], QIcon] | None = None, coalesce_ms: int = 100,
               watch_settle_seconds: float = 1.0) -> Desktop:
        folder = service.settings.data_dir / "desktop"
        folder.mkdir(parents=True, exist_ok=True)
        infos = cls.read_tools(service)
        deliveries = DeliveryStore.open(folder / "deliveries.json")
        background = Background(2)
        jobs = JobsModel()
        jobs_controller = JobsController(service, deliveries, {t.id: t.title for t in infos},
                                        coalesce_ms=coalesce_ms)
        jobs_controller.snapshot.connect(jobs.apply)
        tracker = BatchTracker()
        jobs_controller.submitted.connect(tracker.add)
        tools = ToolTreeModel(infos)
        service_presets = PresetsController(service)

        def show_presets() -> None:
            tools.set_presets(preset_entries(service_presets.presets))

        service_presets.changed.connect(show_presets)
        show_presets()
        return cls(
            service=service, folder=folder, prefs=Prefs.load(folder / "desktop.json"),
            presets=PresetStore(folder / "presets.json"),
            settings_file=SettingsFile(service.settings.data_dir / "settings.toml"), deliveries=deliveries,
            tools=tools, files=FileListModel(service.sniff, Background(1), icon_for),
            jobs=jobs, jobs_controller=jobs_controller, keys=KeysModel(service.keys),
            api=ApiController(service, server), tracker=tracker, background=background,
            service_presets=service_presets,
            workflows=WorkflowsController(service, DeliveryStore.open(folder / "workflow_deliveries.json")),
            watch=WatchController(service, settle_seconds=watch_settle_seconds))

    @staticmethod
    def read_tools(service: Service) -> list[ToolInfo]:
        return tool_infos(service.catalogue, service.switches.tool_status)

    def refresh_tools(self) -> None:
        """Tool availability can change (a tool disabled, an engine installed): read it again, off the GUI thread."""

        self._tools_asked += 1
        asked = self._tools_asked

        def changed(infos: list[ToolInfo]) -> None:
            # two reads can overlap on the pool's two threads; one begun before a switch changed may end
            # after the read begun after it, and must not put the old availability back
            if asked == self._tools_asked and infos != self.tools.tools:
                self.tools.set_tools(infos)

        self.background.run(lambda: self.read_tools(self.service), changed)

    def check_params(self, tool_id: str, params: dict[str, Any]) -> dict[str, str]:
        """The tool's own validation of ``params``: field (or "params") -> message; empty when valid."""
        tool = self.service.catalogue.get(tool_id)
        if tool is None:
            return {}
        try:
            tool.params.model_validate(params)
        except ValidationError as exc:
            found: dict[str, str] = {}
            for err in exc.errors():
                name = ".".join(str(p) for p in err["loc"]) or "params"
                found.setdefault(name, str(err["msg"]).removeprefix("Value error, "))
            return found
        return {}

    def update_settings(self, changes: dict[str, Any]) -> None:
        self.settings_file.update(changes)

    def save_prefs(self) -> None:
        self.prefs.save(self.folder / "desktop.json")

    def gather_engines(self) -> list[EngineRow]:
        used_by: dict[str, list[str]] = {}
        for tool in self.service.catalogue:
            for engine in tool.engines:
                used_by.setdefault(engine.name, []).append(tool.title)
        return engine_rows(self.service.health(), used_by, self.service.models_in_use(),
                           dict(self.service.settings.tools))

    def start(self, start_api: bool | None = None) -> None:
        """Watch the jobs (the event feed starts here, whether or not the API does), then start the
        workers (off the GUI thread: recovery reads the job table; what it changes arrives as events),
        the watch folders once the workers run, and the API."""

        def started(_: object) -> None:
            self.workers_started = True
            self.watch.start()

        self.jobs_controller.start()
        self.workflows.start()
        self.watch.refresh()
        self.service_presets.import_legacy(self.presets, {t.id: t.title for t in self.tools.tools})
        self.background.run(self._start_workers, started,
                            lambda exc: log.error("the workers could not start: %s", exc))
        if self.prefs.start_api if start_api is None else start_api:
            self.api.start()

    def _start_workers(self) -> None:
        """Start the workers from a thread that lives until they stop.

        The service starts warm conversion children from the calling thread, and a child is
        killed when the thread that started it ends (``PR_SET_PDEATHSIG`` in the child). A
        thread-pool thread may end at any time, so a dedicated thread starts them and waits.
        """
        ready = threading.Event()
        failure: list[BaseException] = []

        def keep() -> None:
            try:
                self.service.start_workers()
            except BaseException as exc:  # reported through the task below
                failure.append(exc)
                ready.set()
                return
            ready.set()
            self._workers_thread_done.wait()

        threading.Thread(target=keep, daemon=True, name="filekiln-workers").start()
        ready.wait()
        if failure:
            raise failure[0]

    def shutdown(self) -> None:
        """Stop watching the jobs, the watch folders and the API, then the workers (running jobs go back to
        the queue for the next start) and the event feed."""
        if self._closed:
            return
        self._closed = True
        self.background.wait(30_000)
        self.jobs_controller.stop()
        self.workflows.stop()
        self.watch.stop()
        self.service_presets.wait()
        self.api.shutdown()
        self.service.close()
        self._workers_thread_done.set()
