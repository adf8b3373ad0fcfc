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

.PHONY: setup lab test release grade gpu-check doctor clean

setup: $(VENV)/.installed            ## create .venv and install gpudl with everything it needs

$(VENV)/.installed: pyproject.toml constraints/cpu.txt
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(CONSTRAINTS) -e '.[dev]'
	touch $@

lab: setup                           ## open JupyterLab on the student notebooks (LAB_ARGS="--port 8888 --no-browser")
	$(BIN)/gpudl lab $(LAB_ARGS)

test: setup                          ## run every test: package, course notebooks, grading round trips
	$(BIN)/python -m pytest -n 2 --dist loadgroup --durations=15

release: setup                       ## regenerate labs/ from solutions/ (one LAB=... or all)
	$(BIN)/gpudl release $(LAB)

grade: setup                         ## grade a folder or LMS zip: make grade LAB=lab01_performance_basics SUBMISSIONS=... OUT=...
	$(BIN)/gpudl grade $(LAB) $(SUBMISSIONS) --out $(OUT)

doctor: setup                        ## what is installed, which device, its peaks
	$(BIN)/gpudl doctor

gpu-check:                           ## on a GPU runner whose python already has torch with CUDA
	PYTHONPATH=$(CURDIR)/src$${PYTHONPATH:+:$$PYTHONPATH} $(PY) -m gpudl doctor && PYTHONPATH=$(CURDIR)/src$${PYTHONPATH:+:$$PYTHONPATH} $(PY) -m gpudl run-labs --device cuda --report $(REPORT)

clean:                               ## remove the virtual environment and build outputs
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache
