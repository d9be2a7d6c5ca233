"""pypandoc-binary: the pandoc executable lives in pypandoc/files/ (FileKiln looks for it there).

pyinstaller-hooks-contrib has no hook for pypandoc; without this one the binary is not collected.
"""

import os

from PyInstaller.utils.hooks import get_package_paths

_, package_dir = get_package_paths("pypandoc")
files_dir = os.path.join(package_dir, "files")

binaries = []
datas = []
if os.path.isdir(files_dir):
    for name in os.listdir(files_dir):
        path = os.path.join(files_dir, name)
        if name in ("pandoc", "pandoc.exe"):
            binaries.append((path, "pypandoc/files"))
        elif os.path.isfile(path):
            datas.append((path, "pypandoc/files"))  # licence texts
