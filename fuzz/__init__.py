"""A fuzzer for glow-mlir's input surface: `python -m fuzz [--cases N] [--seed S] [--targets ...] [--workers W]
[--out DIR]` (`make fuzz`, FUZZ_ARGS); docs/Fuzzing.md has the campaign's figures.

Targets (fuzz/targets.py), taking turns:

- `graph`: a seed ONNX model (corpus.py) with one to three graph-level mutations (mutate_model.py), given to
  `InferenceSession` as bytes and, if it compiles, run;
- `protobuf`: the same seeds' bytes truncated, bit-flipped or spliced;
- `feed`: a valid session of a seed fed wrong shapes, dtypes, ranks, missing or extra inputs, NaN/Inf, empty,
  non-contiguous, read-only arrays, lists, scalars and non-arrays (mutate_io.py);
- `cache`: a seed's compile-cache entry truncated, flipped, deleted or edited, then the model loaded again;
- `mlir`: a test/lit input with token-, type-, dim- and attribute-level edits, through glow-opt with its
  test's pass pipeline.

Each case runs in a worker process with a time limit (runner.py, worker.py); campaign.py judges, minimizes
(minimize.py) and saves failures.
"""
