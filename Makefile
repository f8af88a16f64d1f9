# The two commands: `make run` compiles and runs the bundled example CNN, `make test` runs every test.
# `make bench` times glow-mlir against onnxruntime and PyTorch.
# Each creates the virtual environment when it is missing and installs what it needs when out of date: `make run`
# only glow-mlir and its runtime dependencies (`pip install -e .`); the tests, the benchmarks, the fuzzer and the
# model zoo also the `test` extra (lit, FileCheck, pytest, onnxruntime, torch, matplotlib) and the zoo's packages
# from requirements-models.txt (--no-deps: theirs would replace the CPU torch).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
RUNTIME := $(VENV)/.glow-mlir-runtime
TESTING := $(VENV)/.glow-mlir-testing

.PHONY: run test lit pytest bench bench-broad fuzz models clean

$(RUNTIME): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "glow-mlir needs Python >= 3.11, got " + sys.version' 
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(TESTING): $(RUNTIME) requirements-models.txt
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m pip install --quiet --no-deps -r requirements-models.txt
	@command -v dot >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq graphviz >/dev/null; } \
		|| echo "warning: no Graphviz 'dot': glow-run --graph writes .dot only"
	touch $@

run: $(RUNTIME)
	$(PY) examples/cnn.py

test: lit pytest

lit: $(TESTING)
	$(VENV)/bin/lit -sv test/lit

pytest: $(TESTING)
	$(VENV)/bin/pytest -q -n auto test/python

# glow-mlir against onnxruntime and PyTorch on one core (docs/PERFORMANCE.md); e.g. BENCH_ARGS="--models resnet50 --quick"
bench: $(TESTING)
	$(PY) -m bench.run $(BENCH_ARGS)

# The broad set: the nine bench models and the whole model zoo against onnxruntime, one thread each, with cold compile
# times and per-kernel profiles (bench/broad.py, docs/PERFORMANCE.md); e.g. BROAD_ARGS="--plot b.png"
bench-broad: $(TESTING)
	$(PY) -m bench.broad $(BROAD_ARGS)

# Fuzzing campaign against the importer, feeds, glow-opt and the compile cache (docs/Fuzzing.md); failures are
# minimized into fuzz-out/. e.g. FUZZ_ARGS="--cases 10000 --seed 0 --workers 1"
fuzz: $(TESTING)
	$(PY) -m fuzz $(FUZZ_ARGS)

# The whole model zoo (test/models/zoo.py) against onnxruntime, one child process per row; rewrites docs/Models.md
models: $(TESTING)
	$(PY) test/models/run_zoo.py --workers 1 $(MODELS_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info
