"""Where the entries a reader goes through end up: files in the job's output folder (``archive-extract``), or
entries of a new archive (``archive-convert``). Every byte is counted by the job's meter before it is written."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO

from converters.base import Context, ConversionError, atomic_output
from converters.inputs.archives import EntryMeter, Meter, shown
from converters.tools.archives.common import CANCEL_EVERY, Entry, UniqueNames, clean_member, fit_name, flat_name
from converters.tools.archives.writers import ArchiveWriter

MAX_NAMED = 5  # skipped entries named in a note


class CountedFile:
    """One entry's bytes on their way to a file: counted (the meter may refuse them), then written."""

    def __init__(self, sink: BaseSink, entry: Entry, counter: EntryMeter, path: Path) -> None:
        self.sink = sink
        self.entry = entry
        self.counter = counter
        self.path = path
        self.file: IO[bytes] | None = open(path, "xb")  # noqa: SIM115 - closed in finish() or discard()
        self.since = 0

    def write(self, data: bytes) -> None:
        self.counter.add(len(data))
        assert self.file is not None
        try:
            self.file.write(data)
        except OSError as exc:  # a full disk: the reader must not take it for a damaged archive
            exc.filekiln_sink = True  # type: ignore[attr-defined]
            raise
        self.since += len(data)
        self.sink.wrote(len(data))
        if self.since >= CANCEL_EVERY:
            self.since = 0
            self.sink.ctx.check_cancelled()

    def finish(self) -> None:
        assert self.file is not None
        self.file.close()
        self.file = None
        self.sink.finished(self)

    def discard(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
        self.path.unlink(missing_ok=True)


class BaseSink:
    """Takes the regular files, skips folders silently and links, devices and FIFOs with a note."""

    def __init__(self, ctx: Context, meter: Meter) -> None:
        self.ctx = ctx
        self.meter = meter
        self.skipped: list[Entry] = []
        self.files = 0
        self.current: CountedFile | None = None
        self.report: Callable[[], None] = lambda: None
        self._reported = 0

    def begin(self, entry: Entry, packed: Callable[[], int | None]) -> CountedFile | None:
        self.ctx.check_cancelled()
        counter = self.meter.entry(entry.name, entry.size if entry.kind == "file" else None, packed)
        if entry.kind == "dir":
            return None
        if entry.kind != "file":
            self.skipped.append(entry)
            return None
        if not entry.parts:
            raise ConversionError("unsafe_archive", f"The archive has a file without a name ({shown(entry.name)}).")
        if self.current is not None:  # a reader that did not finish the previous one: never keep half a file
            self.current.discard()
        self.current = CountedFile(self, entry, counter, self.target(entry))
        return self.current

    def target(self, entry: Entry) -> Path:
        raise NotImplementedError

    def finished(self, counted: CountedFile) -> None:
        self.current = None
        self.files += 1
        self.place(counted)

    def place(self, counted: CountedFile) -> None:
        raise NotImplementedError

    def wrote(self, count: int) -> None:
        self._reported += count
        if self._reported >= 4 * 1024**2:
            self._reported = 0
            self.report()

    def abandon(self) -> None:
        """After a failure: drop the entry being written."""
        if self.current is not None:
            self.current.discard()
            self.current = None

    def skipped_note(self, label: str) -> str | None:
        if not self.skipped:
            return None
        named = ", ".join(shown(e.name) for e in self.skipped[:MAX_NAMED])
        more = f" and {len(self.skipped) - MAX_NAMED:,} more" if len(self.skipped) > MAX_NAMED else ""
        count = len(self.skipped)
        return (f"{label}: {count:,} entr{'y was' if count == 1 else 'ies were'} not extracted ({named}{more}): "
                "symbolic and hard links, devices and FIFOs are never written or followed.")


class ExtractSink(BaseSink):
    """Each file becomes a file of the output folder, named after its path in the archive (see ``flat_name``),
    written under a temporary name and renamed when complete (:func:`~converters.base.atomic_output`)."""

    def __init__(self, ctx: Context, meter: Meter, keep_folders: bool) -> None:
        super().__init__(ctx, meter)
        self.keep_folders = keep_folders
        self.prefix: tuple[str, ...] = ()
        self.names = UniqueNames()
        self.written: list[Path] = []
        self._pending: dict[int, tuple[Path, contextlib.ExitStack]] = {}

    def target(self, entry: Entry) -> Path:
        parts = entry.parts if self.keep_folders else entry.parts[-1:]
        final = self.ctx.out_dir / self.names.claim(flat_name((*self.prefix, *parts)))
        stack = contextlib.ExitStack()
        tmp = stack.enter_context(atomic_output(final))
        self._pending[id(entry)] = (final, stack)
        return tmp

    def place(self, counted: CountedFile) -> None:
        final, stack = self._pending.pop(id(counted.entry))
        stack.close()  # renames the temporary file to its final name
        self.written.append(final)
        if counted.entry.mtime is not None:
            with contextlib.suppress(OSError, OverflowError, ValueError):
                os.utime(final, (counted.entry.mtime, counted.entry.mtime))

    def abandon(self) -> None:
        super().abandon()
        for _, stack in self._pending.values():
            stack.__exit__(RuntimeError, RuntimeError("abandoned"), None)  # removes the temporary file
        self._pending.clear()

    def remove_written(self) -> None:
        """After a failure: the files already complete go too (the job engine discards the folder as well)."""
        for path in self.written:
            path.unlink(missing_ok=True)
        self.written.clear()


class ConvertSink(BaseSink):
    """Each file goes to a temporary file in the work folder, then into the new archive under its path
    (control characters dropped, repeats getting ``-2``), then the temporary file goes."""

    def __init__(self, ctx: Context, meter: Meter, writer: ArchiveWriter, work: Path) -> None:
        super().__init__(ctx, meter)
        self.writer = writer
        self.work = work
        self.names = UniqueNames()
        self.count = 0

    def target(self, entry: Entry) -> Path:
        self.count += 1
        return self.work / f"entry-{self.count}"

    def place(self, counted: CountedFile) -> None:
        entry = counted.entry
        arcname = self.names.claim("/".join(fit_name(clean_member(part)) for part in entry.parts))
        try:
            self.writer.add(counted.path, arcname, mtime=entry.mtime, executable=entry.executable)
        finally:
            counted.path.unlink(missing_ok=True)
