"""The catalogue: every tool module under ``converters.tools`` that exports ``TOOLS``.

A new tool family slots in by adding a module there; nothing else changes.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
from collections.abc import Iterator
from functools import cache
from types import ModuleType

from converters import tools as _tools_pkg
from converters.base import Tool

log = logging.getLogger("filekiln.catalogue")


class Catalogue:
    def __init__(self, tools: list[Tool], broken: dict[str, str] | None = None) -> None:
        self._tools = {tool.id: tool for tool in tools}
        self.broken = broken or {}  # module name -> why it could not be loaded
        if len(self._tools) != len(tools):
            raise ValueError("duplicate tool ids in the catalogue")

    def __iter__(self) -> Iterator[Tool]:
        return iter(sorted(self._tools.values(), key=lambda t: (t.category, t.id)))

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, tool_id: str) -> Tool | None:
        return self._tools.get(tool_id)

    def in_category(self, category: str | None) -> list[Tool]:
        return [t for t in self if category is None or t.category == category]

    def for_formats(self, formats: set[str]) -> list[Tool]:
        """The tools that accept every one of ``formats``."""
        return [t for t in self if formats and formats <= set(t.accepts)]


def tool_modules(package: ModuleType = _tools_pkg) -> list[str]:
    return sorted(
        f"{package.__name__}.{info.name}"
        for info in pkgutil.iter_modules(package.__path__)
        if not info.name.startswith("_")
    )


@cache
def load_catalogue() -> Catalogue:
    return discover(_tools_pkg)


def discover(package: ModuleType) -> Catalogue:
    """Every tool of every module in ``package``. A module that fails to import loses its own tools only."""
    tools: list[Tool] = []
    broken: dict[str, str] = {}
    for name in tool_modules(package):
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            log.exception("tool module %s could not be loaded", name)
            broken[name] = f"{type(exc).__name__}: {exc}"
            continue
        tools.extend(getattr(module, "TOOLS", []))
    return Catalogue(tools, broken)
