"""Run a function off the GUI thread and hear back through signals, on the GUI thread.

A tiny version of superqt's ``thread_worker``: ``Background(pool).run(fn, on_done, on_error)``.
The callbacks are delivered by queued signal connections, so they touch widgets safely.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

log = logging.getLogger("filekiln.desktop")


class _Relay(QObject):
    done = Signal(object)
    failed = Signal(object)


class _Task(QRunnable):
    def __init__(self, fn: Callable[[], Any], relay: _Relay) -> None:
        super().__init__()
        self.fn = fn
        self.relay = relay

    def run(self) -> None:
        try:
            result = self.fn()
        except BaseException as exc:  # reported to the GUI, never lost in a thread
            log.debug("background task failed:\n%s", traceback.format_exc())
            self._emit(self.relay.failed, exc)
        else:
            self._emit(self.relay.done, result)

    @staticmethod
    def _emit(signal: Any, value: object) -> None:
        try:
            signal.emit(value)
        except RuntimeError:  # the receiver went away (the app is closing): nobody to tell
            pass


class Background(QObject):
    """A small thread pool for one concern (polling, submitting ...), so one cannot starve another."""

    def __init__(self, threads: int = 1, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(threads)
        self._relays: set[_Relay] = set()

    def run(self, fn: Callable[[], Any], on_done: Callable[[Any], None] | None = None,
            on_error: Callable[[BaseException], None] | None = None) -> None:
        relay = _Relay()  # lives on the GUI thread: its signals are queued to it
        self._relays.add(relay)

        def finish(_: object) -> None:
            self._relays.discard(relay)
            relay.deleteLater()

        if on_done is not None:
            relay.done.connect(on_done)
        if on_error is not None:
            relay.failed.connect(on_error)
        else:
            relay.failed.connect(lambda exc: log.error("background task failed: %s", exc))
        relay.done.connect(finish)
        relay.failed.connect(finish)
        self.pool.start(_Task(fn, relay))

    def wait(self, msecs: int = 30_000) -> bool:
        """Wait for running tasks (used when quitting)."""
        return bool(self.pool.waitForDone(msecs))

    @property
    def busy(self) -> bool:
        return int(self.pool.activeThreadCount()) > 0
