"""The desktop's one way to run work off the GUI thread and hear back, on the GUI thread, through signals.

A tiny version of superqt's ``thread_worker``: ``Background(pool).run(fn, on_done, on_error)``, and
``run_reporting(fn, on_progress, ...)`` for work that tells how far it got. Each call gets a
:class:`TaskSignals` object that lives on the GUI thread; the pool thread emits on it, and Qt queues
the calls over, so the callbacks may touch widgets.

The other way round, a thread the desktop does not own (the job-event feed's tailing thread) calls
us: a :class:`Relay` hands what it is given to the GUI thread the same way, by a queued signal.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal

log = logging.getLogger("filekiln.desktop")

Progress = Callable[[float], None]


class TaskSignals(QObject):
    """What one background task tells the GUI thread. Exactly one of ``done`` and ``failed`` is emitted, last."""

    progress = Signal(float)  # fraction done, 0.0 to 1.0 (only from run_reporting), any number of times
    done = Signal(object)  # the function's return value
    failed = Signal(object)  # the BaseException it raised (the traceback went to the log at debug level)


class _Task(QRunnable):
    def __init__(self, fn: Callable[[], Any], signals: TaskSignals) -> None:
        super().__init__()
        self.fn = fn
        self.signals = signals

    def run(self) -> None:
        try:
            result = self.fn()
        except BaseException as exc:  # reported to the GUI, never lost in a thread
            log.debug("background task failed:\n%s", traceback.format_exc())
            _emit(self.signals.failed, exc)
        else:
            _emit(self.signals.done, result)


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
        self._running: set[TaskSignals] = set()

    def run(self, fn: Callable[[], Any], on_done: Callable[[Any], None] | None = None,
            on_error: Callable[[BaseException], None] | None = None) -> None:
        """Call ``fn()`` in the pool; then ``on_done(result)`` or ``on_error(exc)`` on the GUI thread."""
        signals = self._signals(on_done, on_error)
        self.pool.start(_Task(fn, signals))

    def run_reporting(self, fn: Callable[[Progress], Any], on_progress: Progress,
                      on_done: Callable[[Any], None] | None = None,
                      on_error: Callable[[BaseException], None] | None = None) -> None:
        """Like :meth:`run`, for ``fn(progress)``: each ``progress(fraction)`` it calls reaches ``on_progress``
        on the GUI thread."""
        signals = self._signals(on_done, on_error)
        signals.progress.connect(on_progress)
        self.pool.start(_Task(lambda: fn(lambda fraction: _emit(signals.progress, fraction)), signals))

    def _signals(self, on_done: Callable[[Any], None] | None,
                 on_error: Callable[[BaseException], None] | None) -> TaskSignals:
        signals = TaskSignals()  # made here, on the GUI thread: its signals are queued to it
        self._running.add(signals)

        def finish(_: object) -> None:
            self._running.discard(signals)
            signals.deleteLater()

        if on_done is not None:
            signals.done.connect(on_done)
        if on_error is not None:
            signals.failed.connect(on_error)
        else:
            signals.failed.connect(lambda exc: log.error("background task failed: %s", exc))
        signals.done.connect(finish)
        signals.failed.connect(finish)
        return signals

    def wait(self, msecs: int = 30_000) -> bool:
        """Wait for running tasks (used when quitting)."""
        return bool(self.pool.waitForDone(msecs))

    @property
    def busy(self) -> bool:
        return int(self.pool.activeThreadCount()) > 0


class Relay(QObject):
    """Hands items from a thread that is not ours to the GUI thread, in the order they were sent.

    ``send`` may be called from any thread (it is what a library's callback calls); ``receive`` runs
    on the thread this relay was made on, through a queued connection, one call per item. After
    :meth:`close`, items are dropped: the receiver may be on its way out.
    """

    arrived = Signal(object)  # the item given to send(), once per send, in order; queued to the relay's thread

    def __init__(self, receive: Callable[[Any], None], parent: QObject | None = None) -> None:
        super().__init__(parent)  # made on the GUI thread, so the queued calls land there
        self._open = threading.Event()
        self._open.set()
        self.arrived.connect(receive, Qt.ConnectionType.QueuedConnection)

    def send(self, item: object) -> None:
        """Any thread: queue ``item`` for ``receive`` on the GUI thread."""
        if self._open.is_set():
            _emit(self.arrived, item)

    def close(self) -> None:
        self._open.clear()

    @property
    def open(self) -> bool:
        return self._open.is_set()
