"""``filekiln presets``: list, export, import and delete presets (shared with the API, the desktop and
watch folders); an import is checked as a workflow would be, and saves nothing unless all can be saved.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from localapi.config import Settings


def preset_json(preset: Any) -> dict[str, Any]:
    return {"name": preset.name, "description": preset.description, "builtin": preset.builtin,
            "steps": [s.to_json() for s in preset.steps]}


def cmd_presets(args: argparse.Namespace, settings: Settings) -> int:
    """List, export and delete presets (the database only), or import them (checked by the workflow service)."""
    from localapi.core.db import open_database
    from localapi.core.errors import ServiceError
    from localapi.core.workflows.presets import PresetStore

    if args.presets_command == "import":
        return import_presets(args, settings)
    presets = PresetStore(open_database(settings))
    try:
        if args.presets_command == "list":
            listed = presets.all()
            if args.json:
                print(json.dumps([preset_json(p) for p in listed]))
            else:
                for p in listed:
                    chain = " -> ".join(f"{s.tool} ({s.output_format or 'default'})" for s in p.steps)
                    print(f"{p.name:28} {'built-in' if p.builtin else 'saved':8} {chain}")
        elif args.presets_command == "export":
            text = json.dumps(presets.export(args.names or None), indent=2, ensure_ascii=False)
            if args.out is None:
                print(text)
            else:
                args.out.write_text(text + "\n", encoding="utf-8")
                print(f"Exported to {args.out}.", file=sys.stderr)
        else:
            presets.delete(args.name)
            print(f"Deleted {args.name}.")
    except ServiceError as exc:
        print(f"{exc.code}: {exc.detail}", file=sys.stderr)
        return 1
    return 0


def import_presets(args: argparse.Namespace, settings: Settings) -> int:
    """Check every preset in the file as a workflow would, then save them all (secrets never kept)."""
    from localapi.core.errors import ServiceError
    from localapi.core.workflows.presets import BUILTIN, PresetStore

    try:
        data = json.loads(args.file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"Cannot read {args.file}: {exc}", file=sys.stderr)
        return 1
    except RecursionError:
        print(f"Cannot read {args.file}: its JSON is nested too deeply to be a presets file.", file=sys.stderr)
        return 1
    from localapi.core.service import Service

    service = Service.open(settings)  # the workflow service checks each chain; no workers start
    try:
        taken = {p.name for p in service.presets.all() if not p.builtin}
        ready = []
        for name, description, steps in PresetStore.parse_export(data):
            if name in BUILTIN:
                print(f"preset_builtin: {name!r} is a built-in preset; import it under another name.", file=sys.stderr)
                return 1
            if name in taken and not args.replace:
                print(f"preset_exists: a preset named {name!r} exists already (--replace overwrites it).",
                      file=sys.stderr)
                return 1
            try:
                public = service.workflows.preset_steps(steps)
            except ServiceError as exc:
                print(f"{exc.code}: preset {name!r}: {exc.detail}", file=sys.stderr)
                return 1
            taken.add(name)
            ready.append((name, description, public))
        for name, description, public in ready:  # nothing is saved unless every one can be
            service.presets.save(name, public, description, replace=True)
            print(f"Imported {name}.")
    except ServiceError as exc:
        print(f"{exc.code}: {exc.detail}", file=sys.stderr)
        return 1
    finally:
        service.close()
    return 0
