"""Engines: the libraries and programs tools run on, each wrapped once with its timeouts, limits and errors."""
