"""onnxruntime's session and run options, so that code written for onnxruntime runs on glow-mlir unchanged.

    options = glow_mlir.SessionOptions()
    options.graph_optimization_level = glow_mlir.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.add_free_dimension_override_by_name("batch", 1)
    session = glow_mlir.InferenceSession("model.onnx", options, providers=["CPUExecutionProvider"])

What each option does here:
- `graph_optimization_level`: the compile pipeline's graph optimizations (pipeline/runner.py); disable = none.
- `intra_op_num_threads`: the threads each large kernel's outer parallel loops are split across; 0 (the
  default) is onnxruntime's "default", the physical cores; 1 is the single-threaded code (docs/THREADS.md).
- `inter_op_num_threads`, `execution_mode`: accepted; the compiled model runs its kernels in one sequence.
- `log_severity_level` (0 verbose .. 4 fatal): the session's messages below it are not logged.
- `optimized_model_filepath`: where to write the optimized `glow` module (MLIR text, before IRGen).
- `add_free_dimension_override_by_name(name, size)`: fixes a symbolic dim, as if the model declared it.
- `enable_profiling`, `profile_file_prefix`: every run is profiled per generated kernel (the profiling
  compile variant, glow_mlir/profiling.py), and `InferenceSession.end_profiling()` writes onnxruntime's
  chrome-trace JSON, `<prefix>_<date>_<time>.json`, one event per kernel per run named after its ONNX nodes.
An `onnxruntime.SessionOptions` is accepted too: its attributes are read the same way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from glow_mlir.pipeline.runner import GraphOptimizationLevel

__all__ = ["ExecutionMode", "GraphOptimizationLevel", "RunOptions", "SessionOptions", "logging_level"]

PROVIDERS = ("CPUExecutionProvider",)


class ExecutionMode(IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


@dataclass
class SessionOptions:
    """onnxruntime.SessionOptions: the attributes of the same names and defaults (see the module doc)."""

    intra_op_num_threads: int = 0
    inter_op_num_threads: int = 0
    graph_optimization_level: GraphOptimizationLevel = GraphOptimizationLevel.ORT_ENABLE_ALL
    execution_mode: ExecutionMode = ExecutionMode.ORT_SEQUENTIAL
    enable_profiling: bool = False
    profile_file_prefix: str = "onnxruntime_profile_"
    log_severity_level: int = -1
    log_verbosity_level: int = 0
    logid: str = ""
    optimized_model_filepath: str = ""
    enable_cpu_mem_arena: bool = True
    enable_mem_pattern: bool = True
    enable_mem_reuse: bool = True
    use_deterministic_compute: bool = False
    free_dimension_overrides: dict[str, int] = field(default_factory=dict)
    config_entries: dict[str, str] = field(default_factory=dict)

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        self.free_dimension_overrides[dim_name] = int(dim_value)

    def add_session_config_entry(self, key: str, value: str) -> None:
        self.config_entries[key] = value

    def get_session_config_entry(self, key: str) -> str:
        if key not in self.config_entries:
            raise RuntimeError(f"SessionOptions has no config entry '{key}'")
        return self.config_entries[key]

    @classmethod
    def of(cls, options: Any) -> SessionOptions:
        """Ours, or one with the attributes of another SessionOptions (onnxruntime's) read the same way."""
        if options is None:
            return cls()
        if isinstance(options, cls):
            return options
        if not hasattr(options, "graph_optimization_level"):
            raise TypeError(f"sess_options: expected a SessionOptions, got {type(options).__name__}")
        ours = cls()
        for name in (
            "intra_op_num_threads", "inter_op_num_threads", "enable_profiling", "profile_file_prefix",
            "log_severity_level", "log_verbosity_level", "logid", "optimized_model_filepath",
        ):
            setattr(ours, name, getattr(options, name, getattr(ours, name)))
        # onnxruntime's enums are pybind11 enums: their int() is the value ours share.
        ours.graph_optimization_level = GraphOptimizationLevel(int(options.graph_optimization_level))
        ours.execution_mode = ExecutionMode(int(getattr(options, "execution_mode", 0)))
        return ours


@dataclass
class RunOptions:
    """onnxruntime.RunOptions, accepted for compatibility: a run logs nothing, is never interrupted, and
    computes every output."""

    log_severity_level: int = -1
    log_verbosity_level: int = 0
    logid: str = ""
    terminate: bool = False
    only_execute_path_to_fetches: bool = False
    config_entries: dict[str, str] = field(default_factory=dict)

    def add_run_config_entry(self, key: str, value: str) -> None:
        self.config_entries[key] = value

    def get_run_config_entry(self, key: str) -> str:
        if key not in self.config_entries:
            raise RuntimeError(f"RunOptions has no config entry '{key}'")
        return self.config_entries[key]


def logging_level(severity: int) -> int | None:
    """The `logging` level of an onnxruntime severity (0 verbose, 1 info, 2 warning, 3 error, 4 fatal);
    None for -1, onnxruntime's "leave it as it is"."""
    if severity < 0:
        return None
    levels = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)
    return levels[min(severity, len(levels) - 1)]
