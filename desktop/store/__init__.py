"""What the app remembers, as small files in ``<data dir>/desktop/`` (and ``settings.toml``), each written
atomically. No Qt here: these are read and written from the GUI thread and the background pools alike.

- ``presets.json``: per tool, the last choice and named presets (:class:`PresetStore`);
- ``desktop.json``: the app's own preferences (:class:`Prefs`);
- ``deliveries.json``: where each job's results go and where they went (:class:`DeliveryStore`);
- ``settings.toml``: the service settings shared with ``filekiln serve`` (:class:`SettingsFile`).
"""

from desktop.store.deliveries import CLASH_POLICIES, Delivery, DeliveryStore, copy_results, resolve_target
from desktop.store.prefs import Prefs
from desktop.store.presets import PresetStore
from desktop.store.settings_toml import RESTART_KEYS, SettingsFile, dump_toml

__all__ = ["CLASH_POLICIES", "RESTART_KEYS", "Delivery", "DeliveryStore", "PresetStore", "Prefs", "SettingsFile",
           "copy_results", "dump_toml", "resolve_target"]
