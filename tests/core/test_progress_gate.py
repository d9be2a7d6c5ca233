"""A job's progress: values closer together than the write interval are held, and a held value is
written at the next tick, so an engine that goes quiet after a burst is shown where it got to."""

from __future__ import annotations

from localapi.core.jobs.progress import WRITE_INTERVAL, ProgressGate


def test_a_burst_writes_its_first_value_and_the_next_tick_writes_its_last() -> None:
    gate = ProgressGate()
    gate.started(1, 100.0)
    assert gate.offer(3, 100.0 + WRITE_INTERVAL) == 3
    # the rest of the burst comes within the interval: held
    assert [gate.offer(v, 100.0 + WRITE_INTERVAL + 0.01 * i) for i, v in enumerate((5, 8, 10), 1)] == [None] * 3
    assert gate.due(100.0 + WRITE_INTERVAL + 0.1) is None  # too soon after the write of 3
    # the engine is now silent (Whisper's first window): the tick after the interval writes the 10
    assert gate.due(100.0 + 2 * WRITE_INTERVAL) == 10
    assert gate.shown == 10
    assert gate.due(200.0) is None  # nothing new: nothing to write


def test_a_value_is_written_once_and_never_goes_back() -> None:
    gate = ProgressGate()
    assert gate.offer(5, 10.0) == 5
    assert gate.offer(5, 20.0) is None
    assert gate.offer(4, 30.0) is None
    assert gate.due(40.0) is None
    assert gate.offer(6, 50.0) == 6
    assert (gate.value, gate.shown) == (6, 6)
