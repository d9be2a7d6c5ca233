"""The ``ai`` tool family: background removal with U²-Net, summaries and translations with a local LLM.

The tools live in ``ai_background`` and ``ai_text``; this module only lists them for the catalogue.
"""

from __future__ import annotations

from converters.tools.ai.background import RemoveBackground
from converters.tools.ai.text import Summarize, Translate

TOOLS = [RemoveBackground(), Summarize(), Translate()]
