"""Fonts shipped as a Python package; FileKiln finds the folder with importlib.util.find_spec()."""

from PyInstaller.utils.hooks import collect_data_files

datas = collect_data_files("noto_cjk_sans_otc")
