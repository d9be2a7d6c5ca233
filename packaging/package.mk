# FileKiln installer targets. The main Makefile includes this file after defining VENV, PY, PIP and `venv`:
#
#   make package        PyInstaller build: dist/filekiln/ (one folder, also an AppDir), and on Linux
#                       dist/filekiln-<version>-linux-<arch>.tar.gz and dist/FileKiln-<version>-<arch>.run;
#                       figures in build/package-report.md
#   make package-test   the smoke test of the frozen app (packaging/smoke_test.py); builds first when the
#                       sources changed since the last build
#
# PACKAGE_ARGS passes options to `make package`'s packaging/build.py (e.g. PACKAGE_ARGS=--no-clean for a faster
# rebuild, PACKAGE_ARGS=--onefile for one executable in dist/onefile/); see docs/packaging.md.

PACKAGE_DIST ?= dist
PACKAGE_ARGS ?=
PACKAGE_DIST_ARG = $(if $(filter --onefile,$(PACKAGE_ARGS)),,--dist $(PACKAGE_DIST))
PACKAGE_APP = $(PACKAGE_DIST)/filekiln/filekiln
PACKAGE_INPUTS = pyproject.toml $(shell find filekiln localapi desktop converters resources packaging -type f \
	-not -path '*/__pycache__/*' -not -name '*.pyc' -not -name 'smoke_test.py' -not -name '*.md' 2>/dev/null)

.PHONY: package package-test package-tools

package-tools: venv
	@$(PY) -c "import PyInstaller, _pyinstaller_hooks_contrib" 2>/dev/null || \
		$(PIP) install --quiet -c constraints.txt "pyinstaller>=6.10,<7" "pyinstaller-hooks-contrib>=2024.8"

package: package-tools
	$(PY) packaging/build.py $(PACKAGE_DIST_ARG) $(PACKAGE_ARGS)

$(PACKAGE_APP): $(PACKAGE_INPUTS) | package-tools
	$(PY) packaging/build.py --dist $(PACKAGE_DIST)

package-test: package-tools $(PACKAGE_APP)
	$(PY) packaging/smoke_test.py --bundle $(PACKAGE_DIST)/filekiln
