"""The benchmarked networks: PyTorch modules with seeded random weights, their ONNX files and their inputs.

ResNet-18, ResNet-50, MobileNetV2, SqueezeNet 1.1 and the BERT-style encoder are test/models/torch_models.py's
(loaded from its path, below: test/ is not a package on sys.path). Defined here: VGG-19 (torchvision's
layout and initialization, no batch norm), an MLP 784-512-256-10 with ReLUs on a batch of 1 (the classic
MNIST classifier), LeNet-5 on one 1x28x28 image (ReLU and max pooling, as modern LeNet-5s are written), ResNet-50 on a batch of 8,
and the performance issue's BERT encoder at sequence 64 and 128 (transformers' `BertModel`, hidden 256, 2
layers, 4 heads, FFN 1024: the shape that ran at 0.64x onnxruntime when the bench's own BERT ran at 0.89x).

Every model is exported with torch_models' exporter settings (TorchScript exporter, opset
`torch_models.OPSET`) and the file is cached in the system temp folder, keyed by a digest of this file,
torch_models.py and the torch version. Inputs are drawn from `np.random.default_rng(0)`, weights from
`torch.manual_seed(0)`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import torch
from torch import nn

TORCH_MODELS_PATH = Path(__file__).resolve().parents[1] / "test" / "models" / "torch_models.py"


ZOO_PATH = TORCH_MODELS_PATH.with_name("zoo.py")


def _load(path: Path, name: str) -> types.ModuleType:
    """The module at `path` (test/ is not a package on sys.path), registered as `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@cache
def zoo() -> types.ModuleType:
    """test/models/zoo.py; it imports timm and transformers (with the workaround that lets them import beside
    the CPU torch), so only when a zoo model or a transformers model is asked for."""
    return _load(ZOO_PATH, "glow_mlir_test_zoo")


torch_models = _load(TORCH_MODELS_PATH, "glow_mlir_test_torch_models")


class VGG19(nn.Module):
    """VGG-19 (Simonyan and Zisserman 2014, configuration E) for 224x224 images, as torchvision defines it."""

    LAYERS = (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M")

    def __init__(self) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for item in self.LAYERS:
            if item == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, int(item), 3, padding=1), nn.ReLU()]
                cin = int(item)
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(7)
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(), nn.Dropout(), nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(),
            nn.Linear(4096, 1000),
        )
        # torchvision's initialization: activations keep their scale through the 19 layers.
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0, 0.01)
                nn.init.zeros_(module.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class MLP(nn.Module):
    """784-512-256-10 with ReLUs: the MNIST multilayer perceptron."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class LeNet5(nn.Module):
    """LeNet-5 (LeCun et al. 1998) on 28x28 digits: the first convolution pads by 2 to see a 32x32 image."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2)
        )
        self.classifier = nn.Sequential(
            nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


class BertEncoder(nn.Module):
    """transformers' `BertModel` (hidden 256, 2 layers, 4 heads, FFN 1024, vocabulary 1000) returning its last
    hidden state; transformers is imported (through the zoo) only when this model is built."""

    VOCAB = 1000

    def __init__(self) -> None:
        super().__init__()
        transformers = zoo().transformers
        config = transformers.BertConfig(
            vocab_size=self.VOCAB, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=1024,
        )
        self.bert = transformers.BertModel._from_config(config, attn_implementation="sdpa")

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def _tokens(sequence: int) -> Callable[[], dict[str, np.ndarray]]:
    """A batch of one sequence of random token ids with a full attention mask."""
    return lambda: {
        "input_ids": np.random.default_rng(0).integers(0, BertEncoder.VOCAB, (1, sequence), dtype=np.int64),
        "attention_mask": np.ones((1, sequence), dtype=np.int64),
    }


def _seeded(factory: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        torch.manual_seed(0)
        return factory().eval()

    return build


def _image(shape: tuple[int, ...], name: str = "image") -> Callable[[], dict[str, np.ndarray]]:
    return lambda: {name: np.random.default_rng(0).standard_normal(shape, dtype=np.float32)}


@dataclass(frozen=True)
class ModelSpec:
    """One benchmarked model: what it is, how to build the torch module, and its seeded inputs."""

    description: str
    build: Callable[[], nn.Module]
    inputs: Callable[[], dict[str, np.ndarray]]
    # The name of the model in torch_models, whose own exported file is then reused.
    torch_models_name: str | None = None


def _from_torch_models(name: str, description: str) -> ModelSpec:
    return ModelSpec(description, lambda: torch_models.build(name), lambda: torch_models.example_inputs(name), name)


MODELS: dict[str, ModelSpec] = {
    "mlp": ModelSpec("MLP 784-512-256-10, batch 1", _seeded(MLP), _image((1, 784), "input")),
    "lenet": ModelSpec("LeNet-5, 1x1x28x28", _seeded(LeNet5), _image((1, 1, 28, 28))),
    "squeezenet1_1": _from_torch_models("squeezenet1_1", "SqueezeNet 1.1, 1x3x224x224"),
    "mobilenetv2": _from_torch_models("mobilenetv2", "MobileNetV2, 1x3x224x224"),
    "bert": _from_torch_models("bert", "BERT-style encoder, 2 layers, hidden 128, sequence 16"),
    "resnet18": _from_torch_models("resnet18", "ResNet-18, 1x3x224x224"),
    "resnet50": _from_torch_models("resnet50", "ResNet-50, 1x3x224x224"),
    "resnet50_b8": ModelSpec(
        "ResNet-50, batch 8 (8x3x224x224)", lambda: torch_models.build("resnet50"), _image((8, 3, 224, 224))
    ),
    "vgg19": ModelSpec("VGG-19, 1x3x224x224", _seeded(VGG19), _image((1, 3, 224, 224))),
    "bert_s64": ModelSpec("BERT encoder (transformers), hidden 256, sequence 64", _seeded(BertEncoder), _tokens(64)),
    "bert_s128": ModelSpec("BERT encoder (transformers), hidden 256, sequence 128", _seeded(BertEncoder), _tokens(128)),
}


def spec(name: str) -> ModelSpec:
    if name not in MODELS:
        raise KeyError(f"unknown model '{name}' (known: {', '.join(MODELS)})")
    return MODELS[name]


def onnx_path(name: str) -> Path:
    """The ONNX file of model `name`, exported once into the temp folder and reused while still current."""
    model = spec(name)
    if model.torch_models_name is not None:
        return torch_models.exported(model.torch_models_name)
    sources = Path(__file__).read_bytes() + TORCH_MODELS_PATH.read_bytes() + torch.__version__.encode()
    folder = Path(tempfile.gettempdir()) / "glow-mlir-bench"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}-{hashlib.sha256(sources).hexdigest()[:12]}.onnx"
    if not path.exists():
        partial = folder / f"{path.stem}.{os.getpid()}.partial.onnx"
        _export(model, partial)
        partial.replace(path)
    return path


def _export(model: ModelSpec, path: Path) -> None:
    """torch_models.export's settings: the TorchScript exporter at opset torch_models.OPSET, one output."""
    feeds = model.inputs()
    with warnings.catch_warnings():
        # The TorchScript exporter is deprecated in favour of the dynamo one, which needs onnxscript.
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            model.build(),
            tuple(torch.from_numpy(a) for a in feeds.values()),
            str(path),
            dynamo=False,
            opset_version=torch_models.OPSET,
            input_names=list(feeds),
            output_names=["output"],
        )
