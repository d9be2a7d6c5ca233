"""Runtime switches shared by every process through the database: maintenance mode and disabled tools."""

from __future__ import annotations

import json
import time

from converters.base import Tool, ToolEnv
from localapi.core.db import Database

AVAILABILITY_TTL = 30.0  # seconds a tool's "can it run here" answer is reused (an engine installed meanwhile)


class Switches:
    """What an operator turns on and off while FileKiln runs (the API panel, Settings, ``filekiln tools``),
    and whether each tool can run here at all.

    Whether a tool's engines and models are installed takes milliseconds to work out (imports looked
    up, executables searched, model folders read) and changes only when something is installed, so
    the answer is kept for ``AVAILABILITY_TTL`` seconds, or until :meth:`refresh` (after a model
    download). The switches themselves are read from the database every time: another process may
    change them.
    """

    def __init__(self, db: Database, tool_env: ToolEnv) -> None:
        self.db = db
        self.tool_env = tool_env
        self._reasons: dict[str, tuple[float, str | None]] = {}

    def refresh(self) -> None:
        """Forget what is known about engines and models: something was installed or removed."""
        self._reasons = {}

    def unavailable_reason(self, tool: Tool) -> str | None:
        """Why ``tool``'s engines or models are missing here, or None (see the class docstring)."""
        known = self._reasons.get(tool.id)
        if known is not None and time.monotonic() - known[0] < AVAILABILITY_TTL:
            return known[1]
        reason = tool.unavailable_reason(self.tool_env)
        self._reasons[tool.id] = (time.monotonic(), reason)
        return reason

    @property
    def maintenance(self) -> bool:
        return self.db.get_setting("maintenance", "0") == "1"

    def read(self) -> tuple[bool, set[str]]:
        """Maintenance mode and the disabled tools, in one read (what every new job is checked against)."""
        values = self.db.get_settings("maintenance", "disabled_tools")
        return values.get("maintenance") == "1", _tool_set(values.get("disabled_tools"))

    def set_maintenance(self, on: bool) -> None:
        self.db.set_setting("maintenance", "1" if on else "0")

    def disabled_tools(self) -> set[str]:
        return _tool_set(self.db.get_setting("disabled_tools"))

    def set_tool_disabled(self, tool_id: str, disabled: bool) -> None:
        tools = self.disabled_tools()
        tools = tools | {tool_id} if disabled else tools - {tool_id}
        self.db.set_setting("disabled_tools", json.dumps(sorted(tools)))

    def tool_status(self, tool: Tool, disabled: set[str] | None = None) -> tuple[bool, str | None]:
        """(available, why not): disabled here, or its engine or model is missing. ``disabled``: the
        disabled tools when the caller has read them already (one read for a whole list)."""
        if tool.id in (self.disabled_tools() if disabled is None else disabled):
            return False, "This tool is disabled in the settings."
        reason = self.unavailable_reason(tool)
        return reason is None, reason


def _tool_set(stored: str | None) -> set[str]:
    return set(json.loads(stored or "[]"))
