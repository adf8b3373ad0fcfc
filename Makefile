# gpudl: each target is one line of intent; the work happens in the gpudl CLI.
PY      ?= python3
VENV    := .venv
BIN     := $(CURDIR)/$(VENV)/bin
# nbgrader needs alembic (in the venv) on PATH when it creates a gradebook.
export PATH := $(BIN):$(PATH)
# No NVIDIA GPU here: pin torch to the CPU build (the package itself asks for a range).
HAS_GPU := $(shell nvidia-smi -L >/dev/null 2>&1 && echo yes)
CONSTRAINTS := $(if $(HAS_GPU),,-c constraints/cpu.txt)
LAB     ?=
SUBMISSIONS ?= submissions
OUT     ?= grading-out
REPORT  ?= gpu-report
HANDOUT ?= handout
# What the browser test drives (Debian's chromium; Playwright's own browser download is not used)
# and what the grading sandbox runs in.
SYSTEM_DEPS := chromium:chromium bwrap:bubblewrap

.PHONY: setup lab test test-profile release grade formgrader handout system-deps gpu-check doctor clean

setup: $(VENV)/.installed            ## create .venv and install gpudl with everything it needs

$(VENV)/.installed: pyproject.toml constraints/cpu.txt
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(CONSTRAINTS) -e '.[dev,instructor]'
	@# rfc3987-syntax (jupyter-events wants jsonschema[format-nongpl]) builds some 35 Earley parsers
	@# whenever jsonschema is imported: 3.8 s of CPU here in every process that reads a notebook
	@# (python-jsonschema/jsonschema#1428). No notebook or Jupyter schema uses the IRI formats it checks.
	$(BIN)/python -m pip uninstall -q -y rfc3987-syntax
	touch $@

lab: setup                           ## open JupyterLab on labs/ and course/ as students see it (LAB_ARGS="--port 8888 --no-browser")
	$(BIN)/gpudl lab $(LAB_ARGS)

# The answer hunt's results are kept in the virtualenv's folder, keyed by the hash of what it reads.
TEST_ENV := GPUDL_HUNT_CACHE=$(CURDIR)/$(VENV)/gpudl-hunt
PYTEST  := $(TEST_ENV) $(BIN)/python -m pytest -n 3 --dist loadgroup

test: setup system-deps              ## run every test: package, course notebooks, grading round trips, the browser
	$(PYTEST) --durations=15

test-profile: setup system-deps      ## every test, then the slowest set-ups and calls and each worker's timeline
	$(PYTEST) --timeline --timeline-json=test-profile.json

release: setup                       ## regenerate labs/ from solutions/ (one LAB=... or all)
	$(BIN)/gpudl release $(LAB)

grade: setup                         ## grade a folder or LMS zip: make grade LAB=lab01_performance_basics SUBMISSIONS=... OUT=...
	$(BIN)/gpudl grade $(LAB) $(SUBMISSIONS) --out $(OUT)

formgrader: setup                    ## nbgrader's formgrader on a grading output: make formgrader OUT=...
	$(BIN)/gpudl formgrader $(OUT)

handout: setup                       ## write what students get into HANDOUT (default handout/): labs, lectures, the package
	$(BIN)/gpudl handout $(HANDOUT) --force

system-deps:                         ## as root, apt-get install what is missing of chromium and bubblewrap; else say what to install
	@missing=""; for dep in $(SYSTEM_DEPS); do command -v $${dep%%:*} >/dev/null 2>&1 || missing="$$missing $${dep#*:}"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "system-deps: installing$$missing"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null; } || \
		echo "system-deps: could not install$$missing; the browser test will skip"; \
	else \
		echo "system-deps: missing$$missing; install with: sudo apt-get install$$missing (without chromium the browser test skips)"; \
	fi

doctor: setup                        ## what is installed, which device, its peaks
	$(BIN)/gpudl doctor

gpu-check:                           ## on a GPU runner whose python already has torch with CUDA
	PYTHONPATH=$(CURDIR)/src$${PYTHONPATH:+:$$PYTHONPATH} $(PY) -m gpudl_instructor doctor && PYTHONPATH=$(CURDIR)/src$${PYTHONPATH:+:$$PYTHONPATH} $(PY) -m gpudl_instructor run-labs --device cuda --report $(REPORT)

clean:                               ## remove the virtual environment and build outputs
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache
