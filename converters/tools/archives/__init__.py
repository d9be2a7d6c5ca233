"""Archive tools: extract, create and convert ZIP, 7z, tar (plain, gz, bz2, xz, zst) and RAR (read only)."""

from converters.base import Tool
from converters.tools.archives.tools import ArchiveConvert, ArchiveCreate, ArchiveExtract

TOOLS: list[Tool] = [ArchiveExtract(), ArchiveCreate(), ArchiveConvert()]
