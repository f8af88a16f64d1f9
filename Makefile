# The two commands: `make run` compiles and runs the bundled example CNN, `make test` runs every test.
# `make bench` times glow-mlir against onnxruntime and PyTorch.
# Both create the virtual environment and install glow-mlir into it when it is missing or out of date, with the
# model zoo's packages from requirements-models.txt (--no-deps: theirs would replace the CPU torch).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.glow-mlir-installed

.PHONY: run test lit pytest bench fuzz models clean

$(INSTALLED): pyproject.toml requirements-models.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "glow-mlir needs Python >= 3.11, got " + sys.version' 
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m pip install --quiet --no-deps -r requirements-models.txt
	@command -v dot >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq graphviz >/dev/null; } \
		|| echo "warning: no Graphviz 'dot': glow-run --graph writes .dot only"
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

# Fuzzing campaign against the importer, feeds, glow-opt and the compile cache (docs/Fuzzing.md); failures are
# minimized into fuzz-out/. e.g. FUZZ_ARGS="--cases 10000 --seed 0 --workers 1"
fuzz: $(INSTALLED)
	$(PY) -m fuzz $(FUZZ_ARGS)

# The whole model zoo (test/models/zoo.py) against onnxruntime, one child process per row; rewrites docs/Models.md
models: $(INSTALLED)
	$(PY) test/models/run_zoo.py --workers 1 $(MODELS_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info
