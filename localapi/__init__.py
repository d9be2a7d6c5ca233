"""FileKiln's service core (``localapi.core``), its HTTP face (``localapi.http``) and CLI."""

from __future__ import annotations

import importlib.metadata

try:
    __version__ = importlib.metadata.version("filekiln")
except importlib.metadata.PackageNotFoundError:  # running from a source tree or a frozen build
    __version__ = "0.1.0"

API_VERSION = "1.0.0"  # the machine-readable description's version; the app's is separate
