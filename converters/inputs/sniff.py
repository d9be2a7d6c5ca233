"""Content sniffing: what a file really is, from its bytes, not its name.

The result is one of the catalogue's format ids (``png``, ``pdf``, ``docx`` ...)
or ``None`` when nothing is recognised. The client's name only decides between
formats that the bytes cannot tell apart (``md`` vs ``txt`` vs ``csv``), and
only once the bytes are known to be text.
"""

from __future__ import annotations

import bz2
import lzma
import re
import zipfile
import zlib
from pathlib import Path

HEAD = 4096

MIME_TYPES: dict[str, str] = {
    "png": "image/png", "jpg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
    "avif": "image/avif", "heic": "image/heic", "tiff": "image/tiff", "bmp": "image/bmp",
    "ico": "image/vnd.microsoft.icon", "svg": "image/svg+xml", "svgz": "image/svg+xml", "pdf": "application/pdf",
    "ps": "application/postscript", "zip": "application/zip",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "odt": "application/vnd.oasis.opendocument.text",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
    "odp": "application/vnd.oasis.opendocument.presentation",
    "epub": "application/epub+zip", "cbz": "application/vnd.comicbook+zip",
    "doc": "application/msword", "xls": "application/vnd.ms-excel",
    "ppt": "application/vnd.ms-powerpoint", "rtf": "application/rtf",
    "mobi": "application/x-mobipocket-ebook", "azw3": "application/vnd.amazon.ebook",
    "fb2": "application/x-fictionbook+xml", "xps": "application/oxps",
    "mp3": "audio/mpeg", "wav": "audio/wav", "flac": "audio/flac", "ogg": "audio/ogg",
    "opus": "audio/ogg", "m4a": "audio/mp4", "aac": "audio/aac", "aiff": "audio/aiff",
    "wma": "audio/x-ms-wma", "mp4": "video/mp4", "mov": "video/quicktime",
    "mkv": "video/x-matroska", "webm": "video/webm", "avi": "video/x-msvideo",
    "mpeg": "video/mpeg", "flv": "video/x-flv", "wmv": "video/x-ms-wmv", "3gp": "video/3gpp",
    "m4v": "video/x-m4v", "html": "text/html", "txt": "text/plain", "md": "text/markdown",
    "csv": "text/csv", "rst": "text/x-rst", "json": "application/json", "xml": "application/xml",
    "ts": "video/mp2t", "ogv": "video/ogg", "mxf": "application/mxf", "dv": "video/dv", "h264": "video/h264",
    "hevc": "video/h265", "amr": "audio/amr", "ac3": "audio/ac3", "eac3": "audio/eac3", "dts": "audio/vnd.dts",
    "ape": "audio/x-ape", "wv": "audio/x-wavpack", "caf": "audio/x-caf",
    "jxl": "image/jxl", "jp2": "image/jp2", "qoi": "image/qoi", "tga": "image/x-tga", "dds": "image/vnd.ms-dds",
    "pcx": "image/vnd.zbrush.pcx", "icns": "image/icns", "sgi": "image/sgi", "xbm": "image/x-xbitmap",
    "ppm": "image/x-portable-pixmap", "pgm": "image/x-portable-graymap", "pbm": "image/x-portable-bitmap",
    "psd": "image/vnd.adobe.photoshop", "eml": "message/rfc822", "msg": "application/vnd.ms-outlook",
    "emf": "image/emf", "wmf": "image/wmf",
    "psb": "image/vnd.adobe.photoshop",
    # camera RAW
    "dng": "image/x-adobe-dng", "cr2": "image/x-canon-cr2", "cr3": "image/x-canon-cr3", "nef": "image/x-nikon-nef",
    "arw": "image/x-sony-arw", "raf": "image/x-fuji-raf", "orf": "image/x-olympus-orf",
    "rw2": "image/x-panasonic-rw2", "pef": "image/x-pentax-pef", "srw": "image/x-samsung-srw",
    "srt": "application/x-subrip", "vtt": "text/vtt", "m3u8": "application/vnd.apple.mpegurl",
    "ffconcat": "text/plain", "p12": "application/x-pkcs12",
    # subtitles
    "ass": "text/x-ass", "ssa": "text/x-ssa", "sub": "text/x-microdvd", "ttml": "application/ttml+xml",
    # fonts
    "ttf": "font/ttf", "otf": "font/otf", "woff": "font/woff", "woff2": "font/woff2",
    # archives, and single files behind a compressor
    "7z": "application/x-7z-compressed", "rar": "application/vnd.rar", "tar": "application/x-tar",
    "tar.gz": "application/gzip", "tar.bz2": "application/x-bzip2", "tar.xz": "application/x-xz",
    "tar.zst": "application/zstd", "gz": "application/gzip", "bz2": "application/x-bzip2",
    "xz": "application/x-xz", "zst": "application/zstd",
    # 3D models and CAD drawings
    "stl": "model/stl", "obj": "model/obj", "ply": "model/x-ply", "off": "model/x-off", "glb": "model/gltf-binary",
    "gltf": "model/gltf+json", "3mf": "model/3mf", "dxf": "image/vnd.dxf",
}

_TEXT_BY_SUFFIX = {
    ".md": "md", ".markdown": "md", ".csv": "csv", ".rst": "rst", ".json": "json",
    ".srt": "srt", ".vtt": "vtt", ".txt": "txt", ".text": "txt",
}
# Streams a compressor wraps: a tar inside makes an archive, anything else a single compressed file.
_COMPRESSED = {"gz": "tar.gz", "bz2": "tar.bz2", "xz": "tar.xz", "zst": "tar.zst"}
_TAR_MAGIC_AT = 257  # "ustar" in a POSIX or GNU tar header
# Subtitles, told by their first lines (text in any 8-bit encoding: legacy subtitle files are rarely UTF-8).
_SRT = re.compile(r"\A(?:\ufeff)?\s*\d+[ \t]*\r?\n[ \t]*\d{1,2}:\d{2}:\d{2}[,.]\d{1,3}[ \t]*-->")
_MICRODVD = re.compile(r"\A(?:\ufeff)?\s*\{\d+\}\{\d*\}")
# Netpbm: "P1" to "P6", then the width and height (comments allowed between them).
_PNM = re.compile(rb"\AP([1-6])\s+(?:#[^\n]*\n\s*)*\d+\s+(?:#[^\n]*\n\s*)*\d+\s")
_PNM_KIND = {b"1": "pbm", b"4": "pbm", b"2": "pgm", b"5": "pgm", b"3": "ppm", b"6": "ppm"}
_XBM = re.compile(rb"\A\s*#define\s+\w*_width\s+\d+\s+#define\s+\w*_height\s+\d+")
TGA_FOOTER = b"TRUEVISION-XFILE.\x00"

_FTYP_BRANDS = {
    b"avif": "avif", b"avis": "avif", b"heic": "heic", b"heix": "heic", b"heim": "heic",
    b"heis": "heic", b"mif1": "heic", b"msf1": "heic", b"M4A ": "m4a", b"M4B ": "m4a",
    b"M4V ": "m4v", b"M4VH": "m4v", b"qt  ": "mov", b"3gp4": "3gp", b"3gp5": "3gp",
    b"3gp6": "3gp", b"3g2a": "3gp", b"crx ": "cr3",
}
# TIFF-based camera RAW, by IFD0's Make (upper-cased): the camera makers whose RAW files are plain TIFF outside
_RAW_MAKES = (("NIKON", "nef"), ("SONY", "arw"), ("PENTAX", "pef"), ("RICOH", "pef"), ("SAMSUNG", "srw"))
_TIFF_IFD_BYTES = 64 * 1024  # IFD0 and its values are read from this much of the file's start, no further


def mime_type(fmt: str | None) -> str:
    return MIME_TYPES.get(fmt or "", "application/octet-stream")


def sniff(path: Path, name: str = "") -> str | None:
    """Return the format id of the file at ``path``, judged by its content."""
    with open(path, "rb") as f:
        head = f.read(HEAD)
    if not head:
        return None
    fmt = sniff_bytes(head)
    if fmt is None and _has_tga_footer(path):
        return "tga"
    if fmt == "zip":
        return _sniff_zip(path)
    if fmt in _COMPRESSED:
        inner = _inflated_head(head, fmt)
        if fmt == "gz" and b"<svg" in inner.lower():
            return "svgz"
        return _COMPRESSED[fmt] if inner[_TAR_MAGIC_AT:_TAR_MAGIC_AT + 5] == b"ustar" else fmt
    if fmt == "ole":
        return _sniff_ole(path, name)
    if fmt == "tiff":
        return _sniff_tiff(path)
    if fmt is None and _is_binary_stl(path, head):
        return "stl"
    if fmt is None:
        return _sniff_text(head, name)
    return fmt


def _is_binary_stl(path: Path, head: bytes) -> bool:
    """An 80-byte header (any bytes, "solid" too), then a triangle count that accounts for the file's size: 50
    bytes a triangle, less than one more left over. Text whose size happens to fit is not taken (a triangle's
    floats are binary)."""
    if len(head) < 84:
        return False
    count = head[80] | head[81] << 8 | head[82] << 16 | head[83] << 24  # little-endian
    extra = path.stat().st_size - (84 + 50 * count)
    if count == 0 or not 0 <= extra < 50:  # a few stray bytes at the end are common
        return False
    body = head[84:84 + 50 * min(count, 40)]
    return any(b < 9 or b > 126 for b in body)


def _sniff_tiff(path: Path) -> str:
    """A TIFF, or a camera RAW built on TIFF, from IFD0 (read from the file's first 64 KB only).

    DNG says so (a DNGVersion tag). The others are known by the maker in Make together with what a camera
    RAW has and a picture saved as TIFF has not: sub-IFDs (0x014A), an IFD0 that is a reduced-size preview
    (NewSubfileType bit 0) or a CFA sensor layout (Photometric 32803). A TIFF carrying a camera's EXIF stays tiff.
    """
    with open(path, "rb") as f:
        data = f.read(_TIFF_IFD_BYTES)
    little = data[:2] == b"II"

    def number(at: int, size: int) -> int:
        return int.from_bytes(data[at:at + size], "little" if little else "big")

    ifd = number(4, 4)
    if ifd + 2 > len(data):
        return "tiff"
    count = min(number(ifd, 2), (len(data) - ifd - 2) // 12)
    tags: dict[int, tuple[int, int, int]] = {}  # tag -> (type, count, where its value is)
    for index in range(count):
        entry = ifd + 2 + 12 * index
        kind, values = number(entry + 2, 2), number(entry + 4, 4)
        size = values * {1: 1, 2: 1, 3: 2, 4: 4}.get(kind, 8)
        tags[number(entry, 2)] = (kind, values, entry + 8 if size <= 4 else number(entry + 8, 4))
    if 0xC612 in tags:
        return "dng"
    kind, values, at = tags.get(0x010F, (0, 0, 0))
    make = data[at:at + min(values, 64)].split(b"\x00")[0].decode("latin-1").strip().upper() if kind == 2 else ""
    subfile = tags.get(0x00FE)
    photometric = tags.get(0x0106)
    raw_layout = (0x014A in tags or (subfile is not None and number(subfile[2], 4 if subfile[0] == 4 else 2) & 1)
                  or (photometric is not None and number(photometric[2], 2) == 32803))
    for maker, fmt in _RAW_MAKES:
        if make.startswith(maker) and raw_layout:
            return fmt
    return "tiff"


def _has_tga_footer(path: Path) -> bool:
    """A TGA 2.0 file ends with its signature (older ones are known by their header alone)."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        if f.tell() < 44:
            return False
        f.seek(-len(TGA_FOOTER), 2)
        return f.read() == TGA_FOOTER


def sniff_bytes(head: bytes) -> str | None:  # noqa: C901 - a flat table of signatures
    """Judge by the first bytes alone; ``zip`` and ``ole`` are containers to look into."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "wav"
    if head[:4] == b"RIFF" and head[8:12] == b"AVI ":
        return "avi"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "cr2" if head[8:11] == b"CR\x02" else "tiff"  # tiff: IFD0 may tell a camera's RAW (_sniff_tiff)
    if head[:4] in (b"IIRO", b"IIRS", b"MMOR"):
        return "orf"  # Olympus: TIFF with its own magic number
    if head[:4] == b"IIU\x00":
        return "rw2"  # Panasonic
    if head[:15] == b"FUJIFILMCCD-RAW":
        return "raf"
    if head[:2] == b"BM" and len(head) > 14:
        return "bmp"
    if head[:4] == b"\x00\x00\x01\x00":
        return "ico"
    if head[:5] == b"%PDF-":
        return "pdf"
    if head[:4] == b"%!PS" or head[:4] == b"\xc5\xd0\xd3\xc6":
        return "ps"
    if head[:4] == b"PK\x03\x04":
        return "zip"
    if head[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1":
        return "ole"
    if head[:5] == b"{\\rtf":
        return "rtf"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in _FTYP_BRANDS:
            return _FTYP_BRANDS[brand]
        compatible = head[16:64]
        for known, fmt in _FTYP_BRANDS.items():
            if known in compatible and fmt in ("avif", "heic"):
                return fmt
        return "mp4"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "webm" if b"webm" in head[:64] else "mkv"
    if head[:4] == b"fLaC":
        return "flac"
    if head[:4] == b"OggS":
        if b"\x80theora" in head[:128]:
            return "ogv"
        return "opus" if b"OpusHead" in head[:64] else "ogg"
    if _utf16_text(head) is not None:
        return None  # text with a byte order mark, not an MPEG sync word
    if len(head) > 1 and head[0] == 0xFF and head[1] & 0xF6 == 0xF0:
        return "aac"  # ADTS: an MPEG sync word whose layer bits are 00 (the branch below never sees it)
    if head[:3] == b"ID3" or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0 and head[1] & 0x06):
        if head[:3] != b"ID3" and head[1] & 0xF6 == 0xF0:
            return "aac"  # ADTS
        return "mp3"
    if head[:4] == b"FORM" and head[8:12] in (b"AIFF", b"AIFC"):
        return "aiff"
    if head[:16] == b"\x30\x26\xb2\x75\x8e\x66\xcf\x11\xa6\xd9\x00\xaa\x00\x62\xce\x6c":
        return "wmv"  # ASF; told apart from wma by streams, not bytes
    if head[:3] == b"FLV":
        return "flv"
    if head[:4] in (b"\x00\x00\x01\xba", b"\x00\x00\x01\xb3"):
        return "mpeg"
    media = _sniff_media(head)
    if media is not None:
        return media
    if head[60:68] in (b"BOOKMOBI", b"TEXtREAd"):
        return "mobi"
    if _is_pkcs12(head):
        return "p12"
    if head[:6] == b"7z\xbc\xaf\x27\x1c":
        return "7z"
    if head[:7] == b"Rar!\x1a\x07\x00" or head[:8] == b"Rar!\x1a\x07\x01\x00":
        return "rar"
    if head[_TAR_MAGIC_AT:_TAR_MAGIC_AT + 5] == b"ustar":
        return "tar"
    if head[:3] == b"\x1f\x8b\x08":
        return "gz"
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
        return "bz2"
    if head[:6] == b"\xfd7zXZ\x00":
        return "xz"
    if head[:4] == b"\x28\xb5\x2f\xfd":
        return "zst"
    if head[:4] in (b"\x00\x01\x00\x00", b"true") and _is_sfnt(head):
        return "ttf"
    if head[:4] == b"OTTO":
        return "otf"
    if head[:4] == b"wOFF":
        return "woff"
    if head[:4] == b"wOF2":
        return "woff2"
    if head.startswith((b"ply\n", b"ply\r\n")) and b"\nformat " in head[:200]:
        return "ply"  # ASCII or binary: the header is text either way
    if head[:4] == b"glTF" and head[4:8] == b"\x02\x00\x00\x00":
        return "glb"
    if head.startswith(b"AutoCAD Binary DXF\r\n\x1a\x00"):
        return "dxf"
    return _sniff_image(head)


def _sniff_media(head: bytes) -> str | None:  # noqa: C901 - a flat table of signatures
    """Audio and video containers and elementary streams beyond the common ones."""
    if _synced(head, 0, 188):
        return "ts"  # MPEG transport stream: a sync byte every 188 bytes
    if _synced(head, 4, 192):
        return "ts"  # M2TS (Blu-ray, AVCHD .mts): 192-byte packets, a 4-byte time code before each
    if head[:11] == bytes.fromhex("060e2b34020501010d0102"):
        return "mxf"  # a SMPTE partition pack key
    if head[:3] == b"\x1f\x07\x00" and head[3:4] in (b"\x3f", b"\xbf"):
        return "dv"  # a DIF header block, 525/60 or 625/50
    if head.startswith((b"#!AMR\n", b"#!AMR-WB\n")):
        return "amr"
    if head[:2] == b"\x0b\x77" and len(head) > 5:
        return "eac3" if head[5] >> 3 > 10 else "ac3"  # the bitstream id tells E-AC-3 (11-16) from AC-3
    if head[:4] in (b"\x7f\xfe\x80\x01", b"\xfe\x7f\x01\x80", b"\x1f\xff\xe8\x00", b"\xff\x1f\x00\xe8"):
        return "dts"
    if head[:4] == b"MAC ":
        return "ape"
    if head[:4] == b"wvpk":
        return "wv"
    if head[:4] == b"caff":
        return "caf"
    if head[:4] == b"\x00\x00\x00\x01" and len(head) > 5:
        if head[4] & 0x9F in (0x07, 0x09) and head[4] & 0x80 == 0:
            return "h264"  # starts with a sequence parameter set or an access unit delimiter
        if head[5] == 0x01 and (head[4] >> 1) & 0x3F in (32, 35) and head[4] & 0x81 == 0:
            return "hevc"  # a video parameter set or an access unit delimiter
    return None


def _synced(head: bytes, first: int, step: int) -> bool:
    """A 0x47 sync byte at the start of every packet in ``head`` (at least three of them), and not text."""
    starts = range(first, len(head) - step + 1, step)
    return len(starts) >= 3 and all(head[i] == 0x47 for i in starts) and any(b < 9 or b > 126 for b in head[:512])


def _sniff_image(head: bytes) -> str | None:  # noqa: C901 - a flat table of signatures
    """The image formats Pillow reads beyond the common ones."""
    if head[:12] == b"\x00\x00\x00\x0cjP  \r\n\x87\n" or head[:4] == b"\xff\x4f\xff\x51":
        return "jp2"  # the JP2 container, or a bare JPEG 2000 codestream
    if head[:2] == b"\xff\x0a" or head[:12] == b"\x00\x00\x00\x0cJXL \r\n\x87\n":
        return "jxl"  # a bare JPEG XL codestream, or its container
    if head[:4] == b"\x01\x00\x00\x00" and head[40:44] == b" EMF":
        return "emf"  # an EMR_HEADER record, its signature at offset 40
    if head[:4] == b"\xd7\xcd\xc6\x9a" or _is_wmf_header(head):
        return "wmf"  # the placeable (Aldus) header, or a bare metafile header
    if head[:4] == b"qoif":
        return "qoi"
    if head[:6] == b"8BPS\x00\x01":
        return "psd"  # Photoshop
    if head[:6] == b"8BPS\x00\x02":
        return "psb"  # Photoshop's large document format
    if head[:4] == b"DDS ":
        return "dds"
    if head[:4] == b"icns":
        return "icns"
    if head[:2] == b"\x01\xda" and head[2:3] in (b"\x00", b"\x01") and head[3:4] in (b"\x01", b"\x02"):
        return "sgi"
    if head[:1] == b"\x0a" and head[1:2] in (b"\x00", b"\x02", b"\x03", b"\x04", b"\x05") and head[2:3] == b"\x01" \
            and head[3:4] in (b"\x01", b"\x02", b"\x04", b"\x08"):
        return "pcx"
    match = _PNM.match(head)
    if match:
        return _PNM_KIND[match.group(1)]
    if _XBM.match(head):
        return "xbm"
    if _is_tga_header(head):
        return "tga"
    return None


def _is_tga_header(head: bytes) -> bool:
    """A TGA header: TGA has no magic at its start, so every field must be one a TGA can hold."""
    if len(head) < 18:
        return False
    id_length, colormap, kind = head[0], head[1], head[2]
    width, height = int.from_bytes(head[12:14], "little"), int.from_bytes(head[14:16], "little")
    depth, descriptor = head[16], head[17]
    if colormap not in (0, 1) or kind not in (1, 2, 3, 9, 10, 11) or depth not in (8, 15, 16, 24, 32):
        return False
    if (kind in (1, 9)) != (colormap == 1) or descriptor & 0xC0 or not (width and height):
        return False
    if colormap == 0 and head[3:8] != bytes(5):
        return False
    return id_length < 255 and width <= 65535 and height <= 65535


def _is_sfnt(head: bytes) -> bool:
    """A TrueType table directory: a sane table count, and tags of four printable characters."""
    tables = int.from_bytes(head[4:6], "big")
    if not 1 <= tables <= 100 or len(head) < 12 + 16 * min(tables, 4):
        return False
    tags = [head[12 + 16 * n:16 + 16 * n] for n in range(min(tables, 4))]
    return all(all(32 <= c < 127 for c in tag) for tag in tags)


def _inflated_head(head: bytes, fmt: str) -> bytes:
    """The first bytes the compressed stream starting with ``head`` inflates to: enough for a tar header or
    an SVG's root element, from the 4 KB already read (a bomb cannot make this expensive)."""
    want = 1024
    try:
        if fmt == "gz":
            inner = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, want)
        elif fmt == "bz2":
            inner = bz2.BZ2Decompressor().decompress(head, want)
        elif fmt == "xz":
            inner = lzma.LZMADecompressor().decompress(head, want)
        else:
            inner = _zstd_head(head, want)
    except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError):
        return b""
    return bytes(inner)


def _zstd_head(head: bytes, want: int) -> bytes:
    try:
        import zstandard
    except ImportError:  # without the library, a .tar.zst reads as a single compressed file
        return b""
    reader = zstandard.ZstdDecompressor().decompressobj()
    try:
        return bytes(reader.decompress(head))[:want]
    except zstandard.ZstdError:
        return b""


# PKCS#7 ContentInfo types a PFX wraps its contents in: data (password integrity) or signedData.
_PKCS7_CONTENT_OIDS = (bytes.fromhex("06092a864886f70d010701"), bytes.fromhex("06092a864886f70d010702"))


def _der_content(data: bytes, at: int) -> int | None:
    """Where the content of the DER/BER SEQUENCE at ``at`` begins; ``None`` when no SEQUENCE starts there."""
    if len(data) < at + 2 or data[at] != 0x30:
        return None
    first = data[at + 1]
    if first <= 0x80:  # short form, or BER's indefinite length
        return at + 2
    if first <= 0x84:
        return at + 2 + (first - 0x80)
    return None


def _is_pkcs12(head: bytes) -> bool:
    """A PKCS#12 file (.p12/.pfx): ``PFX ::= SEQUENCE { version 3, ContentInfo { data | signedData } ... }``.

    Judged by that structure, not by a password-protected parse: the password is a job param, unknown here.
    """
    body = _der_content(head, 0)
    if body is None or head[body:body + 3] != b"\x02\x01\x03":
        return False
    content = _der_content(head, body + 3)
    return content is not None and head[content:content + 11] in _PKCS7_CONTENT_OIDS


def _sniff_zip(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            if any(n.lower() == "3d/3dmodel.model" for n in names):
                return "3mf"  # the 3D manufacturing format's start part, at its usual place
            if "mimetype" in names:
                info = zf.getinfo("mimetype")
                if info.file_size < 200:
                    mimetype = zf.read("mimetype").decode("ascii", "replace").strip()
                    for fmt in ("epub", "odt", "ods", "odp"):
                        if mimetype == MIME_TYPES[fmt]:
                            return fmt
            if "[Content_Types].xml" in names:
                if any(n.startswith("word/") for n in names):
                    return "docx"
                if any(n.startswith("xl/") for n in names):
                    return "xlsx"
                if any(n.startswith("ppt/") for n in names):
                    return "pptx"
                if any(n.startswith("Documents/") for n in names):
                    return "xps"
            images = [n for n in names if not n.endswith("/")]
            if images and all(n.lower().endswith((".jpg", ".jpeg", ".png", ".gif", ".webp", ".xml")) for n in images):
                return "cbz"
    except (zipfile.BadZipFile, OSError, ValueError):
        pass
    return "zip"


def _is_wmf_header(head: bytes) -> bool:
    """A standard WMF header: in memory or on disk (1, 2), 9 words long, Windows 3.0 or later (0x0300, 0x0100)."""
    return len(head) >= 18 and head[:4] in (b"\x01\x00\x09\x00", b"\x02\x00\x09\x00") \
        and head[4:6] in (b"\x00\x03", b"\x00\x01")


OLE_SNIFF_BYTES = 64 * 1024**2  # above this (and above any Outlook message FileKiln reads), the name decides


def _sniff_ole(path: Path, name: str) -> str:
    """An Outlook message by its directory (a property stream and ``__substg1.0_`` streams at the root);
    Word, Excel and PowerPoint files by name, as their streams were never looked at. A directory that cannot
    be read leaves it to the name, ``.msg`` included (a damaged message is then refused as damaged)."""
    outlook = _is_outlook_message(path)
    if outlook:
        return "msg"
    suffix = Path(name).suffix.lower()
    if outlook is None and suffix == ".msg":
        return "msg"
    return {".xls": "xls", ".ppt": "ppt"}.get(suffix, "doc")


def _utf16_text(head: bytes) -> str | None:
    """The text of a UTF-16 file with its byte order mark, when it reads as text."""
    if head[:2] not in (b"\xff\xfe", b"\xfe\xff"):
        return None
    body = head[: len(head) // 2 * 2]
    text = body.decode("utf-16", errors="replace")
    shown = sum(1 for c in text if c.isprintable() or c in "\r\n\t")
    return text if text and "\x00" not in text and shown >= 0.95 * len(text) else None


def _sniff_text(head: bytes, name: str) -> str | None:  # noqa: C901 - a flat table of text signatures
    wide = _utf16_text(head)
    if wide is not None:
        head = wide.lstrip("\ufeff").encode("utf-8")
    if b"\x00" in head:
        return None
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # a real error, not a cut multibyte character
            try:
                text = head.decode("utf-16") if head[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
            except UnicodeDecodeError:
                text = ""
            if not text:  # 8-bit text in a legacy encoding is taken only as a subtitle file or a DXF drawing
                legacy = head.decode("latin-1")
                return _subtitle(legacy) or ("dxf" if _DXF.match(legacy.lstrip("\ufeff \t\r\n")) else None)
        else:
            text = head[: exc.start].decode("utf-8")
    stripped = text.lstrip("\ufeff \t\r\n").lower()
    subtitle = _subtitle(text)
    if subtitle is not None:
        return subtitle
    if _is_email(text):
        return "eml"
    if stripped.startswith("#extm3u"):
        return "m3u8"
    if stripped.startswith("ffconcat"):
        return "ffconcat"
    if stripped.startswith(("<!doctype html", "<html")) or "<html" in stripped[:512]:
        return "html"
    if stripped.startswith("<?xml") or stripped.startswith("<svg"):
        if "<svg" in stripped:
            return "svg"
        if "<fictionbook" in stripped:
            return "fb2"
        if _is_ttml(stripped):
            return "ttml"
        return "xml"
    if _is_ttml(stripped):  # TTML without an XML declaration
        return "ttml"
    model = _model_text(text)
    if model is not None:
        return model
    suffix = Path(name).suffix.lower()
    if suffix in (".html", ".htm"):
        return "html"
    return _TEXT_BY_SUFFIX.get(suffix, "txt")


def _subtitle(text: str) -> str | None:
    """``srt``, ``vtt``, ``ass``, ``ssa`` or ``sub`` (MicroDVD) from the first lines, else ``None``."""
    stripped = text.lstrip("\ufeff \t\r\n")
    lowered = stripped[:4096].lower()
    if lowered.startswith("webvtt"):
        return "vtt"
    if lowered.startswith("[script info]"):
        return "ass" if "v4.00+" in lowered else "ssa"
    if _SRT.match(stripped):
        return "srt"
    if _MICRODVD.match(stripped):
        return "sub"
    return None


_HEADER = re.compile(r"^[!-9;-~]+:")  # a header field's name: printable ASCII but the colon
_MESSAGE_HEADERS = ("subject", "date", "message-id", "mime-version", "received", "to")


def _is_email(text: str) -> bool:
    """An RFC 5322 message: header lines up to the first empty line, and a From with one of the usual others
    (or MIME-Version with Content-Type)."""
    names: list[str] = []
    for line in text.lstrip("\ufeff").splitlines():
        if not line.strip():
            break
        if line[:1] in (" ", "\t") and names:
            continue  # a folded header's continuation
        if line.startswith("From ") and not names:
            continue  # an mbox "From " line
        if not _HEADER.match(line):
            return False
        names.append(line.split(":", 1)[0].lower())
    if "from" in names and any(name in names for name in _MESSAGE_HEADERS):
        return True
    return "mime-version" in names and "content-type" in names  # a MIME entity (a forwarded or saved part)


def _is_ttml(lowered: str) -> bool:
    """Timed Text: a <tt> root in the TTML namespace, or in DFXP's older one (ttaf1)."""
    return bool(re.search(r"<tt[\s>]", lowered[:4096])) and ("ttml" in lowered[:4096] or "ttaf1" in lowered[:4096])


def _is_outlook_message(path: Path) -> bool | None:
    """The root storage holds ``__properties_version1.0`` and property streams; read by olefile, for files up
    to :data:`OLE_SNIFF_BYTES` (the directory of a bigger one could take long to walk). ``None`` when the
    directory cannot be read."""
    if path.stat().st_size > OLE_SNIFF_BYTES:
        return False
    try:
        import olefile
    except ImportError:  # without it (it comes with extract-msg), an MSG is not told apart
        return None
    try:
        with olefile.OleFileIO(str(path), raise_defects=olefile.DEFECT_INCORRECT) as ole:
            root = [entry.name for entry in ole.root.kids]
    except Exception:  # noqa: BLE001 - a damaged OLE2 file raises what the damage leads to
        return None
    return "__properties_version1.0" in root and any(n.startswith("__substg1.0_") for n in root)


_DXF = re.compile(r"\A(?:\s*999\r?\n[^\n]*\n)*\s*0\s*\r?\n\s*SECTION\s*\r?\n\s*2\s*\r?\n\s*[A-Z]+")
_OBJ_KEYWORDS = ("v", "vt", "vn", "vp", "f", "l", "p", "o", "g", "s", "mg", "usemtl", "mtllib", "cstype", "deg", "curv",
                 "curv2", "surf", "parm", "trim", "hole", "end", "lod", "#", "")


def _model_text(text: str) -> str | None:
    """3D models and drawings in text: ASCII STL, OBJ, PLY, OFF, glTF (JSON) and DXF (group codes)."""
    stripped = text.lstrip("\ufeff \t\r\n")
    lowered = stripped[:4096].lower()
    if lowered.startswith("solid") and ("facet" in lowered or "endsolid" in lowered):
        return "stl"
    first = stripped.split("\n", 1)[0].strip()
    if first in ("OFF", "COFF", "NOFF", "CNOFF") or re.match(r"\A(?:C?N?OFF)\s+\d+\s+\d+", first):
        return "off"
    if stripped.startswith("{") and '"asset"' in stripped and re.search(r'"version"\s*:\s*"2', stripped):
        return "gltf"
    if _DXF.match(stripped):
        return "dxf"
    lines = stripped.splitlines()[:-1] or stripped.splitlines()  # the last may be cut off
    words = [line.split(None, 1)[0] if line.strip() else "" for line in lines]
    keywords = [w if not w.startswith("#") else "#" for w in words]
    if "v" in keywords and all(w in _OBJ_KEYWORDS for w in keywords):
        return "obj"
    return None
