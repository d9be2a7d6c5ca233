"""The data dir is private to the user who runs FileKiln (POSIX).

It holds uploads, results, the database (with the link-signing secret and job params) and logs.
The folder itself is made 0700, which alone keeps every other local user out of everything in
it; what is inside is tightened as well (folders 0700, files 0600), once at start-up on a thread,
so a data dir made by an older release or copied in with looser modes is fixed without delaying
the start. The server and worker processes also run with umask 077, so what they and their
engines create is private from the start; the desktop app and the CLI do not, because they
write results into the user's own folders, where the user's usual modes belong.

On Windows the data dir lives in the user's profile, whose ACLs already keep other users out.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from pathlib import Path

log = logging.getLogger("filekiln")

PRIVATE_UMASK = 0o077


def make_private(data_dir: Path) -> threading.Thread | None:
    """Make ``data_dir`` 0700 now and tighten what is inside on a thread (returned, already started)."""
    if os.name != "posix":
        return None
    data_dir.mkdir(parents=True, exist_ok=True)
    _tighten(data_dir)
    thread = threading.Thread(target=_tighten_tree, args=(data_dir,), daemon=True, name="filekiln-modes")
    thread.start()
    return thread


def private_now(data_dir: Path, *files: Path) -> None:
    """Make ``data_dir`` 0700 (creating it) and ``files`` in it 0600, now: for what is made before, or
    without, the service (``filekiln keys create`` on a new data dir makes it and its database)."""
    if os.name != "posix":
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    for path in (data_dir, *files):
        _tighten(path)


def private_umask() -> None:
    """Files this process (and what it starts) creates from now on are readable by this user only."""
    if os.name == "posix":
        os.umask(PRIVATE_UMASK)


def _tighten_tree(root: Path) -> None:
    try:
        for folder, dirs, files in os.walk(root):
            for name in (*dirs, *files):
                _tighten(Path(folder, name))
    except Exception:
        log.exception("could not tighten the modes under %s", root)


def _tighten(path: Path) -> None:
    """Drop the group and other bits of a folder or regular file (links and sockets are left alone)."""
    try:
        st = path.lstat()
        mode = stat.S_IMODE(st.st_mode)
        if (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) and mode & 0o077:
            os.chmod(path, mode & ~0o077)
    except OSError:
        pass  # gone meanwhile (a finished job's work dir), or not ours to change
