"""Workflows and presets: several steps run as ordinary jobs, and named lists of steps to reuse.

- :mod:`.records` — what a workflow, a step and a preset are;
- :mod:`.presets` — saved and built-in presets, and their JSON files;
- :mod:`.service` — create, check, read, advance and cancel workflows.

(Nothing is imported here: the job event feed imports :mod:`.records`, and :mod:`.service` imports the feed.)
"""
