"""Runtime switches shared by every process through the database: maintenance mode and disabled tools."""

from __future__ import annotations

import json

from converters.base import Tool, ToolEnv
from localapi.core.db import Database


class Switches:
    """What an operator turns on and off while FileKiln runs (the API panel, Settings, ``filekiln tools``)."""

    def __init__(self, db: Database, tool_env: ToolEnv) -> None:
        self.db = db
        self.tool_env = tool_env

    @property
    def maintenance(self) -> bool:
        return self.db.get_setting("maintenance", "0") == "1"

    def set_maintenance(self, on: bool) -> None:
        self.db.set_setting("maintenance", "1" if on else "0")

    def disabled_tools(self) -> set[str]:
        return set(json.loads(self.db.get_setting("disabled_tools", "[]") or "[]"))

    def set_tool_disabled(self, tool_id: str, disabled: bool) -> None:
        tools = self.disabled_tools()
        tools = tools | {tool_id} if disabled else tools - {tool_id}
        self.db.set_setting("disabled_tools", json.dumps(sorted(tools)))

    def tool_status(self, tool: Tool) -> tuple[bool, str | None]:
        """(available, why not): disabled here, or its engine or model is missing."""
        if tool.id in self.disabled_tools():
            return False, "This tool is disabled in the settings."
        reason = tool.unavailable_reason(self.tool_env)
        return reason is None, reason
