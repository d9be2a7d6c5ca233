"""FileKiln launcher: the ``filekiln`` command."""
