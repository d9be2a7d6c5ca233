"""Hostile archives against a real server: bombs (ZIP, nested ZIP, tar.gz, zstd, a 7z header), entries that lie
about their size, 100 000 entries, names that point outside, links to /etc/passwd, devices and FIFOs,
repeated names.

Each is refused when the job is created or stopped while it runs, with a clear code; a job's memory stays
flat (its process runs under a 1 GiB address-space cap and is watched); nothing is written outside the job's
folder (no new file in the data dir outside ``jobs/`` and ``files/``, none in the temp dir the server was given);
the job's folder is gone afterwards; and the server still answers. No timing is asserted.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import struct
import tarfile
import time
import uuid
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.conftest import Server, assert_problem, start_server, upload, wait_job, write_settings
from tests.converters.test_archive_tools import (
    GiB,
    MiB,
    RawEntry,
    crc32_zeros,
    deflated,
    member,
    raw_zip,
    seven_zip_declaring,
    tar_bytes,
    zeros_deflate,
    zstd_zero_frames,
)

MEMORY_CAP_MB = 1024
BOUNDED = 512 * 1024**2  # RSS no process may reach while gigabytes sit behind a few kilobytes
PASSWD = Path("/etc/passwd")


# --------------------------------------------------------------------------- a watched server


@dataclass
class Watched:
    server: Server
    client: httpx.Client
    tmpdir: Path  # the server's TMPDIR: no job may leave anything in it


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    """One server for the module, its jobs under a 1 GiB address-space cap, its TMPDIR a folder of its own."""
    root = tmp_path_factory.mktemp("archives-hostile")
    data, tmpdir = root / "data", root / "tmpdir"
    data.mkdir()
    tmpdir.mkdir()
    write_settings(data, job_memory_limit_mb=MEMORY_CAP_MB)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(tmpdir))
        server = start_server(data, root / "server.log")
        try:
            with server.client(server.create_key()) as client:
                watched = Watched(server, client, tmpdir)
                # a first job: what the conversion processes' libraries put in TMPDIR once for all (a media
                # library's session marker) is there before the hostile jobs are watched
                still_answers(watched)
                yield watched
        finally:
            server.stop()


def outside_jobs_and_files(data_dir: Path) -> set[str]:
    # os.walk, unlike rglob, passes over a job folder removed while it walks
    walked = [Path(folder) / name for folder, dirs, files in os.walk(data_dir) for name in (*dirs, *files)]
    return {str(p.relative_to(data_dir)) for p in walked if p.relative_to(data_dir).parts[0] not in ("jobs", "files")}


def rss(pid: int) -> int:
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except psutil.NoSuchProcess:
        return 0


@dataclass
class Outcome:
    refused: dict[str, Any] | None = None  # the API problem, when the job was refused at creation
    job: dict[str, Any] | None = None  # the finished job otherwise
    peak_child: int = 0

    @property
    def code(self) -> str | None:
        if self.refused is not None:
            return str(self.refused["code"])
        assert self.job is not None
        return self.job["errorCode"]


def attempt(w: Watched, name: str, data: bytes, tool: str = "archive-extract", fmt: str | None = None,
            params: dict[str, Any] | None = None) -> Outcome:
    """Upload ``data``, ask for the job, wait for its end while watching the conversion's memory, and check that
    it left nothing behind: no new file outside jobs/ and files/, nothing new in TMPDIR, no job folder."""
    ref = upload(w.client, name, data)
    before = outside_jobs_and_files(w.server.data_dir)
    temp_before = set(w.tmpdir.iterdir())
    body: dict[str, Any] = {"tool": tool, "inputFileIds": [ref["id"]], "params": params or {}}
    if fmt:
        body["outputFormat"] = fmt
    r = w.client.post("/jobs", json=body)
    outcome = Outcome()
    if r.status_code == 422:
        outcome.refused = r.json()
        assert_problem(r, 422, outcome.refused["code"])
    else:
        assert r.status_code == 201, r.text
        job_id = r.json()["id"]
        deadline = time.monotonic() + 300
        while True:
            assert time.monotonic() < deadline, f"job {job_id} still running after 300 s"
            try:
                children = psutil.Process(w.server.process.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                children = []
            outcome.peak_child = max([outcome.peak_child, *(rss(c.pid) for c in children)])
            job = w.client.get(f"/jobs/{job_id}").json()
            if job["status"] in ("DONE", "FAILED", "CANCELED"):
                outcome.job = job
                break
            time.sleep(0.05)
        gone_by = time.monotonic() + 5
        while (w.server.data_dir / "jobs" / job_id).exists():
            assert time.monotonic() < gone_by, "the job's folder was left behind"
            time.sleep(0.02)
        assert outcome.peak_child < BOUNDED, f"a conversion process reached {outcome.peak_child >> 20} MiB"
    assert outside_jobs_and_files(w.server.data_dir) - before == set(), "a file appeared outside jobs/ and files/"
    assert set(w.tmpdir.iterdir()) - temp_before == set(), f"left in TMPDIR: {set(w.tmpdir.iterdir()) - temp_before}"
    return outcome


def results(w: Watched, job: dict[str, Any]) -> dict[str, bytes]:
    """The job's result files by name."""
    listing = w.client.get(f"/jobs/{job['id']}/result").json()
    files = listing.get("files") or [listing]
    return {f["name"]: httpx.get(f["downloadUrl"], timeout=60).content for f in files}


def still_answers(w: Watched) -> None:
    assert w.server.process.poll() is None
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("fine/inside.txt", "still here")
    ref = upload(w.client, "fine.zip", buf.getvalue())
    job = w.client.post("/jobs", json={"tool": "archive-extract", "inputFileIds": [ref["id"]]}).json()
    done = wait_job(w.client, job["id"], timeout=120)
    assert done["status"] == "DONE", done
    assert results(w, done) == {"fine__inside.txt": b"still here"}


def passwd_digest() -> str:
    return hashlib.sha256(PASSWD.read_bytes()).hexdigest() if PASSWD.exists() else ""


# --------------------------------------------------------------------------- bombs


def test_the_samples_are_what_they_claim() -> None:
    zeros = zeros_deflate(64 * MiB)
    assert len(zeros) < 100_000 and zlib.decompressobj(-15).decompress(zeros) == bytes(64 * MiB)
    assert crc32_zeros(5 * MiB, zlib.crc32(b"head")) == zlib.crc32(b"head" + bytes(5 * MiB))
    with zipfile.ZipFile(io.BytesIO(zip_bomb(64 * MiB))) as zf:
        assert zf.read("zeros.bin") == bytes(64 * MiB)  # a valid ZIP, CRC included
    frames = zstd_zero_frames(8 * MiB)
    import zstandard

    assert zstandard.ZstdDecompressor().stream_reader(io.BytesIO(frames)).read() == bytes(8 * MiB)
    with tarfile.open(fileobj=io.BytesIO(tar_gz_zeros(64 * MiB, 64 * MiB)), mode="r:gz") as tf:
        [only] = tf.getmembers()
        assert only.size == 64 * MiB and tf.extractfile(only).read() == bytes(64 * MiB)  # type: ignore[union-attr]
    import py7zr

    with py7zr.SevenZipFile(io.BytesIO(seven_zip_declaring("huge.bin", b"x" * 16, 100 * GiB))) as sz:
        [info] = sz.list()
        assert info.filename == "huge.bin" and info.uncompressed == 100 * GiB


def zip_bomb(size: int) -> bytes:
    """One entry of ``size`` zeros, honestly declared (ZIP64 past 4 GiB), a thousandth of it on disk."""
    return raw_zip([RawEntry("zeros.bin", zeros_deflate(size), size, crc32_zeros(size))])


def tar_gz_zeros(declared: int, zeros: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    """A gzip member holding a tar header that declares a ``declared``-byte file (or a member of another
    ``kind`` with that much data), then ``zeros`` zero bytes (the data, its padding and the end marker are
    all zeros), with a right CRC and length."""
    header = bytearray(tar_bytes([(member("zeros.bin", kind), b"")])[:512])
    header[124:136] = b"%011o\0" % declared if declared < 8**11 else b"\x80" + declared.to_bytes(11, "big")
    header[148:156] = b"        "
    header[148:156] = b"%06o\0 " % sum(header)
    crc = crc32_zeros(zeros, zlib.crc32(bytes(header)))
    member_data = zeros_deflate(zeros, prefix=bytes(header))
    return (b"\x1f\x8b\x08\x00\0\0\0\0\x00\x03" + member_data
            + (crc & 0xFFFFFFFF).to_bytes(4, "little") + ((512 + zeros) & 0xFFFFFFFF).to_bytes(4, "little"))


def overlapping_zip(count: int) -> bytes:
    """``count`` entries of 1 MiB of zeros each, all sharing one deflated block (some 1 KB): each is at the
    ratio floor, so no entry's own ratio counts."""
    data, crc = zeros_deflate(MiB), crc32_zeros(MiB)
    first = b"0.bin"
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(data), MiB, len(first), 0) + first
    central = bytearray()
    for n in range(count):
        name = f"{n}.bin".encode()
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, len(data), MiB,
                               len(name), 0, 0, 0, 0, 0, 0) + name
    start = len(local) + len(data)
    return bytes(local + data + central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(central),
                                                      start, 0))


def test_entries_sharing_one_compressed_block_are_refused_at_job_creation(watched: Watched) -> None:
    outcome = attempt(watched, "overlap.zip", overlapping_zip(500))
    assert outcome.refused is not None and outcome.code == "input_too_large", outcome
    assert "overlap" in outcome.refused["detail"]


def test_entries_each_under_the_ratio_floor_are_held_to_the_archives_ratio(watched: Watched) -> None:
    # 300 entries of 1 MiB of zeros, each some 1 KB deflated and apart: 300 MiB from some 330 KB
    archive = raw_zip([RawEntry(f"{n}.bin", zeros_deflate(MiB), MiB, crc32_zeros(MiB)) for n in range(300)])
    outcome = attempt(watched, "many.zip", archive)
    assert outcome.refused is not None and outcome.code == "input_too_large", outcome
    assert "The archive expands" in outcome.refused["detail"]


def test_the_data_of_members_that_are_skipped_inflates_no_further_than_the_ratio(watched: Watched) -> None:
    # a member of a type tar does not know, with 600 MiB of data: skipped, but its data inflates to be passed over
    outcome = attempt(watched, "odd.tar.gz", tar_gz_zeros(600 * MiB, 600 * MiB + 1024, kind=b"Z"))
    assert outcome.job is not None and (outcome.job["status"], outcome.code) == ("FAILED", "input_too_large")
    assert "decompression bomb" in outcome.job["errorMessage"]
    still_answers(watched)


def test_a_10_gib_zip_bomb_is_refused_at_job_creation(watched: Watched) -> None:
    outcome = attempt(watched, "bomb.zip", zip_bomb(10 * GiB))
    assert outcome.code == "input_too_large" and outcome.refused is not None
    assert "2,147,483,648" in outcome.refused["detail"]
    still_answers(watched)


def test_nested_zips_are_not_recursed(watched: Watched) -> None:
    """42.zip's trick at a smaller scale: 16 x 16 copies of a ZIP of 1 GiB of zeros, 256 GiB in all."""
    bottom = zip_bomb(GiB)
    middle = raw_zip([deflated(f"lib{n:x}.zip", bottom) for n in range(16)])
    top = raw_zip([deflated(f"book{n:x}.zip", middle) for n in range(16)])
    assert len(top) < 5 * MiB
    outcome = attempt(watched, "42.zip", top)
    assert outcome.job is not None and outcome.job["status"] == "DONE", outcome.job
    out = results(watched, outcome.job)
    assert sorted(out) == [f"book{n:x}.zip" for n in range(16)]
    assert all(data == middle for data in out.values())  # written as they are: archives inside stay archives
    # the level below holds ZIPs of zeros that compress 350:1 again: refused as it is, before inflating
    one_level = attempt(watched, "book0.zip", middle)
    assert one_level.code == "input_too_large" and one_level.refused is not None
    assert "decompression bomb" in one_level.refused["detail"]
    innermost = attempt(watched, "lib0.zip", bottom)
    assert innermost.code == "input_too_large" and innermost.refused is not None  # 1000:1, before inflating
    assert "decompression bomb" in innermost.refused["detail"]
    still_answers(watched)


def test_an_entry_that_lies_about_its_size_is_stopped_one_byte_past_the_lie(watched: Watched) -> None:
    liar = RawEntry("report.txt", zeros_deflate(GiB), 1000, crc32_zeros(1000))
    outcome = attempt(watched, "report.zip", raw_zip([deflated("first.txt", b"honest"), liar]))
    assert outcome.job is not None and (outcome.job["status"], outcome.code) == ("FAILED", "input_too_large")
    assert "1,000 bytes it declares" in outcome.job["errorMessage"]
    still_answers(watched)


def test_a_tar_gz_bomb_is_stopped_while_it_inflates(watched: Watched) -> None:
    # 1.9 GiB of zeros under the 2 GiB limit: stopped by the ratio, a few megabytes in
    outcome = attempt(watched, "zeros.tar.gz", tar_gz_zeros(1900 * MiB, 1901 * MiB))
    assert outcome.job is not None and (outcome.job["status"], outcome.code) == ("FAILED", "input_too_large")
    assert "decompression bomb" in outcome.job["errorMessage"]
    # a member declaring 10 GiB: stopped at its header, before its data
    declared = attempt(watched, "ten.tar.gz", tar_gz_zeros(10 * GiB, 4 * MiB))
    assert declared.job is not None and declared.code == "input_too_large"
    assert "10,737,418,240" in declared.job["errorMessage"]
    still_answers(watched)


def test_a_zstd_bomb_is_stopped_while_it_inflates(watched: Watched) -> None:
    data = zstd_zero_frames(10 * GiB)
    assert len(data) < 400_000
    outcome = attempt(watched, "zeros.bin.zst", data)
    assert outcome.job is not None and (outcome.job["status"], outcome.code) == ("FAILED", "input_too_large")
    assert "decompression bomb" in outcome.job["errorMessage"]
    converted = attempt(watched, "zeros.bin.zst", data, tool="archive-convert", fmt="zip")
    assert converted.job is not None and converted.code == "input_too_large"
    still_answers(watched)


def test_a_7z_declaring_100_gib_is_refused_at_job_creation(watched: Watched) -> None:
    outcome = attempt(watched, "huge.7z", seven_zip_declaring("huge.bin", b"x" * 16, 100 * GiB))
    assert outcome.code == "input_too_large" and outcome.refused is not None
    still_answers(watched)


# --------------------------------------------------------------------------- too many entries


def test_100000_entries_are_refused(watched: Watched) -> None:
    many = raw_zip([RawEntry(f"e{n}.txt", b"", 0, 0, method=zipfile.ZIP_STORED) for n in range(100_000)])
    outcome = attempt(watched, "many.zip", many)
    assert outcome.code == "input_too_large" and outcome.refused is not None
    assert "100,000" in outcome.refused["detail"]
    plain = tar_bytes([(member(f"e{n}.txt"), b"") for n in range(100_000)])
    refused = attempt(watched, "many.tar", plain)  # a plain tar's headers are walked at job creation
    assert refused.code == "input_too_large" and refused.refused is not None
    compressed = attempt(watched, "many.tar.gz", gzip.compress(plain, 1))  # counted as it inflates
    assert compressed.job is not None and (compressed.job["status"], compressed.code) == ("FAILED", "input_too_large")
    assert "10,000" in compressed.job["errorMessage"]
    still_answers(watched)


# --------------------------------------------------------------------------- names that point outside


def test_names_pointing_outside_are_refused_and_nothing_lands_there(watched: Watched) -> None:
    before = passwd_digest()
    escape = attempt(watched, "escape.zip", raw_zip([deflated("ok.txt", b"ok"), deflated("../../etc/passwd", b"x")]))
    assert escape.code == "unsafe_archive" and escape.refused is not None
    target = Path("/tmp") / f"filekiln-pwned-{uuid.uuid4().hex}"
    absolute = attempt(watched, "absolute.tar", tar_bytes([(member(str(target)), b"pwned")]))
    assert absolute.code == "unsafe_archive" and absolute.refused is not None
    # found only while a compressed tar is read: the job fails, and the file written before it is removed
    late = tar_bytes([(member("first.txt"), b"1" * 5000), (member("../../../../etc/passwd"), b"root::0:0::/:")],
                     "w:gz")
    failed = attempt(watched, "late.tar.gz", late)
    assert failed.job is not None and (failed.job["status"], failed.code) == ("FAILED", "unsafe_archive")
    windows = attempt(watched, "drive.zip", raw_zip([deflated("C:/Windows/evil.dll", b"MZ")]))
    assert windows.code == "unsafe_archive"
    assert not target.exists() and passwd_digest() == before
    still_answers(watched)


# --------------------------------------------------------------------------- links, devices, FIFOs


def test_a_symlink_to_etc_passwd_is_never_followed_or_written(watched: Watched) -> None:
    before = passwd_digest()
    # the classic: a link to /etc/passwd, then a file of the same name written "through" it
    archive = tar_bytes([(member("passwd", tarfile.SYMTYPE, "/etc/passwd"), None),
                         (member("passwd"), b"pwned\n"),
                         (member("dir", tarfile.SYMTYPE, "/etc"), None),
                         (member("dir/passwd"), b"pwned too\n")], "w:gz")
    outcome = attempt(watched, "links.tar.gz", archive)
    assert outcome.job is not None and outcome.job["status"] == "DONE", outcome.job
    assert results(watched, outcome.job) == {"passwd": b"pwned\n", "dir__passwd": b"pwned too\n"}
    [note] = outcome.job["notes"]
    assert "2 entries were not extracted" in note and "'passwd'" in note
    zipped = raw_zip([RawEntry("link", b"/etc/passwd", 11, zlib.crc32(b"/etc/passwd"), method=zipfile.ZIP_STORED,
                               mode=stat.S_IFLNK | 0o777), deflated("real.txt", b"real")])
    in_zip = attempt(watched, "link.zip", zipped)
    assert in_zip.job is not None and in_zip.job["status"] == "DONE", in_zip.job
    assert results(watched, in_zip.job) == {"real.txt": b"real"}
    assert "'link'" in in_zip.job["notes"][0]
    assert passwd_digest() == before
    still_answers(watched)


def test_hardlinks_devices_and_fifos_are_skipped(watched: Watched) -> None:
    archive = tar_bytes([(member("hard", tarfile.LNKTYPE, "/etc/passwd"), None),
                         (member("zero", tarfile.CHRTYPE), None),
                         (member("disk", tarfile.BLKTYPE), None),
                         (member("pipe", tarfile.FIFOTYPE), None),
                         (member("plain.txt"), b"plain")])
    outcome = attempt(watched, "special.tar", archive)
    assert outcome.job is not None and outcome.job["status"] == "DONE", outcome.job
    out = results(watched, outcome.job)
    assert out == {"plain.txt": b"plain"}
    [note] = outcome.job["notes"]
    assert "4 entries were not extracted" in note and all(f"'{n}'" in note for n in ("hard", "zero", "disk", "pipe"))
    only_special = attempt(watched, "only.tar", tar_bytes([(member("pipe", tarfile.FIFOTYPE), None)]))
    assert only_special.job is not None and (only_special.job["status"], only_special.code) == ("FAILED",
                                                                                               "no_output")
    still_answers(watched)


# --------------------------------------------------------------------------- repeated names


def test_repeated_names_never_overwrite(watched: Watched) -> None:
    archive = raw_zip([deflated("a.txt", b"first"), deflated("a.txt", b"second"), deflated("A.TXT", b"third"),
                       deflated("dir/a.txt", b"in a folder"), deflated("dir__a.txt", b"looks the same")])
    outcome = attempt(watched, "dups.zip", archive)
    assert outcome.job is not None and outcome.job["status"] == "DONE", outcome.job
    assert results(watched, outcome.job) == {"a.txt": b"first", "a-2.txt": b"second", "A-3.TXT": b"third",
                                             "dir__a.txt": b"in a folder", "dir__a-2.txt": b"looks the same"}
    still_answers(watched)


def test_entries_dated_before_1980_give_a_job_and_a_workflow_that_end_done(watched: Watched) -> None:
    """The extracted files keep their entries' dates, which a ZIP cannot hold: the results' ZIP (of the
    job, and of a workflow) stores them as 1980 instead of failing the job or holding the workflow."""
    old = {"a.txt": (86_400, b"one"), "b.txt": (315_000_000, b"two")}  # 1970 and 1979
    members = []
    for name, (mtime, data) in old.items():
        info = member(name)
        info.mtime = mtime
        members.append((info, data))
    outcome = attempt(watched, "old.tar", tar_bytes(members))
    assert outcome.job is not None and outcome.job["status"] == "DONE", outcome.job
    assert results(watched, outcome.job) == {name: data for name, (_, data) in old.items()}
    bundle = httpx.get(watched.client.get(f"/jobs/{outcome.job['id']}/result").json()["downloadUrl"], timeout=60)
    with zipfile.ZipFile(io.BytesIO(bundle.content)) as zf:
        assert {i.filename: (zf.read(i), i.date_time[0]) for i in zf.infolist()} == {
            name: (data, 1980) for name, (_, data) in old.items()}
    ref = upload(watched.client, "old.tar", tar_bytes(members))
    r = watched.client.post("/workflows", json={"inputFileIds": [ref["id"]], "steps": [{"tool": "archive-extract"}]})
    assert r.status_code == 201, r.text
    deadline = time.monotonic() + 120
    while (workflow := watched.client.get(f"/workflows/{r.json()['id']}", params={"wait": 30}).json())["status"] \
            not in ("DONE", "FAILED", "CANCELED"):
        assert time.monotonic() < deadline, workflow
    assert workflow["status"] == "DONE", workflow
    listing = watched.client.get(f"/workflows/{workflow['id']}/result").json()
    with zipfile.ZipFile(io.BytesIO(httpx.get(listing["downloadUrl"], timeout=60).content)) as zf:
        assert sorted(zf.namelist()) == sorted(old)
