"""XML from inside users' files: what FileKiln's own code parses, and the SVG images Typst is given.

Expat fetches no external entities and no external DTD, and from 2.4.1 it stops "billion laughs" -- but only
past 8 MiB of expanded text and an amplification of 100. A 3 MB part of repeated references to a 280-byte
entity zips to 4 KB, passes the zip-bomb check and expands to 280 MB (Typst's SVG reader has no ratio limit
at all). No part FileKiln reads needs entities of its own (EPUB container and package, FB2, ODF content,
OOXML parts, SVG images), so declaring one ends the parse: ``ConversionError("unsafe_input")``. Malformed
XML raises :class:`xml.etree.ElementTree.ParseError`, as ElementTree's own parser does.
"""

from __future__ import annotations

import pyexpat
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO
from xml.etree import ElementTree

from converters.base import ConversionError

CHUNK = 64 * 1024  # expat is fed piece by piece: a declaration stops the parse within one piece


class _RootReached(Exception):
    """The root element started; no declaration can follow."""


def _refuse(*_: object) -> None:
    raise ConversionError("unsafe_input", "The file's XML declares entities (<!ENTITY ...>); FileKiln does not "
                          "expand them.")


def _undefined(name: str, is_parameter_entity: bool) -> None:
    # a reference to an entity of an external DTD, which is never read: an error, as in ElementTree
    raise ElementTree.ParseError(f"undefined entity &{name};")


FLAT_ENTITY_MAX = 4096  # characters of one flat entity's text


def _flat_only(name: str, is_parameter: int, value: str | None, *_: object) -> None:
    """Let an entity through only when it is plain text: internal, short, naming no other entity.

    Adobe Illustrator writes its namespaces as such entities (``<!ENTITY ns_svg "http://...">``); without
    references inside one another they expand at most linearly, never exponentially.
    """
    if is_parameter or value is None or "&" in value or "%" in value or len(value) > FLAT_ENTITY_MAX:
        _refuse()


def _parser(flat_entities: bool = False) -> pyexpat.XMLParserType:
    parser = pyexpat.ParserCreate(namespace_separator="}")
    parser.EntityDeclHandler = _flat_only if flat_entities else _refuse
    parser.UnparsedEntityDeclHandler = _refuse
    parser.SkippedEntityHandler = _undefined
    return parser


def _feed(parser: pyexpat.XMLParserType, chunks: Iterable[bytes]) -> None:
    try:
        for chunk in chunks:
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except pyexpat.ExpatError as exc:
        raise ElementTree.ParseError(str(exc)) from None


def _name(name: str) -> str:
    return "{" + name if "}" in name else name  # expat says "uri}local", ElementTree "{uri}local"


def _tree(chunks: Iterable[bytes], flat_entities: bool = False) -> ElementTree.Element:
    builder = ElementTree.TreeBuilder()
    parser = _parser(flat_entities)
    parser.buffer_text = True

    def start(tag: str, attrib: dict[str, str]) -> None:
        builder.start(_name(tag), {_name(key): value for key, value in attrib.items()})

    def end(tag: str) -> None:
        builder.end(_name(tag))

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    _feed(parser, chunks)
    return builder.close()


def fromstring(data: bytes, *, flat_entities: bool = False) -> ElementTree.Element:
    """``ElementTree.fromstring`` for untrusted bytes; ``flat_entities`` admits plain-text internal entities."""
    return _tree((data[i : i + CHUNK] for i in range(0, len(data), CHUNK)), flat_entities)


def parse(path: Path) -> ElementTree.Element:
    """``ElementTree.parse(path).getroot()`` for an untrusted file."""
    with open(path, "rb") as f:
        return _tree(iter(lambda: f.read(CHUNK), b""))


def root_element(chunks: Iterable[bytes], *, flat_entities: bool = False) -> ElementTree.Element:
    """The root element of the XML in ``chunks``, its attributes and no children: the parse stops where
    the root starts, so a large document costs what its head costs. Raises ``ParseError`` when the chunks
    end before a root element (the caller bounds them)."""
    parser = _parser(flat_entities)
    found: list[ElementTree.Element] = []

    def start(tag: str, attrib: dict[str, str]) -> None:
        found.append(ElementTree.Element(_name(tag), {_name(key): value for key, value in attrib.items()}))
        raise _RootReached

    parser.StartElementHandler = start
    try:
        _feed(parser, chunks)
    except _RootReached:
        return found[0]
    raise ElementTree.ParseError("no root element")


def check(stream: IO[bytes]) -> None:
    """Raise ``unsafe_input`` when the XML in ``stream`` declares entities, for XML an engine parses.

    Reads only up to the root element; malformed XML is left for the engine to judge.
    """
    parser = _parser()

    def stop(*_: object) -> None:
        raise _RootReached

    parser.StartElementHandler = stop
    try:
        _feed(parser, iter(lambda: stream.read(CHUNK), b""))
    except (_RootReached, ElementTree.ParseError):
        pass


def check_archive(path: Path, suffixes: tuple[str, ...] = (".xml", ".rels")) -> None:
    """:func:`check` every XML part of a ZIP container (a file that is no ZIP is left to its reader)."""
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if info.filename.lower().endswith(suffixes):
                    with zf.open(info) as member:
                        check(member)
    except zipfile.BadZipFile:
        pass
