"""The ``filekiln`` command line: the desktop app, the server, workers, keys, tools, models and local conversions."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from filekiln.convert import ProgressBar, cmd_convert
from filekiln.presets import cmd_presets
from filekiln.signals import caught
from localapi import __version__
from localapi.config import DEFAULT_PORT, SettingError, Settings, is_loopback_host, load_settings
from localapi.core.datadir import private_umask
from localapi.logs import setup_logging


def build_parser() -> argparse.ArgumentParser:
    data_dir_help = "where FileKiln keeps its database and files (env FILEKILN_DATA_DIR)"
    parser = argparse.ArgumentParser(prog="filekiln", description="Convert, compress and transform files locally.")
    parser.add_argument("--data-dir", type=Path, default=None, help=data_dir_help)
    # accepted after the subcommand too; SUPPRESS keeps it from resetting a value given before it
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS, help=data_dir_help)
    parser.add_argument("--version", action="version", version=f"FileKiln {__version__}")
    sub = parser.add_subparsers(dest="command")

    gui = sub.add_parser("gui", parents=[common], help="the desktop app (the default)")
    gui.add_argument("files", nargs="*", type=Path, help="files to put in its list (a running FileKiln takes them)")

    serve = sub.add_parser("serve", parents=[common], help="the /v1 API plus embedded workers")
    serve.add_argument("--host", default=None, help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help=f"port (default {DEFAULT_PORT})")
    serve.add_argument("--workers", type=int, default=None, help="parallel jobs (default 2; 0: API only)")

    worker = sub.add_parser("worker", parents=[common], help="workers only, on the same data dir")
    worker.add_argument("--workers", type=int, default=None)

    watch = sub.add_parser("watch", parents=[common], help="convert every file that lands in a folder, until stopped")
    watch.add_argument("in_dir", nargs="?", type=Path, help="the folder to watch (none: every stored folder)")
    watch.add_argument("--preset", default=None, help="the preset each file goes through")
    watch.add_argument("--out", dest="out_dir", type=Path, default=None, help="where the outputs go")
    watch.add_argument("--recursive", action="store_true", help="subfolders too; outputs keep the tree")
    watch.add_argument("--after", choices=["keep", "move", "delete"], default="keep",
                       help="the input once converted: left, moved into IN_DIR/.filekiln-done/, or deleted")
    watch.add_argument("--polling", action="store_true", help="poll instead of file system events (network drives)")
    watch.add_argument("--list", action="store_true", help="the stored watch folders")
    watch.add_argument("--remove", metavar="ID", default=None, help="forget a stored watch folder")
    watch.add_argument("--json", action="store_true")

    keys = sub.add_parser("keys", parents=[common], help="create, list and revoke API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", parents=[common])
    create.add_argument("--name", required=True)
    create.add_argument("--daily-quota", type=int, default=None)
    create.add_argument("--json", action="store_true")
    listing = keys_sub.add_parser("list", parents=[common])
    listing.add_argument("--json", action="store_true")
    revoke = keys_sub.add_parser("revoke", parents=[common])
    revoke.add_argument("id")

    models = sub.add_parser("models", parents=[common], help="list, download and import models")
    models_sub = models.add_subparsers(dest="models_command", required=True)
    models_list = models_sub.add_parser("list", parents=[common])
    models_list.add_argument("--json", action="store_true")
    fetch = models_sub.add_parser("download", parents=[common], help="download from the official source")
    fetch.add_argument("name", help="u2netp, isnet-general-use, tessdata-<lang>, whisper-<size>")
    imported = models_sub.add_parser("import", parents=[common], help="copy a model file you already have")
    imported.add_argument("path", type=Path)
    imported.add_argument("--kind", required=True, choices=["tessdata", "whisper", "background", "llm"])
    imported.add_argument("--name", default=None)

    tools = sub.add_parser("tools", parents=[common], help="list the tools; disable or enable one")
    tools.add_argument("--category", default=None)
    tools.add_argument("--json", action="store_true")
    tools_sub = tools.add_subparsers(dest="tools_command")
    for verb, what in (("disable", "refuse new jobs of a tool (503 tool_disabled)"), ("enable", "allow it again")):
        switch = tools_sub.add_parser(verb, parents=[common], help=what)
        switch.add_argument("id")

    convert = sub.add_parser("convert", parents=[common], help="convert files here, or through a running server")
    convert.add_argument("files", nargs="+", type=Path, help="files, or folders to convert every file in")
    how = convert.add_mutually_exclusive_group(required=True)
    how.add_argument("--tool")
    how.add_argument("--preset", default=None, help="a preset's name (see 'filekiln presets list')")
    convert.add_argument("--recursive", action="store_true", help="with folders: their subfolders too")
    convert.add_argument("--to", dest="output_format", default=None)
    convert.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    convert.add_argument("--out", type=Path, default=Path("."))
    convert.add_argument("--server", default=None, metavar="URL",
                         help="run the job on this FileKiln (e.g. http://127.0.0.1:8741/v1) instead of here")
    convert.add_argument("--key", default=None, help="API key for --server (env FILEKILN_API_KEY)")

    doctor = sub.add_parser("doctor", parents=[common], help="check the data dir, database, queue, port and engines")
    doctor.add_argument("--json", action="store_true")

    presets = sub.add_parser("presets", parents=[common], help="list, export, import and delete presets")
    presets_sub = presets.add_subparsers(dest="presets_command", required=True)
    presets_list = presets_sub.add_parser("list", parents=[common])
    presets_list.add_argument("--json", action="store_true")
    exported = presets_sub.add_parser("export", parents=[common], help="saved presets (or those named) as JSON")
    exported.add_argument("names", nargs="*", metavar="NAME")
    exported.add_argument("--out", type=Path, default=None, help="write to this file (default: standard output)")
    imported_presets = presets_sub.add_parser("import", parents=[common], help="presets from an exported file")
    imported_presets.add_argument("file", type=Path)
    imported_presets.add_argument("--replace", action="store_true", help="overwrite saved presets of the same name")
    deleted = presets_sub.add_parser("delete", parents=[common])
    deleted.add_argument("name")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = args.command or "gui"
    overrides: dict[str, Any] = {k: getattr(args, k, None) for k in ("host", "port", "workers")}
    settings = load_settings(args.data_dir, **overrides)
    if command == "gui":
        return cmd_gui(settings, getattr(args, "files", []))
    handlers: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
        "serve": cmd_serve, "worker": cmd_worker, "keys": cmd_keys, "tools": cmd_tools, "convert": cmd_convert,
        "models": cmd_models, "watch": cmd_watch, "presets": cmd_presets, "doctor": cmd_doctor,
    }
    try:
        return handlers[command](args, settings)
    except SettingError as exc:  # e.g. a queue_url that is not Redis, or a Redis that does not answer
        print(f"FileKiln cannot start: {exc}", file=sys.stderr)
        return 1


def cmd_gui(settings: Settings, files: Sequence[Path] = ()) -> int:
    try:
        from desktop.app import run
    except ImportError as exc:  # a server build without Qt
        print(f"The desktop app is not part of this installation ({exc}); use 'filekiln serve'.", file=sys.stderr)
        return 2
    return run(settings, files=files)


def open_service(settings: Settings, *, queue_needed: bool = False) -> Any:
    """The service on ``settings``; with ``queue_needed`` (commands that run workers), a queue that
    cannot be reached is a SettingError that says why, before anything starts."""
    from localapi.core.service import Service

    service = Service.open(settings)
    if queue_needed:
        try:
            service.queue.check()
        except SettingError:
            service.close()
            raise
    return service


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from localapi.server import Server, uvicorn_config

    private_umask()  # a server writes only into its data dir: nobody else reads what it makes
    setup_logging(settings)
    log = logging.getLogger("filekiln")
    if not is_loopback_host(settings.host):
        log.warning("binding to %s: FileKiln is reachable from other machines; keys are required on every call",
                    settings.host)
    service = open_service(settings, queue_needed=True)
    if settings.workers > 0:  # --workers 0: API only, with `filekiln worker` processes doing the jobs
        service.start_workers()
    config = uvicorn_config(service, log_level=settings.log_level, access_log=settings.access_log,
                            timeout_graceful_shutdown=5)
    server = Server(config, service)
    print(f"FileKiln {__version__} serving {settings.base_url} (data in {settings.data_dir})", flush=True)
    # uvicorn handles SIGINT/SIGTERM, then raises the signal again once it has stopped; with this
    # handler in place, SIGTERM too ends in the clean shutdown below instead of killing the process
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it handled; the shutdown was clean
        pass
    finally:
        service.close()
        print("FileKiln stopped.", flush=True)
    return 0 if server.started else 1


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    private_umask()
    setup_logging(settings)
    service = open_service(settings, queue_needed=True)
    with caught() as stop:
        service.start_workers()
        print(f"FileKiln worker running on {settings.data_dir} ({settings.workers} workers)", flush=True)
        stop.wait()
    service.close()
    print("FileKiln worker stopped.", flush=True)
    return 0


def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    """Check what FileKiln runs on; exit 1 when something it needs is broken."""
    from filekiln.doctor import as_json, exit_code, report, run_checks

    checks = run_checks(settings)
    print(json.dumps(as_json(checks)) if args.json else report(checks))
    return exit_code(checks)


def cmd_watch(args: argparse.Namespace, settings: Settings) -> int:
    """Watch a folder (stored, so it comes back), or every stored one, converting what lands in it until stopped."""
    from localapi.core.errors import ServiceError
    from localapi.core.watch import WatchResult, open_watch

    private_umask()
    setup_logging(settings)

    def said(result: WatchResult) -> None:
        if result.ok:
            print(f"converted {result.rel_path} -> {', '.join(map(str, result.outputs))}", flush=True)
        else:
            print(f"failed {result.rel_path}: {result.message} (see {result.report})", flush=True)

    service = open_service(settings, queue_needed=not (args.list or args.remove))
    try:
        watch = open_watch(service, polling=args.polling, on_result=said)
        if args.list:
            folders = watch.list()
            if args.json:
                print(json.dumps([f.to_json() for f in folders]))
            for f in folders if not args.json else []:
                state = "paused" if f.paused else "active"
                tree = " recursive" if f.recursive else ""
                print(f"{f.id}  {state:6}  {f.in_dir} -> {f.out_dir}  preset {f.preset!r}{tree}  after {f.after}")
            return 0
        if args.remove:
            watch.remove(args.remove)
            print(f"Removed {args.remove}.")
            return 0
        only = None
        if args.in_dir is not None:
            if not args.preset or not args.out_dir:
                print("Give --preset and --out with the folder to watch.", file=sys.stderr)
                return 2
            folder = watch.add(args.in_dir.absolute(), args.out_dir.absolute(), args.preset, args.recursive,
                               args.after)
            only = [folder.id]
        with caught() as stop:
            service.start_workers()
            folders = watch.start(only)
            if not folders:
                print("No watch folder to run; give one: filekiln watch IN_DIR --preset NAME --out OUT_DIR",
                      file=sys.stderr)
                return 2
            for f in folders:
                print(f"Watching {f.in_dir} -> {f.out_dir} (preset {f.preset!r}, {f.id})", flush=True)
            stop.wait()
        watch.stop()
        print("FileKiln watch stopped.", flush=True)
        return 0
    except ServiceError as exc:
        details = "".join(f"\n  {field}: {'; '.join(msgs)}" for field, msgs in (exc.errors or {}).items())
        print(f"{exc.code}: {exc.detail}{details}", file=sys.stderr)
        return 2
    finally:
        service.close()


def _iso_text(ts: float | None) -> str | None:
    from localapi.http.schemas import iso

    moment = iso(ts)
    return moment.isoformat() if moment else None


def key_json(key: Any) -> dict[str, Any]:
    return {"id": key.id, "name": key.name, "prefix": key.prefix,
            "createdAt": _iso_text(key.created_at), "lastUsedAt": _iso_text(key.last_used_at),
            "revokedAt": _iso_text(key.revoked_at),
            "dailyJobQuota": key.daily_job_quota}


def cmd_keys(args: argparse.Namespace, settings: Settings) -> int:
    from localapi.core.db import open_database
    from localapi.core.keys import KeyService

    keys = KeyService(open_database(settings))
    if args.keys_command == "create":
        key, secret = keys.create(args.name, args.daily_quota)
        if args.json:
            print(json.dumps({**key_json(key), "secret": secret}))
        else:
            print(f"Created key {key.id} ({key.name}).\n\n    {secret}\n\n"
                  "This secret is shown only once. Send it as 'X-API-Key: <secret>'.")
        return 0
    if args.keys_command == "list":
        listed = keys.list()
        if args.json:
            print(json.dumps([key_json(k) for k in listed]))
        else:
            for k in listed:
                status = "revoked" if k.revoked_at else "active"
                quota = k.daily_job_quota if k.daily_job_quota is not None else "unlimited"
                print(f"{k.id}  {k.prefix}…  {status:8}  quota {quota}  {k.name}")
        return 0
    try:
        key = keys.revoke(args.id)
    except KeyError:
        print(f"No key {args.id}.", file=sys.stderr)
        return 1
    print(f"Revoked {key.id} ({key.name}).")
    return 0


def cmd_tools(args: argparse.Namespace, settings: Settings) -> int:
    from localapi.http.schemas import ToolOut

    service = open_service(settings)
    if args.tools_command in ("disable", "enable"):
        if service.catalogue.get(args.id) is None:
            print(f"No tool {args.id!r}; see 'filekiln tools'.", file=sys.stderr)
            return 2
        service.switches.set_tool_disabled(args.id, args.tools_command == "disable")
        print(f"{args.id} {args.tools_command}d.")
        return 0
    listed = [ToolOut.of(t, *service.switches.tool_status(t)) for t in service.catalogue.in_category(args.category)]
    if args.json:
        print(json.dumps([t.model_dump(mode="json") for t in listed]))
    else:
        for t in listed:
            mark = "" if t.available else "  (unavailable)"
            print(f"{t.category:13} {t.id:22} {', '.join(t.accepts)} -> {', '.join(t.produces)}{mark}")
    return 0


def cmd_models(args: argparse.Namespace, settings: Settings) -> int:
    from converters.base import Cancelled, ConversionError
    from converters.engines.modelfiles import REGISTRY, download, get_entry, import_model, is_installed

    models_dir = settings.data_dir / "models"
    try:
        if args.models_command == "list":
            listed = [{"name": e.name, "kind": e.kind, "title": e.title, "sizeBytes": e.size,
                       "verified": e.verified, "installed": is_installed(e, models_dir)} for e in REGISTRY.values()]
            if args.json:
                print(json.dumps(listed))
            else:
                for m in listed:
                    print(f"{m['name']:20} {'installed' if m['installed'] else '-':10} {m['title']}")
                print("Also: tessdata-<language> (e.g. tessdata-deu), whisper-<size> (tiny, base, small ...).")
            return 0
        if args.models_command == "download":
            entry = get_entry(args.name)
            bar = ProgressBar(sys.stderr)
            with caught(signal.SIGINT) as interrupted:
                paths = download(entry, models_dir, bar.update, interrupted.is_set)
            bar.finish(True)
            for path in paths:
                print(path)
            return 0
        print(import_model(args.path, models_dir, args.kind, args.name))
        return 0
    except Cancelled:
        print("Stopped; run the same command again to resume.", file=sys.stderr)
        return 1
    except ConversionError as exc:
        print(f"{exc.code}: {exc.message}", file=sys.stderr)
        return 1
