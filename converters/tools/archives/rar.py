"""RAR through an external reader found at run time: ``unar`` (with ``lsar``), else ``bsdtar``.

No Python library reads RAR here, and none is required: the tools say how to install a reader when a RAR
arrives and none is found (``engine_missing``).

* **unar** (The Unarchiver): ``lsar -ja`` lists the entries (names, kinds, declared sizes, compressed sizes) and
  the listing is checked like a ZIP's directory; then each regular file is read by index on unar's standard
  output (``unar -o - -i``), counted as it comes and cut off one byte past its declared size. unar reads RAR 1.5
  to 5, solid and encrypted archives (the password goes on its command line, ``-p``).
* **bsdtar** (libarchive; ``tar`` on macOS and Windows 10+): the RAR is rewritten as a tar stream on its standard
  output (``bsdtar -cf - @archive``), read here member by member as any tar is. It reads neither encrypted RAR
  archives nor solid RAR 3 ones.

The external program never writes a file: everything it gives goes through a pipe into the job's checks.
It runs in its own process group, dies with the conversion, and works in a folder inside the job's.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from converters.base import ConversionError, InputFile
from converters.engines.procs import kill_tree, popen_kwargs, tail
from converters.inputs.archives import ArchiveLimits, Kind, entry_parts, shown
from converters.tools.archives.common import BSDTAR, CHUNK, UNAR, Entry
from converters.tools.archives.readers import Reader, Sink, constant, read_tar
from converters.tools.archives.streams import PipeStream, damaged

LISTING_LIMIT = 64 * 1024**2  # bytes of lsar's listing: far more than the entry limit needs
LISTING_TIMEOUT = 120.0
NEEDS_PASSWORD = "requires a password"
_VOLUME = re.compile(r"(\.rar|\.r\d\d|\.\d\d\d|\.exe|\.sfx)$", re.IGNORECASE)
_SOLID = object()  # the group of a RAR's solid entries: one block for the ratio


def bsdtar_path() -> str | None:
    """bsdtar, or a ``tar`` that is bsdtar (macOS, Windows 10 and later)."""
    found = shutil.which("bsdtar")
    if found:
        return found
    tar = shutil.which("tar")
    if tar is None:
        return None
    try:
        version = subprocess.run([tar, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return tar if "bsdtar" in version.stdout else None


def rar_backend() -> tuple[str, dict[str, str]] | None:
    """``("unar", {"unar": ..., "lsar": ...})``, ``("bsdtar", {"bsdtar": ...})`` or ``None``."""
    unar, lsar = shutil.which("unar"), shutil.which("lsar")
    if unar and lsar:
        return "unar", {"unar": unar, "lsar": lsar}
    bsdtar = bsdtar_path()
    if bsdtar:
        return "bsdtar", {"bsdtar": bsdtar}
    return None


def missing_backend() -> ConversionError:
    return ConversionError("engine_missing", "Reading RAR archives needs unar or bsdtar, and neither is installed. "
                                             f"unar: {UNAR.install_hint} bsdtar: {BSDTAR.install_hint}")


def _child_env(work: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if work is not None:
        env["TMPDIR"] = env["TMP"] = env["TEMP"] = str(work)
    env["LC_ALL"] = env.get("LC_ALL") or "C.UTF-8"
    return env


def start(cmd: Sequence[str], work: Path | None, stderr: IO[bytes] | int) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                                cwd=work, env=_child_env(work), **popen_kwargs())  # type: ignore[call-overload]
    except OSError as exc:
        raise ConversionError("engine_missing", f"{Path(cmd[0]).name} could not be started: {exc}") from exc


def _lsar_kind(item: dict[str, Any]) -> tuple[Kind, bool]:
    mode = int(item.get("XADPosixPermissions") or 0)
    if item.get("XADIsLink") or item.get("XADIsHardLink"):
        return "link", False
    if item.get("XADIsDirectory"):
        return "dir", False
    if any(item.get(key) for key in ("XADIsCharacterDevice", "XADIsBlockDevice", "XADIsFIFO", "XADIsResourceFork")):
        return "special", False
    if mode and (mode & 0o170000) not in (0, 0o100000):
        return ("dir" if mode & 0o170000 == 0o040000 else "special"), False
    return "file", bool(mode & 0o111)


def _lsar_time(value: Any) -> float | None:
    try:
        return datetime.strptime(str(value), "%Y-%m-%d %H:%M:%S %z").timestamp()
    except ValueError:
        return None


class RarReader(Reader):
    def __init__(self, source: InputFile, password: str | None, limits: ArchiveLimits) -> None:
        super().__init__(source, password, limits)
        self.backend = rar_backend()
        self._headers_encrypted = False  # its list of files needed the password (every entry then does)

    # ---- where the archive is read from

    def _archive_path(self) -> Path | None:
        """The path to hand the reader. unar looks beside a ``.rar``/``.r00``/``.partN.rar`` file for the other
        volumes of a set: such a name is first linked alone into the work folder (stored uploads have no such
        name). ``None`` at job creation for such a name: the listing waits for the job."""
        if not _VOLUME.search(self.path.name):
            return self.path
        if self.work is None:
            return None
        folder = hashlib.sha256(str(self.path.resolve()).encode()).hexdigest()[:16]  # one per archive of the job
        alone = self.work / "rar" / folder / "input.rar"
        alone.parent.mkdir(parents=True, exist_ok=True)
        if not alone.exists():
            try:
                os.link(self.path, alone)
            except OSError:
                try:
                    alone.symlink_to(self.path.resolve())
                except OSError:
                    shutil.copyfile(self.path, alone)
        return alone

    # ---- listing (unar)

    def listing(self) -> list[Entry] | None:
        if self.backend is None:
            raise missing_backend()
        if self.backend[0] != "unar":
            return None
        if self._listed is None:
            path = self._archive_path()
            if path is None:
                return None
            self._listed = self._list(path)
        return self._listed

    def _list(self, path: Path) -> list[Entry]:
        """The listing, read without the password first: lsar and unar take a password only on their command
        line, which every local user can read (``/proc/*/cmdline``), so it goes there only when the
        archive needs it (its list of files is encrypted here; an encrypted entry, when it is read)."""
        try:
            return self._lsar(path, None)
        except ConversionError as exc:
            if exc.code != "password_protected" or self.password is None:
                raise
        self._headers_encrypted = True
        return self._lsar(path, self.password)

    def _lsar(self, path: Path, password: str | None) -> list[Entry]:
        assert self.backend is not None
        cmd = [self.backend[1]["lsar"], "-ja", "-nr", *(["-p", password] if password else []), str(path)]
        code, said = self._collect(cmd)
        data: dict[str, Any] = {}
        if "{" in said:
            try:
                data, _ = json.JSONDecoder().raw_decode(said, said.index("{"))
            except ValueError:
                data = {}
        if code != 0 or not isinstance(data.get("lsarContents"), list) or data.get("lsarError"):
            if NEEDS_PASSWORD in said:
                raise ConversionError("password_protected", f"{self.label} is encrypted (even its list of files): "
                                                            "give its password.")
            if password is not None and NEEDS_PASSWORD in self._collect([*cmd[:3], *cmd[5:]])[1]:
                raise ConversionError("wrong_password", f"The password is wrong for {self.label} (or unar cannot "
                                                        "decrypt its list of files).")
            raise damaged(f"{self.label} (RAR)", f"lsar failed (exit {code}, error {data.get('lsarError')}); a part "
                                                 "of a multi-volume set cannot be read alone")
        entries: list[Entry] = []
        for item in data["lsarContents"]:
            name = str(item.get("XADFileName", ""))
            kind, executable = _lsar_kind(item)
            size = int(item.get("XADFileSize") or 0) if kind == "file" else None
            packed = item.get("XADCompressedSize")
            entry = Entry(name, entry_parts(name), kind, size, int(packed) if packed is not None else None,
                          _lsar_time(item.get("XADLastModificationDate")), executable,
                          bool(item.get("XADIsEncrypted")), int(item.get("XADIndex", len(entries))))
            if item.get("XADIsSolid") or item.get("XADFirstSolidIndex") is not None:
                entry.group, entry.packed = _SOLID, entry.packed or 0
            entries.append(entry)
            if len(entries) > self.limits.entries:
                break
        return entries

    def _collect(self, cmd: Sequence[str]) -> tuple[int, str]:
        """Run the lister, its error messages mixed in: what it says, at most ``LISTING_LIMIT`` bytes, within
        ``LISTING_TIMEOUT`` seconds."""
        proc = start(cmd, self.work, subprocess.STDOUT)
        assert proc.stdout is not None
        out = bytearray()
        deadline = time.monotonic() + LISTING_TIMEOUT
        try:
            while chunk := proc.stdout.read1(CHUNK):  # type: ignore[attr-defined]
                out += chunk
                if len(out) > LISTING_LIMIT:
                    raise ConversionError("input_too_large", f"{self.label}'s list of files is larger than "
                                                             f"{LISTING_LIMIT:,} bytes.")
                if time.monotonic() > deadline:
                    raise ConversionError("timeout", f"lsar did not list {self.label} within "
                                                     f"{LISTING_TIMEOUT:.0f} s.")
            code = proc.wait(timeout=LISTING_TIMEOUT)
        except BaseException:
            kill_tree(proc)
            raise
        finally:
            proc.stdout.close()
        return code, out.decode("utf-8", "replace")

    # ---- reading

    def read_all(self, sink: Sink) -> None:
        if self.backend is None:
            raise missing_backend()
        if self.backend[0] == "unar":
            self._read_unar(sink)
        else:
            self._read_bsdtar(sink)

    def _stderr(self, name: str) -> IO[bytes]:
        assert self.work is not None
        (self.work / "rar").mkdir(parents=True, exist_ok=True)
        return open(self.work / "rar" / name, "w+b")  # noqa: SIM115 - closed by the caller's with

    def _read_unar(self, sink: Sink) -> None:
        assert self.backend is not None
        entries = self.listing()
        path = self._archive_path()
        assert entries is not None and path is not None
        for entry in entries:
            writer = sink.begin(entry, constant(None if entry.group is _SOLID else entry.packed))
            if writer is None:
                continue
            if entry.encrypted and self.password is None:
                raise ConversionError("password_protected", f"{self.label} is encrypted: give its password.")
            secret = ["-p", self.password] if self.password is not None and (
                entry.encrypted or self._headers_encrypted) else []
            cmd = [self.backend[1]["unar"], "-q", "-nr", "-o", "-", *secret, "-i", str(path), str(entry.key)]
            with self._stderr("unar.err") as err:
                proc = start(cmd, self.work, err)
                assert proc.stdout is not None
                produced = 0
                try:
                    while chunk := proc.stdout.read1(CHUNK):  # type: ignore[attr-defined]
                        produced += len(chunk)
                        writer.write(chunk)  # counted: stops one byte past the declared size; looks at cancel
                    code = proc.wait()
                except BaseException:
                    kill_tree(proc)
                    raise
                finally:
                    proc.stdout.close()
                err.seek(0)
                said = err.read(64 * 1024).decode("utf-8", "replace")
            if code != 0 or produced != entry.size:
                self._unar_failed(entry, code, produced, said)
            writer.finish()

    def _unar_failed(self, entry: Entry, code: int, produced: int, said: str) -> None:
        if NEEDS_PASSWORD in said:
            raise ConversionError("password_protected", f"{self.label} is encrypted: give its password.")
        if entry.encrypted and self.password is not None:
            # unar does not always notice a wrong password: what comes out is then short or fails its check
            raise ConversionError("wrong_password", f"The password is wrong for {self.label} (or the archive is "
                                                    "damaged).")
        detail = tail(said) or f"{produced:,} bytes came out of {entry.size:,} declared"
        raise damaged(f"{self.label}: {shown(entry.name)}", f"unar failed (exit {code}): {detail}")

    def _read_bsdtar(self, sink: Sink) -> None:
        assert self.backend is not None
        cmd = [self.backend[1]["bsdtar"], "-c", "-f", "-", "--format", "pax", f"@{self.path.resolve()}"]
        failure: ConversionError | None = None
        with self._stderr("bsdtar.err") as err:
            proc = start(cmd, self.work, err)
            assert proc.stdout is not None
            stream = PipeStream(proc.stdout, self.limits.total_bytes + 64 * 1024**2)
            try:
                try:
                    read_tar(stream, lambda: stream.consumed, sink, self.label)
                    drained = 0  # the padding bsdtar writes after the end marker
                    while chunk := proc.stdout.read1(CHUNK):  # type: ignore[attr-defined]
                        drained += len(chunk)
                        if drained > 16 * CHUNK:
                            raise damaged(f"{self.label} (RAR)", "bsdtar wrote past the end of the archive")
                    code = proc.wait()
                except ConversionError as exc:
                    if exc.code != "damaged_input":
                        raise
                    failure = exc
                    kill_tree(proc)
                    code = proc.wait()
            except BaseException:
                kill_tree(proc)
                raise
            finally:
                proc.stdout.close()
            err.seek(0)
            said = err.read(64 * 1024).decode("utf-8", "replace")
        if code == 0 and failure is None:
            return
        if "Encryption is not supported" in said or "encrypted" in said.lower():
            if self.password is None:
                raise ConversionError("password_protected", f"{self.label} is encrypted; reading it needs its "
                                                            "password and unar (bsdtar cannot decrypt RAR). "
                                                            f"{UNAR.install_hint}")
            raise ConversionError("engine_missing", f"{self.label} is encrypted, which bsdtar cannot read. "
                                                    f"Install unar: {UNAR.install_hint}")
        if "solid" in said.lower():
            raise ConversionError("unsupported_format", f"{self.label} is a solid RAR archive, which bsdtar cannot "
                                                        f"read. Install unar: {UNAR.install_hint}")
        if failure is not None and not said.strip():
            raise failure
        said = said.replace(str(self.path.resolve()), self.label).replace(str(self.path), self.label)
        raise damaged(f"{self.label} (RAR)", f"bsdtar failed (exit {code}): {tail(said)}. If the archive is "
                                             "encrypted, bsdtar cannot read it: install unar")
