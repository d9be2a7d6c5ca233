"""``archive-extract``, ``archive-create`` and ``archive-convert``."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr

from converters.base import CamelParams, Context, ConversionError, InputFile, ToolEnv, atomic_output, free_name
from converters.inputs.archives import Meter, archive_limits
from converters.inputs.sniff import MIME_TYPES
from converters.tools.archives.common import (
    EXTENSIONS,
    READABLE,
    WRITABLE,
    ArchiveTool,
    UniqueNames,
    archive_stem,
    clean_component,
    fit_name,
    level_field,
    source_name,
)
from converters.tools.archives.readers import Reader, open_reader
from converters.tools.archives.sinks import ConvertSink, ExtractSink
from converters.tools.archives.writers import ArchiveWriter

WORK = ".archive-work"  # inside the output folder: the job engine takes only the files directly in it


def password_field() -> Any:
    return Field(None, max_length=1024, description=(
        "Password of an encrypted archive (ZIP with traditional encryption, 7z, RAR with unar). "
        "Not needed for archives that are not encrypted."))


def secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None and value.get_secret_value() else None


def check_inputs(inputs: Sequence[InputFile], password: str | None, env: ToolEnv | None) -> None:
    limits = archive_limits(env)
    for source in inputs:
        open_reader(source, password, limits).check()


def work_folder(ctx: Context) -> Path:
    work = ctx.out_dir / WORK
    work.mkdir(parents=True, exist_ok=True)
    return work


def out_path(ctx: Context, stem: str, ext: str) -> Path:
    """A fresh output path named ``stem.ext``, ``stem`` cleaned (dots kept: ``report.v2`` stays)."""
    return free_name(ctx.out_dir / f"{fit_name(clean_component(stem), 180)}.{ext}")


def prepared(reader: Reader, work: Path) -> Reader:
    reader.work = work
    return reader


# --------------------------------------------------------------------------- archive-extract


class ExtractParams(CamelParams):
    password: SecretStr | None = password_field()
    names: Literal["path", "name"] = Field("path", description=(
        'How the extracted files are named. "path": the folders of the file joined to its name with "__" '
        '(docs/img/a.png becomes docs__img__a.png). "name": only its own name (a.png). Either way a name that '
        "is taken already gets -2, -3 ... and unsafe characters become _."),
        title="File names",
        json_schema_extra={
            "x-enumLabels": {"path": "Folders in the name", "name": "File name only"},
            "x-enumDescriptions": {
                "path": "The file's folders joined to its name with __: docs/img/a.png becomes docs__img__a.png.",
                "name": "Only its own name: a.png.",
            },
        },
    )


class ArchiveExtract(ArchiveTool):
    """Take every file out of an archive, each in its own format."""

    id = "archive-extract"
    title = "Extract archive"
    description = (
        "Take every file out of a ZIP, 7z, RAR or tar archive (plain, .gz, .bz2, .xz, .zst), or out of a single "
        ".gz/.bz2/.xz/.zst file. The files come out side by side, their folders folded into their names; "
        "links and special files are skipped, archives inside are left as they are."
    )
    accepts = READABLE
    produces = ("keep",)
    params = ExtractParams
    max_inputs = 20

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        check_inputs(inputs, secret(params.password), env)

    def run(self, ctx: Context) -> None:
        params: ExtractParams = ctx.params
        password = secret(params.password)
        limits = archive_limits(ctx.env)
        meter = Meter(limits)  # one count for the job: its files all land in one folder
        sink = ExtractSink(ctx, meter, keep_folders=params.names == "path")
        work = work_folder(ctx)
        count = len(ctx.inputs)
        try:
            for index, source in enumerate(ctx.inputs):
                ctx.check_cancelled()
                reader = prepared(open_reader(source, password, limits), work)
                declared = reader.check()
                sink.prefix = (archive_stem(source_name(source)),) if count > 1 else ()
                sink.report = reporter(ctx.progress, reader, meter, declared, index, count)
                before = sink.files
                reader.read_all(sink)
                ctx.notes.extend(reader.notes)
                note = sink.skipped_note(source_name(source))
                if note:
                    ctx.notes.append(note)
                sink.skipped.clear()
                if sink.files == before:
                    ctx.notes.append(f"{source_name(source)} holds no files.")
                ctx.progress((index + 1) / count)
            if sink.files == 0:
                raise ConversionError("no_output", "The archive holds no files to extract (only folders, links or "
                                                   "special entries)." if count == 1 else
                                                   "The archives hold no files to extract.")
        except BaseException:
            sink.abandon()
            sink.remove_written()
            raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        ctx.progress(1.0)


def reporter(progress: Callable[[float], None], reader: Reader, meter: Meter, declared: int | None, index: int,
             count: int) -> Callable[[], None]:
    start = meter.total

    def report() -> None:
        progress((index + min(reader.fraction(meter.total - start, declared), 1.0)) / count)

    return report


# --------------------------------------------------------------------------- archive-convert


class ConvertParams(CamelParams):
    level: int = level_field()
    password: SecretStr | None = password_field()


class ArchiveConvert(ArchiveTool):
    """Rewrite an archive in another archive format, entry by entry."""

    id = "archive-convert"
    title = "Convert archive"
    description = (
        "Turn an archive into another format (ZIP, 7z, tar, tar.gz, tar.xz, tar.zst), file by file, keeping "
        "folders, names and dates. Reads ZIP, 7z, RAR and every tar; links and special files are left out."
    )
    accepts = READABLE
    produces = WRITABLE
    params = ConvertParams
    max_inputs = 20

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        check_inputs(inputs, secret(params.password), env)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: ConvertParams = ctx.params
        limits = archive_limits(ctx.env)
        meter = Meter(limits)  # one count per archive: each becomes its own
        work = work_folder(ctx)
        fmt = ctx.output_format
        reader = prepared(open_reader(source, secret(params.password), limits), work)
        declared = reader.check()
        target = out_path(ctx, archive_stem(source_name(source)), EXTENSIONS[fmt])
        try:
            with atomic_output(target) as tmp:
                writer = ArchiveWriter(fmt, tmp, params.level, ctx.check_cancelled)
                sink = ConvertSink(ctx, meter, writer, work)
                sink.report = reporter(progress, reader, meter, declared, 0, 1)
                try:
                    reader.read_all(sink)
                    writer.close()
                except BaseException:
                    sink.abandon()
                    writer.abort()
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        ctx.notes.extend(reader.notes)
        note = sink.skipped_note(source_name(source))
        if note:
            ctx.notes.append(note.replace("not extracted", "left out"))
        if sink.files == 0:
            ctx.notes.append(f"{source_name(source)} holds no files: the new archive is empty.")
        if fmt == "tar" and "level" in params.model_fields_set:
            ctx.notes.append("tar does not compress: the level was not used.")
        progress(1.0)


# --------------------------------------------------------------------------- archive-create


class CreateParams(CamelParams):
    level: int = level_field()
    name: str | None = Field(None, min_length=1, max_length=100, description=(
        'Name of the archive, without its extension. Default: the file\'s own name for one file, "archive" '
        "for several."))


class ArchiveCreate(ArchiveTool):
    """Pack files into one archive."""

    id = "archive-create"
    title = "Create archive"
    description = (
        "Pack the files given into one archive: ZIP, 7z, tar, tar.gz, tar.xz or tar.zst. Each file goes in under "
        "its own name; a name given twice gets -2, -3 ..."
    )
    accepts = tuple(MIME_TYPES)
    produces = WRITABLE
    params = CreateParams
    merges_inputs = True

    def run(self, ctx: Context) -> None:
        params: CreateParams = ctx.params
        fmt = ctx.output_format
        if params.name:
            stem = params.name
        elif len(ctx.inputs) == 1:
            stem = Path(source_name(ctx.inputs[0]).replace("\\", "/")).stem or "archive"
        else:
            stem = "archive"
        target = out_path(ctx, stem, EXTENSIONS[fmt])
        total = sum(source.path.stat().st_size for source in ctx.inputs) or 1
        done = 0

        def on_bytes(count: int) -> None:
            nonlocal done
            done += count
            ctx.progress(min(done / total, 0.99))

        names = UniqueNames()
        now = time.time()
        with atomic_output(target) as tmp:
            writer = ArchiveWriter(fmt, tmp, params.level, ctx.check_cancelled)
            try:
                for source in ctx.inputs:
                    ctx.check_cancelled()
                    own = Path(source_name(source).replace("\\", "/")).name
                    writer.add(source.path, names.claim(fit_name(clean_component(own))), mtime=now, on_bytes=on_bytes)
                writer.close()
            except BaseException:
                writer.abort()
                raise
        if fmt == "tar" and "level" in params.model_fields_set:
            ctx.notes.append("tar does not compress: the level was not used.")
        ctx.progress(1.0)
