"""Finding LibreOffice and a Python with ``uno``, and building its hardened profile and command lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from converters.base import ToolEnv

BRIDGE = Path(__file__).with_name("bridge.py")


START_SECONDS = 90.0


DEFAULT_TIMEOUT = 300.0


DEFAULT_MAX_CONVERSIONS = 100


INSTALL_HINT = (
    "Install LibreOffice (Debian/Ubuntu: apt install libreoffice-writer-nogui libreoffice-calc-nogui "
    "libreoffice-impress-nogui python3-uno; Windows/macOS: libreoffice.org) or set libreoffice_path in settings."
)


_CANDIDATES = (
    "/usr/bin/soffice",
    "/usr/lib/libreoffice/program/soffice",
    "/opt/libreoffice/program/soffice",
    "/Applications/LibreOffice.app/Contents/MacOS/soffice",
    r"C:\Program Files\LibreOffice\program\soffice.exe",
)


# Registry settings for every profile FileKiln makes. Macro security "very high" with macros disabled
# outright; links (OLE, DDE, linked graphics, fields) never updated in Writer and Calc; every document is
# an untrusted referer, which makes LibreOffice refuse to resolve its external references at all.
_REGISTRY: tuple[tuple[str, str, str, str], ...] = (
    ("/org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel", "int", "3"),
    ("/org.openoffice.Office.Common/Security/Scripting", "DisableMacrosExecution", "boolean", "true"),
    ("/org.openoffice.Office.Common/Security/Scripting", "BlockUntrustedRefererLinks", "boolean", "true"),
    ("/org.openoffice.Office.Common/Security/Scripting", "RemovePersonalInfoOnSaving", "boolean", "true"),
    ("/org.openoffice.Office.Writer/Content/Update", "Link", "int", "2"),
    ("/org.openoffice.Office.Writer/Content/Update", "Field", "boolean", "false"),
    ("/org.openoffice.Office.Calc/Content/Update", "Link", "int", "2"),
    ("/org.openoffice.Office.Common/Misc", "FirstRun", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "UseLocking", "boolean", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "AutoSave", "boolean", "false"),
    ("/org.openoffice.Office.Recovery/AutoSave", "Enabled", "boolean", "false"),
    ("/org.openoffice.Office.Recovery/RecoveryInfo", "Enabled", "boolean", "false"),
    ("/org.openoffice.Office.Common/Java", "Enable", "boolean", "false"),
)


def registry_xcu() -> str:
    """The ``registrymodifications.xcu`` that hardens a FileKiln-made profile."""
    items = "\n".join(
        f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>'
        for path, name, _kind, value in _REGISTRY
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
        'xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        f"{items}\n</oor:items>\n"
    )


def seed_profile(profile: Path) -> None:
    """Create (or re-harden) a profile directory: our registry settings win over whatever LibreOffice left."""
    user = profile / "user"
    user.mkdir(parents=True, exist_ok=True)
    (user / "registrymodifications.xcu").write_text(registry_xcu(), encoding="utf-8")


def soffice_flags(profile: Path) -> list[str]:
    """Flags every headless soffice gets: no UI, no restore, no first-run, our own profile."""
    return [
        "--headless",
        "--invisible",
        "--nocrashreport",
        "--nodefault",
        "--nologo",
        "--nofirststartwizard",
        "--norestore",
        "--nolockcheck",
        f"-env:UserInstallation={profile.resolve().as_uri()}",
    ]


def listen_command(soffice: str, profile: Path, pipe: str) -> list[str]:
    """Command line of a warm instance listening on a named pipe for the bridge."""
    return [soffice, *soffice_flags(profile), f"--accept=pipe,name={pipe};urp;StarOffice.ComponentContext"]


def bridge_command(python: str, pipe: str, connect_seconds: float = START_SECONDS) -> list[str]:
    """Command line of the UNO bridge process."""
    return [python, str(BRIDGE), pipe, str(int(connect_seconds))]


def cold_command(soffice: str, profile: Path, source: Path, out_dir: Path, convert_to: str) -> list[str]:
    """Command line of a one-shot conversion (the fallback when no UNO Python is available)."""
    return [soffice, *soffice_flags(profile), "--convert-to", convert_to, "--outdir", str(out_dir), str(source)]


def find_soffice(settings: Mapping[str, Any]) -> str | None:
    """The LibreOffice executable: the ``libreoffice_path`` setting, then PATH, then the usual install places."""
    configured = settings.get("libreoffice_path")
    if configured:
        path = Path(str(configured))
        if path.is_dir():
            for name in ("soffice", "soffice.exe", "program/soffice", "program/soffice.exe"):
                if (path / name).is_file():
                    return str(path / name)
            return None
        return str(path) if path.is_file() else shutil.which(str(configured))
    for name in ("soffice", "libreoffice"):
        found = shutil.which(name)
        if found:
            return found
    return next((c for c in _CANDIDATES if Path(c).is_file()), None)


def uno_python_candidates(soffice: str) -> list[str]:
    """Pythons that may have ``uno``: LibreOffice's bundled one first, then the system's."""
    program = Path(soffice).resolve().parent
    bundled = [program / "python", program / "python.exe", program.parent / "Resources" / "python"]
    found = [str(p) for p in bundled if p.is_file()]
    for name in ("/usr/bin/python3", "python3"):
        path = name if Path(name).is_file() else shutil.which(name)
        if path and path not in found:
            found.append(path)
    return found


@cache
def _has_uno(python: str) -> bool:
    try:
        done = subprocess.run([python, "-c", "import uno"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def find_uno_python(settings: Mapping[str, Any], soffice: str) -> str | None:
    """The Python that runs the bridge, or ``None`` (then conversions run cold)."""
    configured = settings.get("office_python")
    candidates = [str(configured)] if configured else uno_python_candidates(soffice)
    return next((py for py in candidates if _has_uno(py)), None)


def profile_base(env: ToolEnv) -> Path:
    """Where profiles live: ``office_profile_dir``, else ``office/`` in the data dir, else the temp dir."""
    configured = env.settings.get("office_profile_dir")
    if configured:
        return Path(str(configured))
    if env.models_dir is not None:
        return env.models_dir.parent / "office"
    return Path(tempfile.gettempdir()) / "filekiln-office"


def font_env(font_dirs: Sequence[Path], tmp_dir: Path | None = None) -> dict[str, str]:
    """The environment of soffice: headless rendering, FileKiln's bundled fonts on its font path, and
    (given ``tmp_dir``, inside the data dir) its temporary files kept out of the system's temp folder."""
    env = dict(os.environ)
    if tmp_dir is not None:
        env["TMPDIR"] = env["TMP"] = env["TEMP"] = str(tmp_dir)
    env["SAL_USE_VCLPLUGIN"] = "svp"
    if font_dirs:
        extra = os.pathsep.join(str(d) for d in font_dirs)
        env["SAL_FONTPATH"] = f"{extra}{os.pathsep}{env['SAL_FONTPATH']}" if env.get("SAL_FONTPATH") else extra
    return env



# LibreOffice makes its pipes' Unix sockets in /tmp (or /var/tmp) whatever TMPDIR says, and leaves
# them behind when it is killed: an instance's own by its pipe name, and one per user installation
# (SingleOfficeIPC_<hash>) that says "an office already runs with this profile".
PIPE_DIRS = (Path("/tmp"), Path("/var/tmp"))


def release_pipes(pipe: str | None, settle: float = 1.0) -> None:
    """Remove the socket of ``pipe`` and every SingleOfficeIPC socket of this user that no office listens on.

    An office just killed may hold its socket open a moment longer (a loaded machine); sockets still
    listened on are looked at again for up to ``settle`` seconds, then left to the office that has them.
    """
    if os.name != "posix":
        return  # Windows: named pipes vanish with their process
    import time

    prefix = f"OSL_PIPE_{os.getuid()}_"
    for folder in PIPE_DIRS:
        if pipe:
            (folder / f"{prefix}{pipe}").unlink(missing_ok=True)
    deadline = time.monotonic() + settle
    while True:
        listened = False
        for folder in PIPE_DIRS:
            try:
                found = list(folder.glob(f"{prefix}SingleOfficeIPC_*"))
            except OSError:
                continue
            for path in found:
                if _nobody_listens(path):
                    path.unlink(missing_ok=True)
                else:
                    listened = True
        if not listened or time.monotonic() >= deadline:
            return
        time.sleep(0.1)


def _nobody_listens(path: Path) -> bool:
    import socket
    import stat

    try:
        if not stat.S_ISSOCK(path.lstat().st_mode):
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(0.2)
            probe.connect(str(path))
        return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
