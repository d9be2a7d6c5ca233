"""What the app remembers, as small files in ``<data dir>/desktop/`` (and ``settings.toml``), each written
atomically. No Qt here: these are read and written from the GUI thread and the background pools alike.

- ``presets.json``: per tool, the last choice, and the named presets of earlier versions, imported once
  into the service's presets (:class:`PresetStore`);
- ``desktop.json``: the app's own preferences (:class:`Prefs`);
- ``deliveries.json``: where each job's results go and where they went (:class:`DeliveryStore`);
  ``workflow_deliveries.json`` the same for workflows, keyed by workflow id;
- result names: templates such as ``{name}-compressed.{ext}`` (:mod:`desktop.store.naming`);
- ``settings.toml``: the service settings shared with ``filekiln serve`` (:class:`SettingsFile`).
"""

from desktop.store.deliveries import CLASH_POLICIES, Delivery, DeliveryStore, copy_results, resolve_target
from desktop.store.naming import PLACEHOLDERS, check_template, default_template, render_name
from desktop.store.prefs import Prefs
from desktop.store.presets import PresetStore
from desktop.store.settings_toml import RESTART_KEYS, SettingsFile, dump_toml

__all__ = ["CLASH_POLICIES", "PLACEHOLDERS", "RESTART_KEYS", "Delivery", "DeliveryStore", "PresetStore", "Prefs",
           "SettingsFile", "check_template", "copy_results", "default_template", "dump_toml", "render_name",
           "resolve_target"]
