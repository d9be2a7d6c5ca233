"""The archive tools on real files: every writable format created and read back independently (zipfile, tarfile,
py7zr), every readable format converted into every writable one, real-world archives (PyPI source
distributions, py7zr's and CPython's test archives, rarfile's RAR samples), passwords, single compressed
files, names, damaged input, limits, cancellation.

The helpers that write archives byte by byte (ZIP with ZipCrypto or lying sizes, a 7z header, zstd frames,
gigabytes of zeros behind a few kilobytes) are shared with ``tests/hostile/test_archives_hostile.py``.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import os
import re
import struct
import tarfile
import zipfile
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import py7zr
import pytest
import zstandard
from py7zr.io import BytesIOFactory

from converters.base import Cancelled, ConversionError, ToolEnv
from converters.inputs.sniff import sniff
from converters.tools.archives import rar as rar_module
from converters.tools.archives.common import WRITABLE, codec_level
from tests.conftest import in_ci, png_bytes
from tests.converters.runtool import ToolRun, run_tool
from tests.samples_cache import cache_dir, sdist_files

MiB = 1024**2
GiB = 1024**3


# --------------------------------------------------------------------------- writing archives byte by byte


def crc32_zeros(count: int, crc: int = 0) -> int:
    """``zlib.crc32(bytes(count), crc)`` without making the bytes: the CRC register is run over ``count`` zero
    bytes by squaring the one-zero-bit operator, as zlib's ``crc32_combine`` does. For gigabyte samples."""

    def times(matrix: list[int], vector: int) -> int:
        out, row = 0, 0
        while vector:
            if vector & 1:
                out ^= matrix[row]
            vector >>= 1
            row += 1
        return out

    def square(matrix: list[int]) -> list[int]:
        return [times(matrix, matrix[n]) for n in range(32)]

    register = crc ^ 0xFFFFFFFF
    operator = [0xEDB88320] + [1 << n for n in range(31)]  # one zero bit
    for _ in range(3):
        operator = square(operator)  # eight zero bits: one zero byte
    while count:
        if count & 1:
            register = times(operator, register)
        count >>= 1
        if count:
            operator = square(operator)
    return register ^ 0xFFFFFFFF


def zeros_deflate(size: int, prefix: bytes = b"") -> bytes:
    """Raw deflate data inflating to ``prefix`` and ``size`` zero bytes (a multiple of 1 MiB), written without
    compressing them one by one: after a full flush every further MiB of zeros compresses to the same block."""
    chunk = MiB
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = deflate.compress(prefix) + deflate.flush(zlib.Z_FULL_FLUSH)
    first = deflate.compress(bytes(chunk)) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(bytes(chunk)) + deflate.flush(zlib.Z_FULL_FLUSH)
    return head + first + block * (size // chunk - 1) + deflate.flush()


def gzip_member(payload_deflate: bytes, crc: int, size: int, name: bytes | None = None) -> bytes:
    flags = 0x08 if name is not None else 0
    head = b"\x1f\x8b\x08" + bytes([flags]) + b"\0\0\0\0\x00\x03" + (name + b"\0" if name is not None else b"")
    return head + payload_deflate + struct.pack("<II", crc, size & 0xFFFFFFFF)


@dataclass
class RawEntry:
    """One entry of a ZIP written by :func:`raw_zip`: its data as stored (compressed, encrypted) and what the
    headers say."""

    name: str
    stored: bytes
    size: int  # declared uncompressed size
    crc: int
    method: int = zipfile.ZIP_DEFLATED
    flags: int = 0
    mode: int = 0  # Unix mode (with the file type), 0 for none
    declared_packed: int | None = None  # the compressed size the headers claim, when not len(stored)


def deflated(name: str, data: bytes, **kw: Any) -> RawEntry:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return RawEntry(name, c.compress(data) + c.flush(), len(data), zlib.crc32(data), **kw)


def raw_zip(entries: list[RawEntry]) -> bytes:
    """A ZIP written field by field, with ZIP64 records where a size needs them (no zipfile involved)."""
    out = bytearray()
    central = bytearray()
    for e in entries:
        name = e.name.encode("utf-8")
        packed = e.declared_packed if e.declared_packed is not None else len(e.stored)
        big = e.size >= 0xFFFFFFFF or packed >= 0xFFFFFFFF
        extra = struct.pack("<HHQQ", 1, 16, e.size, packed) if big else b""
        sizes = (0xFFFFFFFF, 0xFFFFFFFF) if big else (packed, e.size)
        flags = e.flags | 0x800
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if big else 20, flags, e.method, 0, 0x21, e.crc, *sizes,
                           len(name), len(extra)) + name + extra + e.stored
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, (3 << 8) | 45, 45 if big else 20, flags, e.method,
                               0, 0x21, e.crc, *sizes, len(name), len(extra), 0, 0, 0, (e.mode << 16) & 0xFFFFFFFF,
                               offset) + name + extra
    start = len(out)
    out += central
    count = len(entries)
    if count >= 0xFFFF:
        z64 = len(out)
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, len(central), start)
        out += struct.pack("<IIQI", 0x07064B50, 0, z64, 1)
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, len(central), start, 0)
    else:
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(central), start, 0)
    return bytes(out)


def _zipcrypto_keys() -> tuple[list[int], Any]:
    table = [0] * 256
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table[n] = c
    keys = [0x12345678, 0x23456789, 0x34567890]

    def update(byte: int) -> None:
        keys[0] = (keys[0] >> 8) ^ table[(keys[0] ^ byte) & 0xFF]
        keys[1] = ((keys[1] + (keys[0] & 0xFF)) * 134775813 + 1) & 0xFFFFFFFF
        keys[2] = (keys[2] >> 8) ^ table[(keys[2] ^ (keys[1] >> 24)) & 0xFF]

    return keys, update


def zipcrypto(data: bytes, password: bytes, crc: int) -> bytes:
    """``data`` encrypted with traditional PKWARE encryption (ZipCrypto), its 12-byte header first."""
    keys, update = _zipcrypto_keys()
    for byte in password:
        update(byte)
    out = bytearray()
    for byte in os.urandom(11) + bytes([crc >> 24]) + data:
        temp = (keys[2] | 2) & 0xFFFF
        out.append(byte ^ (((temp * (temp ^ 1)) >> 8) & 0xFF))
        update(byte)
    return bytes(out)


def encrypted_zip(files: dict[str, bytes], password: bytes) -> bytes:
    entries = []
    for name, data in files.items():
        plain = deflated(name, data)
        entries.append(RawEntry(name, zipcrypto(plain.stored, password, plain.crc), plain.size, plain.crc, flags=1))
    return raw_zip(entries)


def n7z(value: int) -> bytes:
    """A 7z UINT64: a first byte whose leading ones count the bytes that follow."""
    for extra in range(8):
        if value < 1 << (7 * (extra + 1)):
            first = ((0xFF << (8 - extra)) & 0xFF) | (value >> (8 * extra))
            return bytes([first]) + (value & ((1 << (8 * extra)) - 1)).to_bytes(extra, "little")
    return b"\xff" + value.to_bytes(8, "little")


def seven_zip_declaring(name: str, data: bytes, declared: int) -> bytes:
    """A 7z written field by field: one file stored with the Copy method, its header claiming ``declared`` bytes."""
    header = (b"\x01\x04"  # Header, MainStreamsInfo
              b"\x06" + n7z(0) + n7z(1) + b"\x09" + n7z(len(data)) + b"\x00"  # PackInfo
              b"\x07\x0b" + n7z(1) + b"\x00" + n7z(1) + b"\x01\x00"  # UnpackInfo: 1 folder, 1 coder: Copy
              b"\x0c" + n7z(declared) + b"\x00"  # its unpack size
              b"\x08\x00"  # SubStreamsInfo: one stream
              b"\x00"  # end of MainStreamsInfo
              b"\x05" + n7z(1))  # FilesInfo: 1 file
    names = b"\x00" + name.encode("utf-16-le") + b"\x00\x00"
    header += b"\x11" + n7z(len(names)) + names + b"\x00\x00"
    tail = struct.pack("<QQI", len(data), len(header), zlib.crc32(header))
    return b"7z\xbc\xaf\x27\x1c\x00\x04" + struct.pack("<I", zlib.crc32(tail)) + tail + data + header


def zstd_zero_frames(size: int) -> bytes:
    """A zstd frame of ``size`` zero bytes (a multiple of 128 KiB) as RLE blocks: 4 bytes per 128 KiB."""
    block = 128 * 1024
    count = size // block
    body = bytearray(b"\x28\xb5\x2f\xfd\x00\x38")  # magic; no content size, no checksum; a 128 KiB window
    for n in range(count):
        last = 1 if n == count - 1 else 0
        body += (last | (1 << 1) | (block << 3)).to_bytes(3, "little") + b"\x00"
    return bytes(body)


def tar_bytes(members: Sequence[tuple[tarfile.TarInfo, bytes | None]], mode: str = "w") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode, format=tarfile.PAX_FORMAT) as tf:  # type: ignore[call-overload]
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "", mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode, info.mtime = kind, linkname, mode, 1_700_000_000
    if kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        info.devmajor, info.devminor = 1, 5
    return info


# --------------------------------------------------------------------------- reading archives independently


def read_archive(path: Path) -> dict[str, bytes]:
    """Every regular file of the archive at ``path``, by its path, read with zipfile, tarfile or py7zr."""
    data = path.read_bytes()
    if data[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(path) as zf:
            return {i.filename: zf.read(i) for i in zf.infolist() if not i.is_dir()}
    if data[:6] == b"7z\xbc\xaf\x27\x1c":
        with py7zr.SevenZipFile(path) as sz:
            regular = [f.filename for f in sz.files if not f.is_directory and not f.is_symlink]
            factory = BytesIOFactory(1 << 30)
            sz.extract(targets=regular, factory=factory)
            out = {}
            for name, product in factory.products.items():  # a repeated name comes as "name_0"
                product.seek(0)
                out[name] = product.read()
            return out
    if data[:4] == b"\x28\xb5\x2f\xfd":
        data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True).read()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tf:
        return {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isreg()}  # type: ignore[union-attr]


def outputs_by_name(run: ToolRun) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in run.outputs}


def digests(contents: Any) -> Counter[str]:
    return Counter(hashlib.sha256(c).hexdigest() for c in contents)


def refused(tool_id: str, inputs: list[Path], out: Path, code: str, params: dict[str, Any] | None = None,
            fmt: str | None = None, **kw: Any) -> str:
    with pytest.raises(ConversionError) as caught:
        run_tool(tool_id, inputs, out, params or {}, fmt, **kw)
    assert caught.value.code == code, caught.value.message
    leftovers = [p for p in out.rglob("*")] if out.exists() else []
    assert leftovers == [], f"a failed {tool_id} left {leftovers}"
    return caught.value.message


def pypi_file(project: str, version: str, suffix: str) -> Path:
    """A release file of ``project`` from PyPI, kept whole (an sdist is a real .tar.gz, a wheel a real ZIP),
    cached and checked against PyPI's SHA-256."""
    folder = cache_dir() / "archives"
    folder.mkdir(parents=True, exist_ok=True)
    meta = httpx.get(f"https://pypi.org/pypi/{project}/json", timeout=60, follow_redirects=True)
    meta.raise_for_status()
    found = [f for f in meta.json()["releases"].get(version, []) if f["filename"].endswith(suffix)]
    assert found, f"PyPI has no {suffix} file of {project} {version}"
    target = folder / found[0]["filename"]
    if not target.exists():
        data = httpx.get(meta.url.join(found[0]["url"]), timeout=300, follow_redirects=True).content
        assert hashlib.sha256(data).hexdigest() == found[0]["digests"]["sha256"], "the file's digest differs"
        part = target.with_suffix(".part")
        part.write_bytes(data)
        part.replace(target)
    return target


# --------------------------------------------------------------------------- the samples


def sample_files(folder: Path) -> list[Path]:
    """A PNG, a text file with a name in several scripts, incompressible bytes (behind a PDF signature: a file
    must be of a format FileKiln knows to be uploaded at all) and two files of the same name (in different
    folders, as uploads would be)."""
    files = {
        "a/photo.png": png_bytes(300, 200),
        "b/résumé – notes (v2).txt": "Grüße, ça va? 最后一行\n".encode() * 400,
        "c/scan.pdf": b"%PDF-1.7\n" + os.urandom(150_000),
        "e/notes.txt": b"first notes\n",
        "f/notes.txt": b"second notes\n",
    }
    paths = []
    for rel, data in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        paths.append(path)
    return paths


TREE = {
    "top/readme.md": b"# Readme\n\nSome text.\n" * 50,
    "top/sub/data.bin": os.urandom(70_000),
    "top/sub/deeper/ünïcode name.txt": "naïve café\n".encode() * 100,
    "top/empty.txt": b"",
    "other.csv": b"a,b\n1,2\n",
}


def write_source(path: Path, fmt: str, files: dict[str, bytes]) -> Path:
    """An archive of ``files`` in ``fmt``, written with the standard library, py7zr or zstandard."""
    if fmt == "zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in files.items():
                zf.writestr(name, data)
    elif fmt == "7z":
        with py7zr.SevenZipFile(path, "w") as sz:
            for name, data in files.items():
                sz.writestr(data, name)
    elif fmt.startswith("tar"):
        members = [(member(name), data) for name, data in files.items()]
        raw = tar_bytes(members)
        if fmt == "tar.gz":
            raw = gzip.compress(raw)
        elif fmt == "tar.bz2":
            raw = bz2.compress(raw)
        elif fmt == "tar.xz":
            raw = lzma.compress(raw)
        elif fmt == "tar.zst":
            raw = zstandard.ZstdCompressor().compress(raw)
        path.write_bytes(raw)
    else:
        (data,) = files.values()
        compress = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress,
                    "zst": zstandard.ZstdCompressor().compress}[fmt]
        path.write_bytes(compress(data))
    # bzip2 inflates nothing before a whole block (up to 900 kB) is in, zstd nothing before a block (up to
    # 128 KiB): the sniffer's 4 KB cannot always see the tar inside, and such a file arrives as "bz2" or "zst".
    # The tools look for the tar header themselves.
    unseen = fmt.removeprefix("tar.") if fmt in ("tar.bz2", "tar.zst") else fmt
    assert sniff(path, path.name) in (fmt, unseen), (path.name, sniff(path, path.name))
    return path


# --------------------------------------------------------------------------- create, then read back


@pytest.mark.parametrize("fmt", WRITABLE)
def test_created_archives_read_back_byte_for_byte_and_extract_again(fmt: str, tmp_path: Path) -> None:
    inputs = sample_files(tmp_path / "in")
    made = run_tool("archive-create", inputs, tmp_path / "made", {"name": "bundle.2024"}, fmt)
    [archive] = made.outputs
    assert archive.name == f"bundle.2024.{fmt}"
    assert sniff(archive, archive.name) == fmt
    expected = {p.name: p.read_bytes() for p in inputs[:-1]} | {"notes-2.txt": inputs[-1].read_bytes()}
    assert read_archive(archive) == expected
    assert made.progress and made.progress[-1] == 1.0 and made.progress == sorted(made.progress)

    back = run_tool("archive-extract", [archive], tmp_path / "back")
    assert outputs_by_name(back) == expected
    assert back.notes == [] and back.progress[-1] == 1.0


def test_create_names_the_archive_after_a_single_input(tmp_path: Path) -> None:
    doc = tmp_path / "Quarterly report.final.pdf"
    doc.write_bytes(b"%PDF-1.7\n" + os.urandom(1000))
    run = run_tool("archive-create", [doc], tmp_path / "out", {}, "zip")
    assert [p.name for p in run.outputs] == ["Quarterly report.final.zip"]
    assert read_archive(run.outputs[0]) == {doc.name: doc.read_bytes()}


def xz_dictionary(path: Path) -> int:
    """The LZMA2 dictionary size an .xz file's first block declares (the .xz file format, 3.1)."""
    data = path.read_bytes()[:64]
    assert data[:6] == b"\xfd7zXZ\x00", data[:6]

    def varint(pos: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value, pos

    flags, pos = data[13], 14  # after the 12-byte stream header and the block header's size byte
    for present in (0x40, 0x80):  # compressed size, uncompressed size
        if flags & present:
            _, pos = varint(pos)
    filter_id, pos = varint(pos)
    assert filter_id == 0x21, filter_id  # LZMA2
    _, pos = varint(pos)  # its properties' size: one byte
    return (2 | (data[pos] & 1)) << (data[pos] // 2 + 11)


def test_the_level_reaches_each_codec(tmp_path: Path) -> None:
    text = tmp_path / "in" / "words.txt"  # real text: the standard library's zipfile and tarfile sources
    text.parent.mkdir()
    text.write_bytes(Path(zipfile.__file__).read_bytes() + Path(tarfile.__file__).read_bytes())
    assert [codec_level("tar.zst", n) for n in (0, 1, 6, 9)] == [1, 3, 13, 19]
    for fmt in ("zip", "7z", "tar.gz", "tar.xz", "tar.zst"):
        sizes = {}
        for level in (0, 1, 6, 9):
            run = run_tool("archive-create", [text], tmp_path / f"{fmt}-{level}", {"level": level}, fmt)
            sizes[level] = run.outputs[0].stat().st_size
            assert read_archive(run.outputs[0]) == {"words.txt": text.read_bytes()}
        if fmt == "tar.xz":  # on 100 kB, preset 9 can come out a few bytes bigger than 6: its dictionary tells
            assert sizes[0] > sizes[1] > sizes[6], (fmt, sizes)
            dicts = [xz_dictionary(tmp_path / f"{fmt}-{level}" / "words.tar.xz") for level in (0, 1, 6, 9)]
            assert dicts == [256 << 10, 1 << 20, 8 << 20, 64 << 20], dicts  # liblzma's presets 0, 1, 6, 9
        else:
            assert sizes[0] > sizes[1] > sizes[6] >= sizes[9], (fmt, sizes)
    with zipfile.ZipFile(tmp_path / "zip-0" / "words.zip") as zf:
        assert zf.getinfo("words.txt").compress_type == zipfile.ZIP_STORED
    tar = run_tool("archive-create", [text], tmp_path / "tar", {"level": 9}, "tar")
    assert tar.notes == ["tar does not compress: the level was not used."]


# --------------------------------------------------------------------------- convert every pair

READ_FORMATS = ["zip", "7z", "tar", "tar.gz", "tar.bz2", "tar.xz", "tar.zst", "gz", "bz2", "xz", "zst"]
EXTENSION = {"gz": "txt.gz", "bz2": "txt.bz2", "xz": "txt.xz", "zst": "txt.zst"}


@pytest.mark.parametrize("target", WRITABLE)
@pytest.mark.parametrize("source", READ_FORMATS)
def test_every_readable_format_converts_into_every_writable_one(source: str, target: str, tmp_path: Path) -> None:
    single = source in EXTENSION
    files = {"notes.txt": TREE["top/readme.md"]} if single else TREE
    src = write_source(tmp_path / f"src.{EXTENSION.get(source, source)}", source, files)
    run = run_tool("archive-convert", [src], tmp_path / "out", {"level": 3}, target)
    [archive] = run.outputs
    assert archive.name == ("src.txt" if single else "src") + f".{target}"
    assert sniff(archive, archive.name) == target
    assert read_archive(archive) == (files if not single else {"src.txt": files["notes.txt"]})
    assert run.progress[-1] == 1.0
    assert not (tmp_path / "out" / ".archive-work").exists()


# --------------------------------------------------------------------------- real-world archives


@pytest.mark.parametrize(("project", "version"), [("py7zr", "1.1.4"), ("texttable", "1.7.0")])
def test_real_sdists_extract_to_what_tarfile_reads(project: str, version: str, tmp_path: Path) -> None:
    sdist = pypi_file(project, version, ".tar.gz")
    assert sniff(sdist, sdist.name) == "tar.gz"
    expected = read_archive(sdist)
    run = run_tool("archive-extract", [sdist], tmp_path / "out")
    assert digests(outputs_by_name(run).values()) == digests(expected.values())
    top = f"{project}-{version}"
    assert f"{top}__PKG-INFO" in outputs_by_name(run)
    converted = run_tool("archive-convert", [sdist], tmp_path / "conv", {}, "7z")
    assert read_archive(converted.outputs[0]) == expected


def test_a_real_wheel_is_a_zip_that_extracts(tmp_path: Path) -> None:
    wheel = pypi_file("texttable", "1.7.0", ".whl")
    assert sniff(wheel, wheel.name) == "zip"
    expected = read_archive(wheel)
    run = run_tool("archive-extract", [wheel], tmp_path / "out", {"names": "name"})
    assert digests(outputs_by_name(run).values()) == digests(expected.values())
    assert "texttable.py" in outputs_by_name(run) and "METADATA" in outputs_by_name(run)


def py7zr_samples(*names: str) -> dict[str, Path]:
    found = {p.name: p for p in sdist_files("py7zr", "1.0.0", "*/tests/data/*.7z")}
    return {name: found[name] for name in names}


REAL_7Z = ["test_1.7z", "solid.7z", "bzip2_2.7z", "copy.7z", "deflate.7z", "deflate64.7z", "ppmd.7z", "zstd.7z",
           "lzma2bcj.7z", "lzma_bcj_arm.7z", "lzma2delta_1.7z", "mblock_1.7z", "umlaut-solid.7z", "zerosize.7z",
           "longpath.7z", "test_folder.7z", "github_14_multi.7z", "testdata-x5-ppmd.7z"]


@pytest.mark.parametrize("name", REAL_7Z)
def test_real_7z_archives_extract_to_what_py7zr_reads(name: str, tmp_path: Path) -> None:
    path = py7zr_samples(name)[name]
    expected = read_archive(path)
    run = run_tool("archive-extract", [path], tmp_path / "out")
    assert digests(outputs_by_name(run).values()) == digests(expected.values())
    assert all(len(p.name.encode()) <= 200 for p in run.outputs)


def test_real_7z_links_are_left_out_with_a_note(tmp_path: Path) -> None:
    path = py7zr_samples("symlink.7z")["symlink.7z"]
    run = run_tool("archive-extract", [path], tmp_path / "out")
    assert [p.name for p in run.outputs] == ["lib__libabc.so.1.2.3"]
    assert not any(p.is_symlink() for p in (tmp_path / "out").iterdir())
    assert len(run.notes) == 1 and "4 entries were not extracted" in run.notes[0] and "lib/libabc.so" in run.notes[0]


@pytest.mark.parametrize(("name", "code"), [
    ("crc_corrupted.7z", "damaged_input"),
    ("data_corrupted.7z", "damaged_input"),
    ("empty.7z", "no_output"),
    ("lz4.7z", "unsupported_format"),
    ("lzma2bcj2.7z", "unsupported_format"),
    ("root_path_arcname.7z", "unsafe_archive"),  # an entry named /a/b/test.txt
])
def test_real_7z_archives_that_cannot_be_extracted_say_why(name: str, code: str, tmp_path: Path) -> None:
    refused("archive-extract", [py7zr_samples(name)[name]], tmp_path / "out", code)


@pytest.mark.parametrize(("name", "password"), [("encrypted_1.7z", "secret"), ("encrypted_3.7z", "secret"),
                                                ("filename_encryption.7z", "hello")])
def test_real_encrypted_7z_need_their_password(name: str, password: str, tmp_path: Path) -> None:
    path = py7zr_samples(name)[name]
    refused("archive-extract", [path], tmp_path / "none", "password_protected")
    refused("archive-extract", [path], tmp_path / "wrong", "wrong_password", {"password": "not it"})
    run = run_tool("archive-extract", [path], tmp_path / "right", {"password": password})
    with py7zr.SevenZipFile(path, password=password) as sz:
        regular = [f.filename for f in sz.files if not f.is_directory]
        factory = BytesIOFactory(1 << 30)
        sz.extract(targets=regular, factory=factory)
    expected = []
    for product in factory.products.values():
        product.seek(0)
        expected.append(product.read())
    assert digests(outputs_by_name(run).values()) == digests(expected)


def cpython_samples() -> dict[str, Path]:
    """CPython's own tarfile and zipfile test archives, as backports.zstd ships them."""
    return {p.name: p for p in sdist_files("backports.zstd", "1.8.0", "*/testtar.tar", "*/testtar.tar.xz",
                                           "*/zipdir_backslash.zip", "*/zip_cp437_header.zip")}


def test_cpythons_test_tar_gives_its_regular_files_and_skips_the_rest(tmp_path: Path) -> None:
    path = cpython_samples()["testtar.tar"]
    with tarfile.open(path) as tf:
        regular = [m for m in tf.getmembers() if m.isreg()]
        expected = [tf.extractfile(m).read() for m in regular]  # type: ignore[union-attr]
        others = len(tf.getmembers()) - len(regular) - sum(1 for m in tf.getmembers() if m.isdir())
    assert len(regular) == 26 and others == 10 and any(m.issparse() for m in regular)
    run = run_tool("archive-extract", [path], tmp_path / "out")
    assert digests(outputs_by_name(run).values()) == digests(expected)
    names = outputs_by_name(run)
    assert "ustar__regtype" in names and "gnu__sparse-1.0" in names
    assert any(n.startswith("gnu__123__123__") and len(n.encode()) <= 200 for n in names)  # a GNU long name, cut
    [note] = run.notes
    assert "10 entries were not extracted" in note and "'ustar/symtype'" in note and "'ustar/fifotype'" in note
    assert all(p.is_file() and not p.is_symlink() for p in (tmp_path / "out").iterdir())


def test_cpythons_small_archives(tmp_path: Path) -> None:
    samples = cpython_samples()
    xz = run_tool("archive-extract", [samples["testtar.tar.xz"]], tmp_path / "xz")
    assert outputs_by_name(xz) == read_archive(samples["testtar.tar.xz"])
    back = run_tool("archive-extract", [samples["zipdir_backslash.zip"]], tmp_path / "backslash")
    assert sorted(outputs_by_name(back)) == ["a__b__c", "d__e"]  # backslashes are folders, as on Windows
    cp437 = run_tool("archive-extract", [samples["zip_cp437_header.zip"]], tmp_path / "cp437")
    assert sorted(outputs_by_name(cp437)) == ["filename_with_æoå.txt", "filename_without.txt"]


# --------------------------------------------------------------------------- passwords


def test_an_encrypted_zip_needs_its_password(tmp_path: Path) -> None:
    files = {"secret/plan.txt": b"the plan\n" * 500, "keys.bin": os.urandom(5000)}
    path = tmp_path / "locked.zip"
    path.write_bytes(encrypted_zip(files, b"open sesame"))
    with zipfile.ZipFile(path) as zf:  # the sample is right: zipfile decrypts it
        assert {i.filename: zf.read(i, pwd=b"open sesame") for i in zf.infolist()} == files
    refused("archive-extract", [path], tmp_path / "none", "password_protected")
    refused("archive-extract", [path], tmp_path / "wrong", "wrong_password", {"password": "open sesame!"})
    run = run_tool("archive-extract", [path], tmp_path / "right", {"password": "open sesame"})
    assert outputs_by_name(run) == {"secret__plan.txt": files["secret/plan.txt"], "keys.bin": files["keys.bin"]}
    converted = run_tool("archive-convert", [path], tmp_path / "conv", {"password": "open sesame"}, "tar.xz")
    assert read_archive(converted.outputs[0]) == files


def test_an_aes_encrypted_zip_is_refused_as_unsupported(tmp_path: Path) -> None:
    entry = deflated("doc.txt", b"text")
    entry.method, entry.flags = 99, 1
    path = tmp_path / "aes.zip"
    path.write_bytes(raw_zip([entry]))
    message = refused("archive-extract", [path], tmp_path / "out", "unsupported_format", {"password": "x"})
    assert "AES" in message


def test_an_encrypted_7z_made_by_py7zr(tmp_path: Path) -> None:
    path = tmp_path / "locked.7z"
    with py7zr.SevenZipFile(path, "w", password="pässwörd", header_encryption=True) as sz:
        sz.writestr(b"hidden\n" * 100, "dir/hidden.txt")
    refused("archive-convert", [path], tmp_path / "none", "password_protected", fmt="zip")
    refused("archive-convert", [path], tmp_path / "wrong", "wrong_password", {"password": "password"}, "zip")
    run = run_tool("archive-convert", [path], tmp_path / "right", {"password": "pässwörd"}, "zip")
    assert read_archive(run.outputs[0]) == {"dir/hidden.txt": b"hidden\n" * 100}


# --------------------------------------------------------------------------- single compressed files


def test_a_gzip_file_is_named_after_its_header_when_that_is_a_plain_name(tmp_path: Path) -> None:
    data = b"id,value\n" + b"1,2\n" * 1000
    named = tmp_path / "download.gz"
    named.write_bytes(gzip_member(zlib.compress(data)[2:-4], zlib.crc32(data), len(data), b"report.csv"))
    assert outputs_by_name(run_tool("archive-extract", [named], tmp_path / "a")) == {"report.csv": data}
    sneaky = tmp_path / "table.csv.gz"
    sneaky.write_bytes(gzip_member(zlib.compress(data)[2:-4], zlib.crc32(data), len(data), b"../../etc/cron.d/x"))
    assert outputs_by_name(run_tool("archive-extract", [sneaky], tmp_path / "b")) == {"table.csv": data}
    plain = tmp_path / "notes.txt.gz"
    plain.write_bytes(gzip.compress(data, mtime=0))  # no name in the header when compressing bytes
    assert outputs_by_name(run_tool("archive-extract", [plain], tmp_path / "c")) == {"notes.txt": data}


@pytest.mark.parametrize("fmt", ["gz", "bz2", "xz", "zst"])
def test_single_compressed_files_concatenated_and_truncated(fmt: str, tmp_path: Path) -> None:
    compress = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress,
                "zst": zstandard.ZstdCompressor().compress}[fmt]
    one, two = os.urandom(100_000), b"second part\n" * 1000
    joined = tmp_path / f"log.{fmt}"
    joined.write_bytes(compress(one) + compress(two))
    run = run_tool("archive-extract", [joined], tmp_path / "joined")
    assert outputs_by_name(run) == {"log": one + two}
    cut = tmp_path / f"cut.{fmt}"
    cut.write_bytes(joined.read_bytes()[: len(compress(one)) // 2])
    refused("archive-extract", [cut], tmp_path / "cut", "damaged_input")


def test_data_after_a_gzip_stream_is_ignored_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress(b"payload") + b"not gzip at all")
    run = run_tool("archive-extract", [path], tmp_path / "out")
    assert outputs_by_name(run) == {"x": b"payload"}
    assert run.notes and "ignored" in run.notes[0]


# --------------------------------------------------------------------------- names


def test_names_are_flattened_cleaned_and_never_collide(tmp_path: Path) -> None:
    long_name = "x" * 300 + ".txt"
    entries = [
        deflated("docs/img/a.png", b"1"),
        deflated("DOCS/IMG/A.PNG", b"2"),  # the same name but for case: -2
        deflated("docs/img/a.png", b"3"),  # repeated exactly: -3
        deflated("con.txt", b"4"),  # a Windows device name
        deflated("evil\u202etxt.exe", b"5"),  # a right-to-left override
        deflated(" .hidden", b"6"),
        deflated("bell\x07.txt", b"7"),
        deflated("a<b>c:d|e?.txt", b"8"),
        deflated(long_name, b"9"),
        RawEntry("folder/", b"", 0, 0, method=0),
        deflated("folder/./inner.txt", b"10"),
    ]
    path = tmp_path / "names.zip"
    path.write_bytes(raw_zip(entries))
    run = run_tool("archive-extract", [path], tmp_path / "out")
    names = outputs_by_name(run)
    assert {k: v for k, v in names.items() if not k.startswith("xxx")} == {
        "docs__img__a.png": b"1", "DOCS__IMG__A-2.PNG": b"2", "docs__img__a-3.png": b"3", "_con.txt": b"4",
        "eviltxt.exe": b"5", "hidden": b"6", "bell.txt": b"7", "a_b_c_d_e_.txt": b"8", "folder__inner.txt": b"10"}
    [cut] = [k for k in names if k.startswith("xxx")]
    assert cut.endswith(".txt") and len(cut.encode()) == 200 and names[cut] == b"9"

    base = run_tool("archive-extract", [path], tmp_path / "base", {"names": "name"})
    assert {"a.png", "A-2.PNG", "a-3.png", "inner.txt"} <= set(outputs_by_name(base))


def test_several_archives_in_one_job_name_their_files_after_their_archive(tmp_path: Path) -> None:
    first = write_source(tmp_path / "first.zip", "zip", {"a.txt": b"1", "dir/b.txt": b"2"})
    second = write_source(tmp_path / "second.tar.gz", "tar.gz", {"a.txt": b"3"})
    run = run_tool("archive-extract", [first, second], tmp_path / "out")
    assert outputs_by_name(run) == {"first__a.txt": b"1", "first__dir__b.txt": b"2", "second__a.txt": b"3"}


# --------------------------------------------------------------------------- damaged, unsafe, limits


def test_damaged_archives_are_damaged_input(tmp_path: Path) -> None:
    good = write_source(tmp_path / "good.zip", "zip", TREE)
    cut = tmp_path / "cut.zip"
    cut.write_bytes(good.read_bytes()[:-100])
    refused("archive-extract", [cut], tmp_path / "cut", "damaged_input")

    entry = deflated("a.txt", b"some text " * 100)
    entry.crc ^= 1
    bad_crc = tmp_path / "crc.zip"
    bad_crc.write_bytes(raw_zip([deflated("first.txt", b"fine"), entry]))
    refused("archive-extract", [bad_crc], tmp_path / "crc", "damaged_input")

    tgz = write_source(tmp_path / "t.tar.gz", "tar.gz", TREE)
    short = tmp_path / "short.tar.gz"
    short.write_bytes(tgz.read_bytes()[: tgz.stat().st_size // 2])
    refused("archive-extract", [short], tmp_path / "short", "damaged_input")

    sz = write_source(tmp_path / "s.7z", "7z", TREE)
    broken = tmp_path / "broken.7z"
    broken.write_bytes(sz.read_bytes()[:40] + os.urandom(sz.stat().st_size - 40))
    refused("archive-extract", [broken], tmp_path / "broken", "damaged_input")


def test_a_tar_header_that_asks_for_a_huge_read_is_refused(tmp_path: Path) -> None:
    """A pax extended header (or a GNU long name) is read into memory whole by tarfile: one that claims
    100 MiB is refused before it is read, at job creation for a plain tar, while reading a compressed one."""
    header = bytearray(tar_bytes([(member("x"), b"")])[:512])
    header[156:157] = b"x"  # a pax extended header...
    header[124:136] = b"%011o\0" % (100 * MiB)  # ...of 100 MiB
    header[148:156] = b"        "
    header[148:156] = b"%06o\0 " % sum(header)
    plain = tmp_path / "pax.tar"
    plain.write_bytes(bytes(header) + bytes(4 * MiB))
    assert "16,777,216" in refused("archive-extract", [plain], tmp_path / "plain", "input_too_large")
    packed = tmp_path / "pax.tar.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    refused("archive-extract", [packed], tmp_path / "packed", "input_too_large")


def test_a_failure_midway_removes_the_files_already_written(tmp_path: Path) -> None:
    # regular files first, then an entry that points outside: found only while reading the compressed tar
    raw = gzip.compress(tar_bytes([(member("one.txt"), b"1" * 1000), (member("two.txt"), b"2" * 1000),
                                   (member("../escape.txt"), b"3")]))
    path = tmp_path / "late.tar.gz"
    path.write_bytes(raw)
    message = refused("archive-extract", [path], tmp_path / "out", "unsafe_archive")
    assert "../escape.txt" in message
    assert not (tmp_path / "escape.txt").exists()
    # a ZIP whose second entry inflates past what it declares
    lying = deflated("big.txt", bytes(3 * MiB))
    lying.size = 1000
    path = tmp_path / "lying.zip"
    path.write_bytes(raw_zip([deflated("fine.txt", b"fine"), lying]))
    message = refused("archive-extract", [path], tmp_path / "out2", "input_too_large")
    assert "1,000 bytes it declares" in message


def test_the_limits_are_settings(tmp_path: Path) -> None:
    src = write_source(tmp_path / "five.zip", "zip", {f"f{n}.txt": b"x" * 100 for n in range(5)})
    tgz = write_source(tmp_path / "five.tar.gz", "tar.gz", {f"f{n}.txt": b"x" * 100 for n in range(5)})

    def env(**settings: Any) -> ToolEnv:
        return ToolEnv(models_dir=tmp_path / "models", settings=settings)

    assert "limit is 4" in refused("archive-extract", [src], tmp_path / "a", "input_too_large",
                                   env=env(max_archive_entries=4))
    assert "limit is 450" in refused("archive-extract", [tgz], tmp_path / "b", "input_too_large",
                                     env=env(max_archive_bytes=450))
    bomb = tmp_path / "zeros.tar.gz"
    bomb.write_bytes(gzip.compress(tar_bytes([(member("zeros"), bytes(24 * MiB))])))
    assert "decompression bomb" in refused("archive-extract", [bomb], tmp_path / "c", "input_too_large")
    assert run_tool("archive-extract", [bomb], tmp_path / "d", env=env(max_archive_ratio=100_000)).outputs


@pytest.mark.parametrize("fmt", ["zip", "7z", "tar.xz"])
def test_a_cancel_stops_the_job_and_leaves_nothing(fmt: str, tmp_path: Path) -> None:
    files = {f"f{n}.bin": os.urandom(50_000) for n in range(20)} | {"big.bin": os.urandom(MiB) * 17}
    src = write_source(tmp_path / f"many.{fmt}", fmt, files)
    looks = {"n": 0}

    def cancelled() -> bool:  # "cancel" comes after a few looks: between entries, or inside the big one
        looks["n"] += 1
        return looks["n"] > 5

    with pytest.raises(Cancelled):
        run_tool("archive-extract", [src], tmp_path / "out", cancelled=cancelled)
    assert list((tmp_path / "out").iterdir()) == []
    looks["n"] = -18  # past the small files: the cancel arrives while the 17 MiB one is being read
    with pytest.raises(Cancelled):
        run_tool("archive-convert", [src], tmp_path / "conv", {}, "zip", cancelled=cancelled)
    assert list((tmp_path / "conv").iterdir()) == []


# --------------------------------------------------------------------------- RAR


def rar_samples() -> dict[str, Path]:
    return {p.name: p for p in sdist_files("rarfile", "4.2", "*/test/files/*.rar")}


def rar_expected(path: Path) -> list[tuple[int, int]]:
    """(size, CRC-32) of each file in rarfile's own listing of ``path`` (its ``.exp``): an independent record."""
    blocks: list[dict[str, int]] = []
    for line in Path(f"{path}.exp").read_text(encoding="utf-8").splitlines():
        if not line.startswith(" "):
            blocks.append({"file": int("is=F" in line)})
        elif blocks:
            if found := re.search(r"\bdec=(\d+)", line):
                blocks[-1]["size"] = int(found[1])
            if found := re.search(r"\bcrc=0x([0-9a-f]+)", line):
                blocks[-1]["crc"] = int(found[1], 16)
    return sorted((b["size"], b["crc"]) for b in blocks if b["file"] and "crc" in b)


RAR_OK = ["rar5-subdirs.rar", "rar3-subdirs.rar", "rar5-solid.rar", "unicode2.rar", "rar5-crc.rar", "seektest.rar"]


def test_rar_without_a_reader_says_how_to_get_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rar_module, "rar_backend", lambda: None)
    message = refused("archive-extract", [rar_samples()["rar5-subdirs.rar"]], tmp_path / "out", "engine_missing")
    assert "unar" in message and "bsdtar" in message and "apt install" in message


def test_a_rar_password_is_on_no_command_line_unless_the_archive_needs_it(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """lsar and unar take a password only as an argument, which any local user can read in
    /proc/*/cmdline: it is given to them only for what is encrypted. Each program is run through a
    script that records its arguments, then runs it."""
    found = rar_module.rar_backend()
    if found is None or found[0] != "unar":
        if in_ci():
            pytest.fail("unar is not installed")
        pytest.skip("unar is not installed")
    calls = tmp_path / "calls.txt"
    shims = {}
    for name, real in found[1].items():
        shim = tmp_path / name
        shim.write_text(f'#!/bin/sh\nprintf "%s\\n" "{name} $*" >> {calls}\nexec {real} "$@"\n')
        shim.chmod(0o755)
        shims[name] = str(shim)
    monkeypatch.setattr(rar_module, "rar_backend", lambda: ("unar", shims))
    samples = rar_samples()
    plain = run_tool("archive-extract", [samples["rar5-subdirs.rar"]], tmp_path / "plain", {"password": "Sekrit-42"})
    assert len(plain.outputs) == 4
    assert calls.read_text().count("unar ") == 4 and "Sekrit-42" not in calls.read_text()
    calls.unlink()
    for sample in ("rar5-psw.rar", "rar5-hpsw.rar"):  # encrypted files; an encrypted list of files
        assert len(run_tool("archive-extract", [samples[sample]], tmp_path / sample, {"password": "password"}).outputs)
    said = calls.read_text().splitlines()
    assert any("-p password" in line for line in said if line.startswith("unar "))
    assert [line for line in said if line.startswith("lsar ") and "-p password" in line], said


@pytest.mark.parametrize("backend", ["unar", "bsdtar"])
def test_rar_archives_read_through_whichever_reader_is_installed(backend: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    found = rar_module.rar_backend()
    samples = rar_samples()
    if backend == "unar":
        available = found is not None and found[0] == "unar"
    else:
        path = rar_module.bsdtar_path()
        available = path is not None
        if available:
            monkeypatch.setattr(rar_module, "rar_backend", lambda: ("bsdtar", {"bsdtar": path}))
    if not available:  # not installed here: the tool says so, with how to install one
        monkeypatch.setattr(rar_module, "rar_backend", lambda: None)
        refused("archive-extract", [samples["rar5-subdirs.rar"]], tmp_path / "none", "engine_missing")
        return
    for name in RAR_OK:
        run = run_tool("archive-extract", [samples[name]], tmp_path / name)
        got = sorted((p.stat().st_size, zlib.crc32(p.read_bytes())) for p in run.outputs)
        assert got == rar_expected(samples[name]), name
    sub = outputs_by_name(run_tool("archive-extract", [samples["rar5-subdirs.rar"]], tmp_path / "names"))
    assert set(sub) == {"sub__dir1__file1.txt", "sub__dir2__file2.txt", "sub__with space__long fn.txt",
                        "sub__üȵĩöḋè__file.txt"}
    both = run_tool("archive-extract", [samples["rar5-subdirs.rar"], samples["rar3-subdirs.rar"]], tmp_path / "both")
    assert len(both.outputs) == 8 and sum(p.name.startswith("rar3-subdirs__sub__") for p in both.outputs) == 4
    links = run_tool("archive-extract", [samples["rar5-symlink-unix.rar"]], tmp_path / "links")
    assert [p.name for p in links.outputs] == ["data.txt"] and "2 entries were not extracted" in links.notes[0]
    converted = run_tool("archive-convert", [samples["rar5-subdirs.rar"]], tmp_path / "conv", {}, "zip")
    assert set(read_archive(converted.outputs[0])) == {"sub/dir1/file1.txt", "sub/dir2/file2.txt",
                                                       "sub/with space/long fn.txt", "sub/üȵĩöḋè/file.txt"}
    encrypted = samples["rar5-psw.rar"]
    if backend == "unar":
        refused("archive-extract", [encrypted], tmp_path / "psw-none", "password_protected")
        refused("archive-extract", [encrypted], tmp_path / "psw-wrong", "wrong_password", {"password": "nope"})
        run = run_tool("archive-extract", [encrypted], tmp_path / "psw", {"password": "password"})
        # the same two files as rar5-crc.rar, there unencrypted (an encrypted RAR 5 stores keyed checksums)
        plain = run_tool("archive-extract", [samples["rar5-crc.rar"]], tmp_path / "plain")
        assert outputs_by_name(run) == outputs_by_name(plain) and len(run.outputs) == 2
        refused("archive-extract", [samples["rar5-hpsw.rar"]], tmp_path / "hpsw", "password_protected")
    else:  # bsdtar reads no encrypted RAR and no solid RAR 3: it says to install unar
        message = refused("archive-extract", [samples["rar5-hpsw.rar"]], tmp_path / "hpsw", "engine_missing",
                          {"password": "password"})
        assert "unar" in message
        assert "unar" in refused("archive-extract", [samples["rar3-solid.rar"]], tmp_path / "solid",
                                 "unsupported_format")
