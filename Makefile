# The two commands: `make run` compiles and runs the bundled example CNN, `make test` runs every test.
# `make bench` times glow-mlir against onnxruntime and PyTorch.
# Both create the virtual environment and install glow-mlir into it when it is missing or out of date.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.glow-mlir-installed

.PHONY: run test lit pytest bench clean

$(INSTALLED): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "glow-mlir needs Python >= 3.11, got " + sys.version' 
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

run: $(INSTALLED)
	$(PY) examples/cnn.py

test: lit pytest

lit: $(INSTALLED)
	$(VENV)/bin/lit -sv test/lit

pytest: $(INSTALLED)
	$(VENV)/bin/pytest -q -n auto test/python

# glow-mlir against onnxruntime and PyTorch on one core (docs/PERFORMANCE.md); e.g. BENCH_ARGS="--models resnet50 --quick"
bench: $(INSTALLED)
	$(PY) -m bench.run $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info
