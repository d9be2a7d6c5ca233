# FileKiln: `make run` (desktop app), `make serve` (headless API), `make test` (whole suite).
# Each target creates .venv and installs what it needs on a fresh clone.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
EXTRAS ?= gui,docs,ai,test
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)-$(subst $(comma),_,$(EXTRAS))
comma := ,

.PHONY: run serve test lint typecheck venv bench clean screenshots

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e ".[$(EXTRAS)]"
	rm -f $(VENV)/.installed-*
	touch $@

run: venv
	$(PY) -m filekiln gui

serve: venv
	$(PY) -m filekiln serve

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

typecheck: venv
	$(VENV)/bin/mypy converters localapi filekiln desktop

test: venv lint typecheck
	QT_QPA_PLATFORM=offscreen $(VENV)/bin/pytest -q

bench: venv
	for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
