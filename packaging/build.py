"""Build FileKiln with PyInstaller and package it for this platform; print and save the figures.

    .venv/bin/python packaging/build.py            # what `make package` runs
    .venv/bin/python packaging/build.py --onefile  # one file instead of one folder (dist/onefile/filekiln)

On Linux it leaves in dist/:

- ``filekiln/``: the one-folder app, also an AppDir (AppRun, filekiln.desktop, filekiln.png at its root);
- ``filekiln-<version>-linux-x86_64.tar.gz``: that folder, as ``filekiln-<version>/``;
- ``filekiln-<version>-linux-x86_64.tar.zst``: the same, smaller (when ``zstd`` is installed);
- ``FileKiln-<version>-x86_64.run``: a self-extracting runnable of the same AppDir (packaging/linux/selfextract.sh);
- ``FileKiln-<version>-x86_64.AppImage`` too, only when ``appimagetool`` is on PATH (it is in neither PyPI nor
  Debian, so the default build does without it).

The installer icons (``filekiln.png``, ``.ico``, ``.icns`` in build/icons) are made first by packaging/make_icons.py
from ``resources/icons/filekiln.svg``; the spec bundles ``resources/`` itself, which the app loads its icon from.

Figures (build time, sizes, top contributors) go to build/package-report.json and build/package-report.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import tomllib
import zlib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
MB = 1_000_000


def run(cmd: list[str], **kwargs: object) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)  # type: ignore[call-overload]


def human(n: float) -> str:
    return f"{n / MB:,.1f} MB"


def pyinstaller(onefile: bool, dist: Path, work: Path, clean: bool) -> float:
    env = {**os.environ, "FILEKILN_ICON_DIR": str(ROOT / "build" / "icons")}
    if onefile:
        env["FILEKILN_ONEFILE"] = "1"
    cmd = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
           "--distpath", str(dist), "--workpath", str(work), str(PACKAGING / "filekiln.spec")]
    if clean:
        cmd.insert(3, "--clean")
    started = time.monotonic()
    run(cmd, cwd=ROOT, env=env)
    return time.monotonic() - started


def strip_debug(app: Path) -> int:
    """Remove debug sections from the bundled ELF libraries (wheels such as ctranslate2 ship them): saves tens of
    MB and changes nothing at run time. Symbol tables stay; the executable itself (bootloader + archive) is never
    touched. Returns the bytes saved."""
    strip, readelf = shutil.which("strip"), shutil.which("readelf")
    if not sys.platform.startswith("linux") or strip is None or readelf is None:
        return 0
    saved = 0
    for path in sorted(app.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.parent == app:
            continue
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                continue
        sections = subprocess.run([readelf, "-S", "-W", str(path)], capture_output=True, text=True).stdout
        if " .debug_" not in sections:
            continue
        before = path.stat().st_size
        mode = path.stat().st_mode
        subprocess.run([strip, "--strip-debug", "--preserve-dates", str(path)], check=True)
        path.chmod(mode)
        saved += before - path.stat().st_size
    return saved


# --- Linux: AppDir, .tar.gz, self-extracting .run ---------------------------------------------------------------


def accepted_mime_types() -> list[str]:
    """The MIME types of every format a tool takes: what file managers offer "Open with FileKiln" for."""
    sys.path.insert(0, str(ROOT))
    from converters.catalogue import load_catalogue
    from converters.inputs.sniff import mime_type

    found = {mime_type(fmt) for tool in load_catalogue() for fmt in tool.accepts}
    return sorted(found - {"application/octet-stream"})


def make_appdir(app: Path) -> None:
    """Make the one-folder app an AppDir: AppRun, a .desktop entry and the icon at its root."""
    shutil.copy2(PACKAGING / "linux" / "AppRun", app / "AppRun")
    (app / "AppRun").chmod(0o755)
    desktop = (PACKAGING / "linux" / "filekiln.desktop").read_text().replace("@VERSION@", VERSION)
    desktop = desktop.replace("@MIMETYPES@", "".join(f"{m};" for m in accepted_mime_types()))
    (app / "filekiln.desktop").write_text(desktop)
    # packaging/make_icons.py renders it from resources/icons/filekiln.svg; the committed PNG when that failed
    candidates = (ROOT / "build" / "icons" / "filekiln.png", ROOT / "resources" / "icons" / "filekiln-256.png")
    icon = next((p for p in candidates if p.is_file()), None)
    if icon is not None:
        shutil.copy2(icon, app / "filekiln.png")
        dir_icon = app / ".DirIcon"
        dir_icon.unlink(missing_ok=True)
        dir_icon.symlink_to("filekiln.png")


def make_tarball(app: Path, target: Path, compressor: str) -> float:
    started = time.monotonic()
    top = f"filekiln-{VERSION}"
    target.unlink(missing_ok=True)
    # --owner/--group: the archive does not carry the build machine's user
    run(["sh", "-c", f'tar -C "{app.parent}" --owner=0 --group=0 --numeric-owner --sort=name '
                     f'--transform "s,^{app.name},{top}," -cf - "{app.name}" | {compressor} > "{target}"'])
    return time.monotonic() - started


def make_runnable(tarball: Path, target: Path) -> str:
    digest = hashlib.sha256()
    with open(tarball, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    build_id = f"{VERSION}-{digest.hexdigest()[:12]}"
    header = (PACKAGING / "linux" / "selfextract.sh").read_text()
    header = header.replace("@VERSION@", VERSION).replace("@BUILD_ID@", build_id)
    skip = header.count("\n") + 1  # the payload starts on the line after the header
    header = header.replace("@SKIP@", str(skip))
    with open(target, "wb") as out, open(tarball, "rb") as payload:
        out.write(header.encode())
        shutil.copyfileobj(payload, out, 1 << 20)
    target.chmod(0o755)
    return build_id


def make_appimage(app: Path, target: Path) -> bool:
    tool = shutil.which("appimagetool")
    if tool is None:
        return False
    run([tool, "--no-appstream", str(app), str(target)], env={**os.environ, "ARCH": platform.machine()})
    return True


# --- what makes up the size -------------------------------------------------------------------------------------


def contributor(rel: Path) -> str:
    """Group a file of the bundle by what brought it in."""
    parts = rel.parts
    if parts[0] != "_internal" or len(parts) == 1:
        return parts[0] if len(parts) == 1 else f"{parts[0]}/"
    inner = parts[1:]
    if len(inner) == 1:
        name = inner[0]
        if name.startswith("libpython"):
            return "libpython"
        if name == "base_library.zip":
            return "Python standard library (base_library.zip)"
        if ".so" in name or name.endswith((".dll", ".dylib")):
            return "shared libraries at the top (libssl, libstdc++, ...)"
        return name
    head = inner[0]
    if head == "PySide6" and len(inner) > 2 and inner[1] == "Qt":
        return f"PySide6/Qt/{inner[2]}"
    if head == "PySide6":
        return "PySide6 (Python modules)"
    if head == "python3.11" or head.startswith("lib-dynload") or head.startswith("python3"):
        return "Python extension modules (lib-dynload)"
    if head == "pymupdf" and len(inner) > 2 and inner[1] == "layout":
        return "pymupdf/layout (ONNX layout networks)"
    return head


def _gzip_size(path: Path) -> int:
    squeezer = zlib.compressobj(6)
    packed = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            packed += len(squeezer.compress(block))
    return packed + len(squeezer.flush())


def size_report(app: Path) -> dict[str, object]:
    """Sizes by contributor, each also gzip'ed (-6) on its own: what it adds to the .tar.gz."""
    from concurrent.futures import ThreadPoolExecutor

    paths = [p for p in sorted(app.rglob("*")) if p.is_file() and not p.is_symlink()]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:  # zlib releases the GIL
        packed_sizes = list(pool.map(_gzip_size, paths))
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # bytes, gzip bytes, files
    files: list[tuple[int, str]] = []
    total = 0
    for path, packed in zip(paths, packed_sizes, strict=True):
        rel = path.relative_to(app)
        size = path.stat().st_size
        g = groups[contributor(rel)]
        g[0] += size
        g[1] += packed
        g[2] += 1
        total += size
        files.append((size, str(rel)))
    top = sorted(groups.items(), key=lambda kv: kv[1][0], reverse=True)
    return {
        "folder_bytes": total,
        "files": len(files),
        "contributors": [{"name": k, "bytes": v[0], "gzip_bytes": v[1], "files": v[2]} for k, v in top],
        "largest_files": [{"path": p, "bytes": s} for s, p in sorted(files, reverse=True)[:15]],
    }


def write_report(report: dict[str, object], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    (out.with_suffix(".json")).write_text(json.dumps(report, indent=2))
    sizes = report["sizes"]  # type: ignore[index]
    lines = [
        f"# FileKiln {VERSION} bundle ({report['platform']})",
        "",
        f"- build time (PyInstaller, clean): {report['build_seconds']:.0f} s; "
        f"archives: {report['archive_seconds']:.0f} s (.tar.gz), "
        f"{report.get('archive_zst_seconds', 0):.0f} s (.tar.zst)",
        f"- folder: {human(sizes['folder_bytes'])} in {sizes['files']} files"  # type: ignore[index]
        f" (debug sections stripped: {human(report.get('stripped_debug_bytes') or 0)})",  # type: ignore[arg-type]
    ]
    for key, label in (("tar_gz_bytes", ".tar.gz"), ("tar_zst_bytes", ".tar.zst"), ("run_bytes", ".run"),
                       ("appimage_bytes", ".AppImage")):
        if report.get(key):
            lines.append(f"- {label}: {human(report[key])}")  # type: ignore[arg-type]
    lines += ["", "| contributor | size | gzip'ed | files |", "|---|---:|---:|---:|"]
    for c in sizes["contributors"][:20]:  # type: ignore[index]
        lines.append(f"| {c['name']} | {human(c['bytes'])} | {human(c['gzip_bytes'])} | {c['files']} |")
    lines += ["", "Largest files:", ""]
    for f in sizes["largest_files"]:  # type: ignore[index]
        lines.append(f"- {human(f['bytes'])}  {f['path']}")
    (out.with_suffix(".md")).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--onefile", action="store_true", help="one executable instead of one folder")
    parser.add_argument("--no-clean", action="store_true", help="reuse PyInstaller's cache (faster rebuilds)")
    parser.add_argument("--no-archives", action="store_true", help="only the folder: no .tar.gz / .run")
    parser.add_argument("--dist", type=Path, default=None,
                        help="output folder (default dist/, for --onefile dist/onefile/)")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "pyinstaller")
    args = parser.parse_args()
    if args.dist is None:
        args.dist = ROOT / "dist" / "onefile" if args.onefile else ROOT / "dist"

    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        print("PyInstaller is not installed in this Python: pip install pyinstaller pyinstaller-hooks-contrib",
              file=sys.stderr)
        return 2

    run([sys.executable, str(PACKAGING / "make_icons.py"), str(ROOT / "build" / "icons")], cwd=ROOT)
    build_seconds = pyinstaller(args.onefile, args.dist, args.work, clean=not args.no_clean)
    report: dict[str, object] = {"version": VERSION, "platform": f"{sys.platform}-{platform.machine()}",
                                 "onefile": args.onefile, "build_seconds": round(build_seconds, 1),
                                 "archive_seconds": 0.0}
    if args.onefile:
        exe = args.dist / ("filekiln.exe" if sys.platform == "win32" else "filekiln")
        report["onefile_bytes"] = exe.stat().st_size
        report["sizes"] = {"folder_bytes": exe.stat().st_size, "files": 1, "contributors": [], "largest_files": []}
        write_report(report, ROOT / "build" / "package-report-onefile")
        return 0

    app = args.dist / "filekiln"
    report["stripped_debug_bytes"] = strip_debug(app)
    if sys.platform.startswith("linux"):
        make_appdir(app)
    report["sizes"] = size_report(app)
    if sys.platform.startswith("linux") and not args.no_archives:
        arch = platform.machine()
        tarball = args.dist / f"filekiln-{VERSION}-linux-{arch}.tar.gz"
        gzip = "pigz -6" if shutil.which("pigz") else "gzip -6"
        report["archive_seconds"] = round(make_tarball(app, tarball, gzip), 1)
        report["tar_gz_bytes"] = tarball.stat().st_size
        if shutil.which("zstd"):  # the smaller download: zstd -12 beats gzip -6 by a fifth, in half the time
            zst = args.dist / f"filekiln-{VERSION}-linux-{arch}.tar.zst"
            report["archive_zst_seconds"] = round(make_tarball(app, zst, "zstd -q -T0 -12 --long=27"), 1)
            report["tar_zst_bytes"] = zst.stat().st_size
        runnable = args.dist / f"FileKiln-{VERSION}-{arch}.run"
        report["run_build_id"] = make_runnable(tarball, runnable)
        report["run_bytes"] = runnable.stat().st_size
        appimage = args.dist / f"FileKiln-{VERSION}-{arch}.AppImage"
        if make_appimage(app, appimage):
            report["appimage_bytes"] = appimage.stat().st_size
    write_report(report, ROOT / "build" / "package-report")
    return 0


if __name__ == "__main__":
    sys.exit(main())
