"""Watch folders: every file that lands in a folder is run through a preset, its outputs written to another.

- :mod:`.records` — what a watched folder and the outcome of one file are;
- :mod:`.ledger` — which files were taken, by path + size + mtime + hash, and how each ended;
- :mod:`.watcher` — one folder at run time: events, settling, taking, following, delivering;
- :mod:`.folders` — the stored folders, and the watchers of the ones that run (:func:`open_watch`).
"""

from localapi.core.watch.folders import WatchFolders, open_watch
from localapi.core.watch.records import WatchFolder, WatchResult

__all__ = ["WatchFolder", "WatchFolders", "WatchResult", "open_watch"]
