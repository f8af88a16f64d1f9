"""glow-mlir's benchmark harness: `python -m bench.run` (see bench/run.py).

Every library the benchmark compares runs on one thread. The BLAS and OpenMP thread counts are read from the
environment when numpy and torch first load their libraries, so they are pinned here, in the package's
first module, before any of them is imported; bench/run.py checks the outcome at run time.
"""

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"
