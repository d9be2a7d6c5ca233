"""Runtime hook of the frozen FileKiln, run before the app's own code.

- Nothing may write into the install folder: no bytecode caches for any source file that gets imported
  from disk (the app's own code is in the frozen archive and never writes any), nor in a Python that the app
  starts (LibreOffice's, for the UNO bridge).
- External programs (LibreOffice, Calibre, a system Python with uno) must not see the bundle's libraries.
  The one-file bootloader puts its unpack folder on LD_LIBRARY_PATH and keeps the user's value in
  LD_LIBRARY_PATH_ORIG; the loader of this process has read the variable already, so restoring it only affects
  the programs started from here. (Conversion children, ``<app> _child``, go through the bootloader again.)
"""

import os
import sys

sys.dont_write_bytecode = True
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"

if sys.platform.startswith(("linux", "freebsd")):
    _orig = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
    _meipass = getattr(sys, "_MEIPASS", None)
    if _orig is not None:
        os.environ["LD_LIBRARY_PATH"] = _orig
    elif _meipass and os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)[0] == _meipass:
        del os.environ["LD_LIBRARY_PATH"]
