"""Reading a font's header without trusting it, and inflating what it compresses, counting.

A font file is a table directory (sfnt: TrueType ``.ttf`` or CFF ``.otf``), optionally wrapped: WOFF
compresses each table with zlib, WOFF2 all of them together with Brotli. Both wrappers say in their header
how large the font is once unwrapped, and fontTools believes them: it inflates whole tables (WOFF) or the
whole stream (WOFF2) before it compares the result with what was declared. So before fontTools sees a
file, :func:`read_header` checks every size the header gives against the file and the limits (cheap: it
reads the header, the table directory, and for sfnt and WOFF the three small tables that say how many
glyphs there are), and :func:`check_streams` inflates what is compressed, counting, and stops one byte
past the declared size: a WOFF2 that declares 2 KB and expands to 4 GB costs 2 KB of work here.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from converters.base import ConversionError, Engine

if TYPE_CHECKING:
    pass

FONTTOOLS = Engine(
    name="fontTools", module="fontTools", distribution="fonttools",
    install_hint='Install it with: pip install "fonttools[woff]"',
)
BROTLI = Engine(
    name="Brotli", module="brotli", distribution="brotli",
    install_hint='Needed for WOFF2. Install it with: pip install "fonttools[woff]"',
)

FONT_FORMATS = ("ttf", "otf", "woff", "woff2")
MAX_FILE_BYTES = 50 * 1024**2  # a font file; the largest CJK fonts are about 20 MB
MAX_SFNT_BYTES = 200 * 1024**2  # a font once unwrapped from WOFF / WOFF2
MAX_GLYPHS = 65535  # what maxp.numGlyphs and a glyph index can hold
MAX_TABLES = 256  # real fonts have fewer than 40
MAX_META_BYTES = 16 * 1024**2  # WOFF's XML metadata block, inflated

SFNT_VERSIONS = {b"\x00\x01\x00\x00": "TrueType", b"true": "TrueType", b"OTTO": "CFF"}
CONTAINER_OF = {"ttf": "sfnt", "otf": "sfnt", "woff": "woff", "woff2": "woff2"}


@dataclass(frozen=True)
class Table:
    tag: str
    offset: int  # where its bytes start: in the file (sfnt, WOFF), in the decompressed stream (WOFF2)
    stored: int  # how many bytes it takes there
    length: int  # its length as a plain sfnt table


@dataclass
class Header:
    container: str  # sfnt, woff, woff2
    flavor: bytes  # the sfnt version: b"\0\1\0\0" / b"true" (TrueType outlines) or b"OTTO" (CFF)
    tables: dict[str, Table] = field(default_factory=dict)
    sfnt_size: int = 0  # the size of the font unwrapped, as declared (sfnt: the file's)
    stream_offset: int = 0  # WOFF2: where the Brotli stream starts in the file
    stream_stored: int = 0  # WOFF2: its compressed size
    stream_size: int = 0  # WOFF2: its decompressed size, the sum of the tables' stored sizes
    meta: tuple[int, int, int] = (0, 0, 0)  # WOFF / WOFF2 metadata: offset, stored size, length


def damaged(message: str) -> ConversionError:
    return ConversionError("damaged_input", message)


def too_large(message: str) -> ConversionError:
    return ConversionError("input_too_large", message)


# --------------------------------------------------------------------------- the header, not trusted


def read_header(f: BinaryIO, size: int) -> Header:
    """Parse and check the header and table directory of the font in ``f`` (``size`` bytes)."""
    if size > MAX_FILE_BYTES:
        raise too_large(f"The font file is {size / 1024**2:.1f} MB; the limit is {MAX_FILE_BYTES // 1024**2} MB.")
    f.seek(0)
    head = f.read(64 * 1024)
    if len(head) < 12:
        raise damaged("The file is too short to be a font.")
    signature = head[:4]
    if signature == b"wOFF":
        header = _woff_header(head, size)
    elif signature == b"wOF2":
        header = _woff2_header(head, size)
    elif signature == b"ttcf":
        raise ConversionError("unsupported_format", "Font collections (.ttc) are not supported; "
                                                    "give one font of the collection.")
    else:
        header = _sfnt_header(head, size)
    for required in ("head", "maxp"):
        if required not in header.tables:
            raise damaged(f"The font has no '{required}' table, which every font needs.")
    if header.container != "woff2":  # WOFF2's glyph counts are inside the Brotli stream: checked when loading
        check_glyph_counts(lambda tag, need: table_start(f, header, tag, need),
                           {tag: table.length for tag, table in header.tables.items()})
    return header


def _flavor(value: bytes) -> bytes:
    if value == b"ttcf":
        raise ConversionError("unsupported_format", "Font collections (.ttc) are not supported; "
                                                    "give one font of the collection.")
    if value not in SFNT_VERSIONS:
        raise damaged(f"The font's version tag {value!r} is not TrueType (0x00010000, 'true') or CFF ('OTTO').")
    return value


def _count(num_tables: int) -> int:
    if not 1 <= num_tables <= MAX_TABLES:
        raise damaged(f"The font's table directory claims {num_tables} tables (a font has 1 to {MAX_TABLES}).")
    return num_tables


def _tag(raw: bytes) -> str:
    if not all(32 <= c < 127 for c in raw):
        raise damaged(f"The font's table directory holds a table tag that is not text: {raw!r}.")
    return raw.decode("ascii")


def _add(header: Header, table: Table) -> None:
    if table.tag in header.tables:
        raise damaged(f"The font's table directory lists the '{table.tag}' table twice.")
    header.tables[table.tag] = table


def _check_total(header: Header) -> None:
    total = sum(t.length for t in header.tables.values())
    if total > MAX_SFNT_BYTES:
        raise too_large(f"The font's tables add up to {total / 1024**2:.0f} MB once decompressed; the limit is "
                        f"{MAX_SFNT_BYTES // 1024**2} MB.")


def _sfnt_header(head: bytes, size: int) -> Header:
    flavor = _flavor(head[:4])
    count = _count(struct.unpack(">H", head[4:6])[0])
    end = 12 + 16 * count
    if end > size:
        raise damaged(f"The font's table directory ({count} tables) runs past the end of the file.")
    header = Header("sfnt", flavor, sfnt_size=size)
    for n in range(count):
        raw, _checksum, offset, length = struct.unpack(">4sIII", head[12 + 16 * n:28 + 16 * n])
        tag = _tag(raw)
        if offset < end or offset + length > size:
            raise damaged(f"The font's '{tag}' table lies outside the file (bytes {offset:,} to {offset + length:,} "
                          f"of a {size:,}-byte file).")
        _add(header, Table(tag, offset, length, length))
    return header


WOFF_HEADER = struct.Struct(">4s4sIHHIHHIIIII")  # 44 bytes


def _woff_header(head: bytes, size: int) -> Header:
    if len(head) < WOFF_HEADER.size:
        raise damaged("The WOFF header is cut short.")
    (_sig, flavor, length, count, _reserved, sfnt_size, _major, _minor,
     meta_offset, meta_length, meta_orig, priv_offset, priv_length) = WOFF_HEADER.unpack(head[:WOFF_HEADER.size])
    if sfnt_size > MAX_SFNT_BYTES:
        raise too_large(f"The WOFF font declares {sfnt_size / 1024**2:,.0f} MB once decompressed; the limit is "
                        f"{MAX_SFNT_BYTES // 1024**2} MB.")
    flavor = _flavor(flavor)
    if length != size:
        raise damaged(f"The WOFF header gives the file's length as {length:,} bytes; it is {size:,}.")
    count = _count(count)
    end = WOFF_HEADER.size + 20 * count
    if end > size:
        raise damaged(f"The WOFF table directory ({count} tables) runs past the end of the file.")
    header = Header("woff", flavor, sfnt_size=sfnt_size)
    for n in range(count):
        at = WOFF_HEADER.size + 20 * n
        raw, offset, stored, orig, _checksum = struct.unpack(">4sIIII", head[at:at + 20])
        tag = _tag(raw)
        if offset < end or offset + stored > size:
            raise damaged(f"The WOFF font's '{tag}' table lies outside the file.")
        if stored > orig:
            raise damaged(f"The WOFF font's '{tag}' table is stored in more bytes than it declares ({orig:,}).")
        _add(header, Table(tag, offset, stored, orig))
    _check_total(header)
    if meta_length:
        if meta_offset + meta_length > size:
            raise damaged("The WOFF metadata block lies outside the file.")
        if meta_orig > MAX_META_BYTES:
            raise too_large(f"The WOFF metadata declares {meta_orig:,} bytes; the limit is {MAX_META_BYTES:,}.")
        header.meta = (meta_offset, meta_length, meta_orig)
    if priv_length and priv_offset + priv_length > size:
        raise damaged("The WOFF private data block lies outside the file.")
    return header


WOFF2_HEADER = struct.Struct(">4s4sIHHIIHHIIIII")  # 48 bytes


def _base128(data: bytes, at: int) -> tuple[int, int]:
    """A WOFF2 UIntBase128 at ``at``: (value, position after it)."""
    value = 0
    for n in range(5):
        if at + n >= len(data):
            raise damaged("The WOFF2 table directory is cut short.")
        byte = data[at + n]
        if n == 0 and byte == 0x80:
            raise damaged("The WOFF2 table directory holds a malformed number (leading zeros).")
        if value & 0xFE000000:
            raise damaged("The WOFF2 table directory holds a number over 32 bits.")
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + n + 1
    raise damaged("The WOFF2 table directory holds a number longer than 5 bytes.")


def _woff2_header(head: bytes, size: int) -> Header:
    from fontTools.ttLib.woff2 import woff2KnownTags

    if len(head) < WOFF2_HEADER.size:
        raise damaged("The WOFF2 header is cut short.")
    (_sig, flavor, length, count, _reserved, sfnt_size, compressed, _major, _minor,
     meta_offset, meta_length, meta_orig, priv_offset, priv_length) = WOFF2_HEADER.unpack(head[:WOFF2_HEADER.size])
    if sfnt_size > MAX_SFNT_BYTES:
        raise too_large(f"The WOFF2 font declares {sfnt_size / 1024**2:,.0f} MB once decompressed; the limit is "
                        f"{MAX_SFNT_BYTES // 1024**2} MB.")
    flavor = _flavor(flavor)
    if length != size:
        raise damaged(f"The WOFF2 header gives the file's length as {length:,} bytes; it is {size:,}.")
    count = _count(count)
    header = Header("woff2", flavor, sfnt_size=sfnt_size)
    at, stream = WOFF2_HEADER.size, 0
    for _ in range(count):
        if at >= len(head):
            raise damaged("The WOFF2 table directory is cut short.")
        flags = head[at]
        at += 1
        if flags & 0x3F == 0x3F:
            if at + 4 > len(head):
                raise damaged("The WOFF2 table directory is cut short.")
            tag = _tag(head[at:at + 4])
            at += 4
        else:
            tag = woff2KnownTags[flags & 0x3F]
        version = flags >> 6
        transformed = version == 0 if tag in ("glyf", "loca") else version != 0
        orig, at = _base128(head, at)
        stored = orig
        if transformed:
            stored, at = _base128(head, at)
            if tag == "loca" and stored:
                raise damaged("The WOFF2 font's transformed 'loca' table is not empty, as it must be.")
        _add(header, Table(tag, stream, stored, orig))
        stream += stored
    _check_total(header)
    if stream > MAX_SFNT_BYTES:
        raise too_large(f"The WOFF2 font's tables add up to {stream / 1024**2:,.0f} MB once decompressed; the "
                        f"limit is {MAX_SFNT_BYTES // 1024**2} MB.")
    header.stream_offset, header.stream_stored, header.stream_size = at, compressed, stream
    if at + compressed > size:
        raise damaged(f"The WOFF2 font's compressed data ({compressed:,} bytes) runs past the end of the file.")
    if meta_length:
        if meta_offset + meta_length > size:
            raise damaged("The WOFF2 metadata block lies outside the file.")
        if meta_orig > MAX_META_BYTES:
            raise too_large(f"The WOFF2 metadata declares {meta_orig:,} bytes; the limit is {MAX_META_BYTES:,}.")
        header.meta = (meta_offset, meta_length, meta_orig)
    if priv_length and priv_offset + priv_length > size:
        raise damaged("The WOFF2 private data block lies outside the file.")
    return header


def table_start(f: BinaryIO, header: Header, tag: str, need: int) -> bytes:
    """The first ``need`` bytes of table ``tag`` of an sfnt or WOFF font (inflating no more than that)."""
    table = header.tables[tag]
    if table.length < need:
        raise damaged(f"The font's '{tag}' table is {table.length} bytes; it needs at least {need}.")
    f.seek(table.offset)
    raw = f.read(table.stored)
    if table.stored == table.length:  # stored as it is (sfnt, or a WOFF table that did not compress)
        return raw[:need]
    try:
        data = zlib.decompressobj().decompress(raw, need)
    except zlib.error as exc:
        raise damaged(f"The WOFF font's '{tag}' table does not decompress: {exc}.") from None
    if len(data) < need:
        raise damaged(f"The WOFF font's '{tag}' table decompresses to less than it declares.")
    return data


def check_glyph_counts(read: Callable[[str, int], bytes], lengths: dict[str, int]) -> int:
    """Check that ``maxp``'s glyph count is backed by the tables that have an entry per glyph; return it.

    ``read(tag, n)`` gives the first ``n`` bytes of a table. A font claiming 65,535 glyphs in a
    2 KB file is refused here, before anything loops over the glyphs it claims.
    """
    num_glyphs = struct.unpack(">H", read("maxp", 6)[4:6])[0]
    if num_glyphs == 0:
        raise damaged("The font declares no glyphs at all ('maxp' table).")
    if num_glyphs > MAX_GLYPHS:  # cannot happen in maxp (16 bits); kept for the glyph orders loaded later
        raise too_large(f"The font has {num_glyphs:,} glyphs; the limit is {MAX_GLYPHS:,}.")
    if "hmtx" in lengths and "hhea" in lengths:
        metrics = min(struct.unpack(">H", read("hhea", 36)[34:36])[0], num_glyphs)
        need = 4 * metrics + 2 * (num_glyphs - metrics)
        if metrics == 0 or lengths["hmtx"] < need:
            raise damaged(f"The font declares {num_glyphs:,} glyphs ('maxp' table), but its 'hmtx' table holds "
                          f"{lengths['hmtx']:,} bytes of metrics where {need:,} are needed.")
    if "loca" in lengths and "glyf" in lengths:
        long_offsets = struct.unpack(">h", read("head", 54)[50:52])[0]
        if long_offsets not in (0, 1):
            raise damaged(f"The font's 'head' table gives an unknown 'loca' format ({long_offsets}).")
        entries = lengths["loca"] // (4 if long_offsets else 2)
        if entries < num_glyphs + 1:
            raise damaged(f"The font declares {num_glyphs:,} glyphs ('maxp' table), but its 'loca' table has "
                          f"places for only {max(entries - 1, 0):,}.")
    return num_glyphs


# --------------------------------------------------------------------------- compressed data, inflated counting


CHUNK = 256 * 1024


def check_streams(f: BinaryIO, header: Header, check_cancelled: Callable[[], None]) -> None:
    """Inflate every compressed part of a WOFF / WOFF2 font, counting, stopping one byte past its declared size.

    A part that expands past what it declares is a decompression bomb (``input_too_large``); one that
    falls short, or is not valid zlib / Brotli, is damaged.
    """
    if header.container == "woff":
        for table in header.tables.values():
            check_cancelled()
            if table.stored < table.length:
                _inflate_zlib(f, table.offset, table.stored, table.length, f"'{table.tag}' table")
    elif header.container == "woff2":
        _inflate_brotli(f, header, check_cancelled)
    if header.meta[1]:
        offset, stored, length = header.meta
        if header.container == "woff":
            _inflate_zlib(f, offset, stored, length, "metadata block")
        else:
            f.seek(offset)
            _count_brotli(io.BytesIO(f.read(stored)), stored, length, "metadata block", check_cancelled)


def _inflate_zlib(f: BinaryIO, offset: int, stored: int, length: int, what: str) -> None:
    f.seek(offset)
    inflate = zlib.decompressobj()
    left, size, pending = stored, 0, b""
    try:
        while size <= length and not inflate.eof:
            if not pending:
                pending = f.read(min(CHUNK, left)) if left > 0 else b""
                if not pending:
                    break
                left -= len(pending)
            size += len(inflate.decompress(pending, min(CHUNK, length + 1 - size)))
            pending = inflate.unconsumed_tail
    except zlib.error as exc:
        raise damaged(f"The WOFF font's {what} does not decompress: {exc}.") from None
    if size > length:
        raise too_large(f"The WOFF font's {what} expands past the {length:,} bytes it declares: "
                        "a decompression bomb.")
    if size < length:
        raise damaged(f"The WOFF font's {what} decompresses to {size:,} bytes; it declares {length:,}.")


def _inflate_brotli(f: BinaryIO, header: Header, check_cancelled: Callable[[], None]) -> None:
    f.seek(header.stream_offset)
    _count_brotli(f, header.stream_stored, header.stream_size, "font data", check_cancelled)


def need_brotli() -> None:
    """Fail with ``engine_missing`` when Brotli, which WOFF2 needs, is not installed (the rest works without)."""
    if not BROTLI.available():
        raise ConversionError("engine_missing", f"Brotli is not installed. {BROTLI.install_hint}")


def _count_brotli(f: BinaryIO, stored: int, length: int, what: str, check_cancelled: Callable[[], None]) -> None:
    need_brotli()
    import brotli

    inflate = brotli.Decompressor()
    size = 0
    try:
        for piece in _brotli_output(inflate, f, stored):
            size += len(piece)
            if size > length:
                raise too_large(f"The WOFF2 font's {what} expands past the {length:,} bytes it declares: "
                                "a decompression bomb.")
            check_cancelled()
    except brotli.error as exc:
        raise damaged(f"The WOFF2 font's {what} does not decompress: {exc}.") from None
    if size < length or not inflate.is_finished():
        raise damaged(f"The WOFF2 font's {what} decompresses to {size:,} bytes; it declares {length:,}.")


def _brotli_output(inflate: Any, f: BinaryIO, stored: int) -> Iterator[bytes]:
    """What ``inflate`` makes of ``stored`` bytes of ``f``, in pieces of about ``CHUNK`` bytes at most.

    Brotli 1.2's ``output_buffer_limit`` bounds each piece. Older versions get the input 64 bytes at a
    time instead, which bounds a piece to a few dozen MB (Brotli's longest copies), counted by the caller.
    """
    try:
        inflate.process(b"", output_buffer_limit=CHUNK)
        bounded = True
    except TypeError:
        bounded = False
    left = stored
    while left > 0 and not inflate.is_finished():
        data = f.read(min(CHUNK if bounded else 64, left))
        if not data:
            return
        left -= len(data)
        piece = inflate.process(data, output_buffer_limit=CHUNK) if bounded else inflate.process(data)
        while piece:
            yield piece
            if not bounded or inflate.is_finished():
                break
            piece = inflate.process(b"", output_buffer_limit=CHUNK)
    if left:
        raise damaged("The WOFF2 font has data after the end of its compressed stream.")


# --------------------------------------------------------------------------- loading with fontTools
