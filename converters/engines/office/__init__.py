"""LibreOffice, done right: warm headless instances, one conversion at a time each, hardened profiles.

A worker process keeps a small pool (``office_instances``, default 1) of long-lived ``soffice --headless``
instances, started on first need. Each has its own profile directory under the data dir (never the user's
own LibreOffice profile), seeded with settings that never run macros and never load linked content. A
conversion holds its instance exclusively; the instance is restarted after ``office_max_conversions``
conversions, after a failure, and after a conversion that hit its timeout (it is killed, process group and
all). FileKiln talks to the instance through :mod:`converters.engines.office.bridge`, run by a Python that has the
``uno`` module (LibreOffice's bundled one, or Debian's ``python3-uno``).

Where no such Python exists, each conversion runs a fresh ``soffice --headless --convert-to`` with a
throw-away hardened profile instead: slower (a cold start per file) but equally isolated.

Settings read (all optional): ``libreoffice_path``, ``office_python``, ``office_profile_dir``,
``office_instances``, ``office_max_conversions``, ``office_timeout_seconds``, ``office_mode``
(``warm`` | ``cold``).

Job processes are short-lived, so LibreOffice is a resident engine (:data:`OFFICE`): the job engine
gives each of its workers a *slot* (``ToolEnv.slots["office"]``), and the soffice started there
outlives the job that started it and is adopted by the next job of that worker (its pid and pipe are
in ``state.json``). Only the bridge is per job. The job engine ends a slot's soffice with
:func:`stop_slot` when a job did not finish cleanly, and all of them when the workers stop.
"""

from converters.engines.office.convert import office_available, office_convert
from converters.engines.office.instances import OFFICE, close_pools, get_pool, stop_slot
from converters.engines.office.locate import (
    INSTALL_HINT,
    cold_command,
    find_soffice,
    find_uno_python,
    listen_command,
    registry_xcu,
    seed_profile,
)

__all__ = [
    "INSTALL_HINT", "OFFICE", "close_pools", "cold_command", "find_soffice", "find_uno_python", "get_pool",
    "listen_command", "office_available", "office_convert", "registry_xcu", "seed_profile", "stop_slot",
]
