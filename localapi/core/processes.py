"""Which process holds something (a running job, an in-flight request), and whether it is gone.

An identity is ``host:pid:start-time``: a pid reused by a later process does not pass for the one
that made the claim. A process on another machine cannot be looked at from here; its claims are
judged by their heartbeats alone.
"""

from __future__ import annotations

import socket

import psutil


def process_identity() -> str:
    proc = psutil.Process()
    return f"{socket.gethostname()}:{proc.pid}:{proc.create_time():.3f}"


def process_is_gone(identity: str | None) -> bool:
    if not identity:
        return True
    host, _, rest = identity.partition(":")
    pid_text, _, created = rest.partition(":")
    if host != socket.gethostname():
        return False  # another machine: judged by its heartbeat only
    try:
        proc = psutil.Process(int(pid_text))
        return f"{proc.create_time():.3f}" != created
    except (psutil.NoSuchProcess, ValueError):
        return True
