"""How much of a job's progress reaches its readers, and when.

A conversion child reports its progress as often as it likes. Writing each value, with an event for
each, would put a database write behind every percent, so values that come less than an interval
after the last one written are held. A held value is written at the worker's next tick: an engine
that reports 10 % and then works silently for a minute (Whisper decodes the audio quickly, then
transcribes its first 30-second window) is shown at 10 % within a tick, not at 3 % for that minute.
"""

from __future__ import annotations

from dataclasses import dataclass

WRITE_INTERVAL = 0.2  # seconds between two progress writes of one job


@dataclass
class ProgressGate:
    """The progress of one running job: ``value`` is the latest, ``shown`` the latest written."""

    value: int = 0
    shown: int = 0
    written_at: float = 0.0

    def started(self, value: int, t: float) -> None:
        """The value the start itself wrote, at ``t``."""
        self.value = self.shown = value
        self.written_at = t

    def offer(self, value: int, t: float) -> int | None:
        """A new value from the engine, at ``t``: the value to write now, or None (held or not higher)."""
        if value <= self.value:
            return None
        self.value = value
        return self.due(t)

    def due(self, t: float) -> int | None:
        """At a tick: a held value once an interval has passed since the last write, else None."""
        if self.value == self.shown or t - self.written_at < WRITE_INTERVAL:
            return None
        self.shown, self.written_at = self.value, t
        return self.value
