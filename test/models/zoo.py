"""The model zoo: architectures from timm and Hugging Face transformers, built from config objects with random
weights and fixed seeds, exported with both PyTorch exporters, and checked against onnxruntime.

The set was chosen before any tuning and is never pruned: a model that glow-mlir refuses, gets wrong, crashes on
or is slow with stays in it and shows as such in docs/Models.md (written by run_zoo.py; `make models`).

- `MODELS`: name -> `Spec` (the builder returning an eval-mode module, the input kinds, the shapes).
- `exported(name, exporter, dynamic)`: the ONNX file, cached in the temp folder like torch_models.exported.
  `exporter` is "torchscript" (`dynamo=False`, opset 17) or "dynamo" (opset 18); `dynamic` exports symbolic
  batch (and, for token and audio inputs, sequence) axes.
- `check(name, exporter, dynamic)`: glow_mlir.InferenceSession against onnxruntime on seeded feeds, at the
  export shape, or at every shape of `Spec.dynamic_shapes` for a dynamic export.

Image models run at 96x96 or 128x128 and are made shallow or narrow through their own config arguments where
the architecture allows, so that each compiles in seconds to tens of seconds; sizes are in `MODELS`.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import onnxruntime
import torch
from torch import nn

import glow_mlir

# timm imports torchvision (FrozenBatchNorm2d, transforms) and transformers imports it when installed. The only
# torchvision wheel for torch 2.13 on PyPI (0.28.0) is a CUDA build: its C extension cannot load beside the CPU
# torch, so torchvision runs without its compiled ops, and its import then fails in `_meta_registrations`,
# which registers fake kernels for `torchvision::nms` and `torchvision::qnms` unconditionally, on ops that only
# the extension defines. Declaring those two schemas (with no kernel) lets the pure-Python parts import; none of
# the models here calls a torchvision op, and a call would fail loudly (no kernel), not compute something else.
if not hasattr(torch.ops.torchvision, "nms"):
    for _op in ("nms", "qnms"):
        torch.library.define(f"torchvision::{_op}", "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
with warnings.catch_warnings():
    # torchvision warns that its image extension failed to load (the CUDA build, above).
    warnings.simplefilter("ignore", UserWarning)
    import timm
    import transformers

EXPORTERS = ("torchscript", "dynamo")
OPSETS = {"torchscript": 17, "dynamo": 18}
# glow-mlir matches onnxruntime within this, as rtol and atol, unless onnxruntime is noisier than that on the
# model itself (see `tolerance`).
TOLERANCE = 1e-4
# A shape: each input's dims, in input order.
Shapes = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Spec:
    """One zoo model. `inputs` names the ONNX inputs and gives each one's kind: "image" (float N,3,H,W), "tokens"
    (int64 ids below `vocab`), "mask" (int64 attention mask of ones with the last position of the first row
    padded) or "audio" (float N,T, or N,T,F for a spectrogram). `shape` is the static export's input shapes; a
    dynamic export is traced at `trace_shape` (no dim of size 1, which torch.export would specialize) and checked
    at `dynamic_shapes`."""

    source: str
    family: str
    build: Callable[[], nn.Module]
    inputs: tuple[tuple[str, str], ...]
    shape: Shapes
    trace_shape: Shapes
    dynamic_shapes: tuple[Shapes, ...]
    vocab: int = 0

    @property
    def dynamic_dims(self) -> tuple[dict[int, str], ...]:
        """The symbolic axes of each input: batch always, sequence for token, mask and audio inputs."""
        return tuple({0: "batch"} if kind == "image" else {0: "batch", 1: "sequence"} for _, kind in self.inputs)


def _image(size: int) -> dict[str, object]:
    return {
        "inputs": (("pixel_values", "image"),),
        "shape": ((1, 3, size, size),),
        "trace_shape": ((2, 3, size, size),),
        "dynamic_shapes": (((1, 3, size, size),), ((3, 3, size, size),)),
    }


def _text(vocab: int) -> dict[str, object]:
    # Every text model takes an attention mask, as with batched real input. Without one, transformers looks for
    # packed sequences with torch.diff, which the TorchScript exporter cannot export (aten::diff).
    names = (("input_ids", "tokens"), ("attention_mask", "mask"))

    def each(batch: int, seq: int) -> Shapes:
        return tuple((batch, seq) for _ in names)

    return {
        "inputs": names,
        "shape": each(1, 16),
        "trace_shape": each(2, 16),
        "dynamic_shapes": (each(1, 16), each(2, 7), each(3, 24)),
        "vocab": vocab,
    }


def _audio() -> dict[str, object]:
    return {
        "inputs": (("input_values", "audio"),),
        "shape": ((1, 4000),),
        "trace_shape": ((2, 4000),),
        "dynamic_shapes": (((1, 4000),), ((2, 3200),)),
    }


def _timm(name: str, **kwargs: object) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        return timm.create_model(name, pretrained=False, num_classes=10, **kwargs)

    return build


class _Outputs(nn.Module):
    """A transformers model called with its inputs by name, returning one output tensor (`output`), so that both
    exporters see a plain function of tensors. The subclasses spell out the arguments: torch.export matches
    dynamic axes to named parameters, not to `*args`."""

    def __init__(self, model: nn.Module, names: Sequence[str], output: str) -> None:
        super().__init__()
        self.model = model
        self.names = tuple(names)
        self.output = output

    def call(self, *inputs: torch.Tensor) -> torch.Tensor:
        return getattr(self.model(**dict(zip(self.names, inputs, strict=True)), return_dict=True), self.output)


class _OneInput(_Outputs):
    def forward(self, first: torch.Tensor) -> torch.Tensor:
        return self.call(first)


class _TwoInputs(_Outputs):
    def forward(self, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        return self.call(first, second)


def _hf(model_class: str, config_class: str, names: Sequence[str], output: str, **config: object) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        settings = getattr(transformers, config_class)(**config)
        # sdpa is transformers' default attention; asked for by name so that a change of default shows here.
        model = getattr(transformers, model_class)._from_config(settings, attn_implementation="sdpa")
        return (_OneInput if len(names) == 1 else _TwoInputs)(model, names, output)

    return build


def _hifigan() -> Callable[[], nn.Module]:
    """transformers' HiFi-GAN vocoder (SpeechT5's), narrowed: transposed 1-D convolutions up-sampling by 64,
    dilated residual 1-D convolutions, a last layer to one channel. It returns the waveform tensor itself."""

    def build() -> nn.Module:
        config = transformers.SpeechT5HifiGanConfig(
            model_in_dim=80, upsample_initial_channel=64, upsample_rates=[4, 4, 2, 2],
            upsample_kernel_sizes=[8, 8, 4, 4], resblock_kernel_sizes=[3, 7, 11],
            resblock_dilation_sizes=[[1, 3, 5]] * 3, normalize_before=False,
        )  # fmt: skip
        return transformers.SpeechT5HifiGan(config)

    return build


_TEXT_NAMES = ("input_ids", "attention_mask")
_SMALL_TEXT = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128}

MODELS: dict[str, Spec] = {
    # timm CNNs
    "resnet18": Spec("timm", "CNN", _timm("resnet18"), **_image(96)),
    "efficientnet_b0": Spec("timm", "CNN", _timm("efficientnet_b0"), **_image(96)),
    "mobilenetv3_small_100": Spec("timm", "CNN", _timm("mobilenetv3_small_100"), **_image(96)),
    "convnext_atto": Spec("timm", "CNN", _timm("convnext_atto"), **_image(96)),
    "regnetx_002": Spec("timm", "CNN", _timm("regnetx_002"), **_image(96)),
    "ghostnet_100": Spec("timm", "CNN", _timm("ghostnet_100"), **_image(96)),
    "poolformer_s12": Spec("timm", "CNN", _timm("poolformer_s12"), **_image(96)),
    # timm vision transformers and hybrids
    "vit_tiny": Spec("timm", "transformer", _timm("vit_tiny_patch16_224", img_size=96, depth=4), **_image(96)),
    "swin_tiny": Spec(
        "timm",
        "transformer",
        _timm("swin_tiny_patch4_window7_224", img_size=128, window_size=4, depths=(2, 2, 2, 2), embed_dim=48),
        **_image(128),
    ),
    "mobilevit_xxs": Spec("timm", "transformer", _timm("mobilevit_xxs"), **_image(128)),
    "levit_128s": Spec("timm", "transformer", _timm("levit_128s", img_size=128), **_image(128)),
    "edgenext_xx_small": Spec("timm", "transformer", _timm("edgenext_xx_small"), **_image(96)),
    "mixer_s16": Spec("timm", "MLP", _timm("mixer_s16_224", img_size=96), **_image(96)),
    # transformers
    "bert": Spec(
        "transformers",
        "transformer",
        _hf("BertModel", "BertConfig", _TEXT_NAMES, "last_hidden_state", vocab_size=100, **_SMALL_TEXT),
        **_text(100),
    ),
    "gpt2": Spec(
        "transformers",
        "transformer",
        _hf("GPT2LMHeadModel", "GPT2Config", _TEXT_NAMES, "logits", vocab_size=100, n_positions=64, n_embd=64,
            n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0, use_cache=False),
        **_text(100),
    ),
    "roberta": Spec(
        "transformers",
        "transformer",
        _hf("RobertaModel", "RobertaConfig", _TEXT_NAMES, "last_hidden_state", vocab_size=100,
            max_position_embeddings=66, **_SMALL_TEXT),
        **_text(100),
    ),
    "llama": Spec(
        "transformers",
        "transformer",
        _hf("LlamaModel", "LlamaConfig", _TEXT_NAMES, "last_hidden_state", vocab_size=100, num_key_value_heads=2,
            use_cache=False, **_SMALL_TEXT),
        **_text(100),
    ),
    "t5_encoder": Spec(
        "transformers",
        "transformer",
        _hf("T5EncoderModel", "T5Config", _TEXT_NAMES, "last_hidden_state", vocab_size=100, d_model=64, d_kv=16,
            d_ff=128, num_layers=2, num_heads=4),
        **_text(100),
    ),
    "vit_hf": Spec(
        "transformers",
        "transformer",
        _hf("ViTModel", "ViTConfig", ("pixel_values",), "last_hidden_state", image_size=96, patch_size=16,
            **_SMALL_TEXT),
        **_image(96),
    ),
    "wav2vec2": Spec(
        "transformers",
        "transformer",
        _hf("Wav2Vec2Model", "Wav2Vec2Config", ("input_values",), "last_hidden_state", conv_dim=(32,) * 7,
            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, **_SMALL_TEXT),
        **_audio(),
    ),
    "hifigan": Spec(
        "transformers",
        "audio",
        _hifigan(),
        inputs=(("spectrogram", "audio"),),
        shape=((1, 50, 80),),
        trace_shape=((2, 50, 80),),
        dynamic_shapes=(((1, 50, 80),), ((2, 40, 80),)),
    ),
    "segformer": Spec(
        "transformers",
        "transformer",
        _hf("SegformerForSemanticSegmentation", "SegformerConfig", ("pixel_values",), "logits",
            hidden_sizes=(16, 32, 64, 128), depths=(1, 1, 1, 1), decoder_hidden_size=64, num_labels=10),
        **_image(96),
    ),
}


def build(name: str) -> nn.Module:
    """The model `name` in eval mode, with weights and batch-norm statistics drawn from a fixed seed."""
    if name not in MODELS:
        raise KeyError(f"unknown model '{name}' (known: {', '.join(MODELS)})")
    torch.manual_seed(0)
    model = MODELS[name].build()
    with torch.no_grad():
        for module in model.modules():
            # Random statistics so that eval-mode batch norm is not the identity.
            if isinstance(module, nn.modules.batchnorm._BatchNorm) and module.running_mean is not None:
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
        for parameter in model.parameters():
            _redraw_if_constant(parameter)
    return model.eval()


def _redraw_if_constant(parameter: nn.Parameter) -> None:
    """Redraws a parameter that its library's init left constant, so that no part of the network drops out of the
    comparison: zero-initialized classifier heads (timm's MLP-Mixer: every output 0), zero last batch-norm scales
    in residual blocks (timm's ResNet), layer scales of 1e-6 (ConvNeXt), and norm scales of 1 and biases of 0,
    which would hide a swapped or dropped scale or bias. Matrices get a fan-in-scaled normal draw, vectors of zeros
    a uniform one in [-0.2, 0.2], other constant vectors (scales of 1, layer scales of 1e-6) one in [0.5, 1.5]."""
    if parameter.numel() < 2 or not torch.all(parameter == parameter.flatten()[0]):
        return
    if parameter.dim() >= 2:
        parameter.normal_(0.0, parameter[0].numel() ** -0.5)
        return
    value = float(parameter.flatten()[0])
    if value == 0.0:
        parameter.uniform_(-0.2, 0.2)
    else:
        parameter.uniform_(0.5, 1.5)


def feeds(name: str, shapes: Shapes) -> dict[str, np.ndarray]:
    """Seeded feeds for model `name` at `shapes`, keyed by the ONNX input names."""
    spec = MODELS[name]
    rng = np.random.default_rng(0)
    result: dict[str, np.ndarray] = {}
    for (input_name, kind), shape in zip(spec.inputs, shapes, strict=True):
        if kind == "tokens":
            result[input_name] = rng.integers(0, spec.vocab, shape, dtype=np.int64)
        elif kind == "mask":
            mask = np.ones(shape, np.int64)
            mask[0, -1] = 0  # one padded position, so that the mask does something
            result[input_name] = mask
        else:
            result[input_name] = rng.standard_normal(shape, dtype=np.float32)
    return result


def export(name: str, exporter: str, dynamic: bool, path: str | os.PathLike[str]) -> Path:
    """Exports model `name` to ONNX at `path` with `exporter` ("torchscript" or "dynamo"), with symbolic axes
    if `dynamic`, and returns the path."""
    spec = MODELS[name]
    model = build(name)
    names = [n for n, _ in spec.inputs]
    args = tuple(torch.from_numpy(a) for a in feeds(name, spec.trace_shape if dynamic else spec.shape).values())
    with warnings.catch_warnings(), torch.no_grad():
        # Deprecation of the TorchScript exporter, tracer warnings about Python values in the models.
        warnings.simplefilter("ignore")
        # The same `dynamic_axes` for both: the dynamo exporter turns them into torch.export dynamic shapes.
        axes = dict(zip(names, spec.dynamic_dims, strict=True)) | {"output": {0: "batch"}} if dynamic else None
        if exporter in EXPORTERS:
            torch.onnx.export(model, args, str(path), dynamo=exporter == "dynamo", opset_version=OPSETS[exporter],
                              input_names=names, output_names=["output"], dynamic_axes=axes,
                              # One self-contained file (the dynamo exporter writes weights beside it by default;
                              # the TorchScript exporter ignores this).
                              external_data=False)
        else:
            raise ValueError(f"unknown exporter '{exporter}' (known: {', '.join(EXPORTERS)})")
    return Path(path)


def exported(name: str, exporter: str, dynamic: bool) -> Path:
    """The ONNX file of `export(name, exporter, dynamic)`, exported once into the temp folder and reused while this
    file and the versions of torch, timm and transformers are unchanged."""
    versions = f"{torch.__version__} {timm.__version__} {transformers.__version__} {metadata.version('onnxscript')}"
    digest = hashlib.sha256(Path(__file__).read_bytes() + versions.encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / "glow-mlir-zoo"
    folder.mkdir(exist_ok=True)
    stem = f"{name}-{exporter}{'-dynamic' if dynamic else ''}-{digest}"
    path = folder / f"{stem}.onnx"
    if not path.exists():
        partial = folder / f"{stem}.{os.getpid()}.partial.onnx"
        export(name, exporter, dynamic, partial)
        partial.replace(path)
    return path


@dataclass(frozen=True)
class Outcome:
    """A check's numbers: the largest |glow-mlir - onnxruntime| over all outputs and shapes, the tolerance that
    applied, whether every output was within it (as rtol and atol), the compile time (the session and the first
    run at each shape) and the median run time of each, at the last shape."""

    max_diff: float
    tolerance: float
    within: bool
    compile_seconds: float
    glow_ms: float
    onnxruntime_ms: float
    shapes: tuple[Shapes, ...]


def _ort(path: Path, level: onnxruntime.GraphOptimizationLevel) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = level
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def tolerance(optimized: Sequence[np.ndarray], unoptimized: Sequence[np.ndarray]) -> float:
    """TOLERANCE, or, for a model on which onnxruntime's own optimized graph (ORT_ENABLE_ALL: fused and reordered
    kernels) departs further than that from its unoptimized one (ORT_DISABLE_ALL) on the same feeds, twice that
    departure: both are correct float32 evaluations, so glow-mlir's own reordering may differ as much from either."""
    noise = max((float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(optimized, unoptimized, strict=True)),
                default=0.0)
    return max(TOLERANCE, 2 * noise)


def _median_ms(run: Callable[[], object], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def compare(expected: Sequence[np.ndarray], got: Sequence[np.ndarray], tol: float) -> tuple[float, bool]:
    """The largest absolute difference, and whether every output matches in shape, dtype and value (rtol = atol =
    `tol`)."""
    if len(expected) != len(got):
        return float("inf"), False
    diff, within = 0.0, True
    for want, have in zip(expected, got, strict=True):
        if want.shape != have.shape or want.dtype != have.dtype:
            return float("inf"), False
        if want.size:
            gap = np.abs(have.astype(np.float64) - want.astype(np.float64))
            diff = max(diff, float(np.max(gap)))
            within = within and bool(np.all(gap <= tol + tol * np.abs(want)))
    return diff, within


def check(name: str, exporter: str, dynamic: bool) -> Outcome:
    """Runs the export of `name` through glow_mlir.InferenceSession and onnxruntime on seeded feeds: at the export
    shape, or for a dynamic export at each of `Spec.dynamic_shapes`, one session compiling a specialization per
    new shape. glow-mlir's errors propagate (the caller tells refusals from crashes)."""
    spec = MODELS[name]
    path = exported(name, exporter, dynamic)
    checked = spec.dynamic_shapes if dynamic else (spec.shape,)
    reference = _ort(path, onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL)
    unoptimized = _ort(path, onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL)
    start = time.perf_counter()
    session = glow_mlir.InferenceSession(str(path))
    compile_seconds = time.perf_counter() - start
    max_diff, tol, within = 0.0, TOLERANCE, True
    for shape in checked:
        inputs = feeds(name, shape)
        start = time.perf_counter()
        got = session.run(None, inputs)
        compile_seconds += time.perf_counter() - start
        expected = reference.run(None, inputs)
        shape_tol = tolerance(expected, unoptimized.run(None, inputs))
        diff, ok = compare(expected, got, shape_tol)
        max_diff, tol, within = max(max_diff, diff), max(tol, shape_tol), within and ok
    glow_ms = _median_ms(lambda: session.run(None, inputs))
    ort_ms = _median_ms(lambda: reference.run(None, inputs))
    return Outcome(max_diff, tol, within, compile_seconds, glow_ms, ort_ms, checked)

