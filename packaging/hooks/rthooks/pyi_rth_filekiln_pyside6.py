"""FileKiln's replacement for PyInstaller's PySide6 run-time hook: the same set-up, done lazily.

PyInstaller's own hook (pyi_rth_pyside6) runs in every process of the app: it imports PySide6.QtCore at start-up
and puts QT_PLUGIN_PATH / QML2_IMPORT_PATH into the environment. FileKiln's frozen executable is also the headless
server, the workers and every conversion child (``filekiln _child``); none of them uses Qt, and the import costs
each of them a noticeable part of its start-up. Here the very same set-up runs right after ``PySide6`` itself is
imported, which only the desktop app does. (Listed in hooks/rthooks.dat under the same module name, it takes the
place of the built-in hook.)
"""


def _pyi_rthook():
    import importlib.abc
    import importlib.machinery
    import os
    import sys

    def setup():
        from _pyi_rth_utils import is_macos_app_bundle, prepend_path_to_environment_variable
        from _pyi_rth_utils import qt as qt_rth_utils

        qt_rth_utils.ensure_single_qt_bindings_package("PySide6")
        if sys.platform.startswith("win"):
            pyqt_path = os.path.join(sys._MEIPASS, "PySide6")
        else:
            pyqt_path = os.path.join(sys._MEIPASS, "PySide6", "Qt")
        os.environ["QT_PLUGIN_PATH"] = os.path.join(pyqt_path, "plugins")
        if is_macos_app_bundle:
            pyqt_path_res = os.path.normpath(
                os.path.join(sys._MEIPASS, "..", "Resources", os.path.relpath(pyqt_path, sys._MEIPASS))
            )
            os.environ["QML2_IMPORT_PATH"] = os.pathsep.join(
                [os.path.join(pyqt_path_res, "qml"), os.path.join(pyqt_path, "qml")]
            )
        else:
            os.environ["QML2_IMPORT_PATH"] = os.path.join(pyqt_path, "qml")
        if sys.platform.startswith("win"):
            prepend_path_to_environment_variable(sys._MEIPASS, "PATH")
        if sys.platform == "darwin" and not is_macos_app_bundle:
            prepend_path_to_environment_variable(sys._MEIPASS, "DYLD_LIBRARY_PATH")
        qt_rth_utils.create_embedded_qt_conf("PySide6", pyqt_path)

    class _Loader(importlib.abc.Loader):
        def __init__(self, wrapped):
            self.wrapped = wrapped

        def create_module(self, spec):
            return self.wrapped.create_module(spec)

        def exec_module(self, module):
            module.__spec__.loader = self.wrapped
            module.__loader__ = self.wrapped
            self.wrapped.exec_module(module)
            setup()

        def __getattr__(self, name):  # get_resource_reader, is_package ... go to the real loader
            return getattr(self.wrapped, name)

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            if fullname != "PySide6":
                return None
            sys.meta_path.remove(self)  # once
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                spec = find(fullname, path, target) if find else None
                if spec is not None:
                    if spec.loader is not None:
                        spec.loader = _Loader(spec.loader)
                    return spec
            return None

    sys.meta_path.insert(0, _Finder())


_pyi_rthook()
del _pyi_rthook
