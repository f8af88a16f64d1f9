"""The cases of a campaign: case `i` of seed `s` is drawn from a generator seeded with (s, i) alone, so any
case can be made again from its number, whatever ran before it and in which worker.

Targets take turns (case i runs target i mod the number of targets). A `graph` case applies one to three
graph-level mutations to a seed model, a `protobuf` case one or two byte-level ones to its serialization;
both are made here, in the parent, which also minimizes them. `feed` and `cache` cases name a seed of
`corpus.FEED_SEEDS` / `CACHE_SEEDS` and a mutation that the worker applies; `mlir` cases mutate a test/lit
input once or twice.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from fuzz import corpus
from fuzz.mutate_io import CACHE_MUTATIONS, FEED_MUTATIONS, MLIR_MUTATIONS, mutate_mlir
from fuzz.mutate_model import BYTE_MUTATORS, GRAPH_MUTATORS
from fuzz.targets import TARGETS

BUILT_SHARE = 0.25


@dataclass
class Case:
    """One input to run: `payload` is what the worker's target function takes."""

    target: str
    index: int
    seed: str
    mutations: list[str]
    payload: dict[str, Any] = field(repr=False)

    @property
    def id(self) -> str:
        return f"{self.target}-{self.index}"


@functools.cache
def _model_names() -> list[str]:
    return sorted(corpus.model_seeds())


def make(campaign_seed: int, index: int, targets: tuple[str, ...]) -> Case:
    target = targets[index % len(targets)]
    rng = np.random.default_rng([campaign_seed, index])
    if target == "mlir":
        seed_mlir = corpus.mlir_seeds()[int(rng.integers(len(corpus.mlir_seeds())))]
        text, done = seed_mlir.text, []
        for _ in range(int(rng.integers(1, 3))):
            text, what = mutate_mlir(text, MLIR_MUTATIONS[int(rng.integers(len(MLIR_MUTATIONS)))], rng)
            done.append(what)
        return Case(target, index, seed_mlir.name, done, {"text": text, "args": seed_mlir.args})
    if target in ("feed", "cache"):
        names = corpus.FEED_SEEDS if target == "feed" else corpus.CACHE_SEEDS
        kinds = FEED_MUTATIONS if target == "feed" else CACHE_MUTATIONS
        seed = corpus.model_seeds()[names[int(rng.integers(len(names)))]]
        kind = kinds[int(rng.integers(len(kinds)))]
        payload = {"seed": seed.name, "model": seed.model, "feed": seed.feed, "mutation": kind,
                   "rng": int(rng.integers(2**32))}
        return Case(target, index, seed.name, [kind], payload)
    # A quarter of the cases start from the built graphs, which chain many ops as real networks do.
    names = list(corpus.BUILT) if rng.random() < BUILT_SHARE else _model_names()
    seed = corpus.model_seeds()[names[int(rng.integers(len(names)))]]
    if target == "protobuf":
        data, done = seed.model, []
        for _ in range(int(rng.integers(1, 3))):
            kind = sorted(BYTE_MUTATORS)[int(rng.integers(len(BYTE_MUTATORS)))]
            data, what = BYTE_MUTATORS[kind](data, rng)
            done.append(what)
        return Case(target, index, seed.name, done, {"seed": seed.name, "model": data, "feed": seed.feed})
    model = onnx.ModelProto()
    model.ParseFromString(seed.model)
    done = []
    for _ in range(int(rng.integers(1, 4))):
        kind = sorted(GRAPH_MUTATORS)[int(rng.integers(len(GRAPH_MUTATORS)))]
        done.append(f"{kind}: {GRAPH_MUTATORS[kind](model, rng)}")
    return Case(target, index, seed.name, done, {"seed": seed.name, "model": model.SerializeToString(),
                                                   "feed": seed.feed})


def check_targets(names: list[str]) -> tuple[str, ...]:
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        raise ValueError(f"unknown target(s) {unknown} (known: {', '.join(TARGETS)})")
    return tuple(names)
