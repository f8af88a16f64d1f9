"""Real networks for the end-to-end tests, defined in PyTorch and exported to ONNX at test time.

ResNet-18, ResNet-50, MobileNetV2 and SqueezeNet 1.1 follow torchvision's definitions (written out here:
there is no torchvision build for this torch), and `bert` is a small BERT-style encoder: token embeddings
(Gather) plus position embeddings, two post-norm layers of 4-head self-attention (MatMul, Softmax) and an
Erf-GELU feed-forward, hidden size 128, sequence length 16. Weights are random but fixed by
`torch.manual_seed`; batch-norm statistics are randomized too, so eval-mode batch norm is not the identity.

`export(name, path)` writes one model with the TorchScript exporter (`dynamo=False`, opset 17: the dynamo
exporter needs onnxscript, which is not installed), and `exported(name)` caches the file in the system temp
folder, keyed by the name and a digest of this file and the torch version, so a changed definition is
exported again. `example_inputs(name)` gives the seeded numpy feeds, named as the ONNX inputs are.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn

OPSET = 17
IMAGE_SHAPE = (1, 3, 224, 224)
BERT_VOCAB = 1000
BERT_SEQ = 16
BERT_HIDDEN = 128
BERT_HEADS = 4
BERT_LAYERS = 2
BERT_FFN = 512


def _conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1) -> list[nn.Module]:
    return [
        nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    ]


# ResNet (He et al. 2015), torchvision's layout.


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * self.expansion
        self.body = nn.Sequential(*_conv_bn(cin, width, 3, stride), nn.ReLU(), *_conv_bn(width, cout, 3))
        self.shortcut = _shortcut(cin, cout, stride)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.shortcut(x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * self.expansion
        self.body = nn.Sequential(
            *_conv_bn(cin, width, 1),
            nn.ReLU(),
            *_conv_bn(width, width, 3, stride),
            nn.ReLU(),
            *_conv_bn(width, cout, 1),
        )
        self.shortcut = _shortcut(cin, cout, stride)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.shortcut(x))


def _shortcut(cin: int, cout: int, stride: int) -> nn.Module:
    if stride == 1 and cin == cout:
        return nn.Identity()
    return nn.Sequential(*_conv_bn(cin, cout, 1, stride))


class ResNet(nn.Module):
    def __init__(self, block: type[BasicBlock] | type[Bottleneck], depths: tuple[int, ...]) -> None:
        super().__init__()
        layers: list[nn.Module] = [*_conv_bn(3, 64, 7, 2), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
        cin = 64
        for stage, depth in enumerate(depths):
            width = 64 * 2**stage
            for index in range(depth):
                layers.append(block(cin, width, 2 if index == 0 and stage > 0 else 1))
                cin = width * block.expansion
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


# MobileNetV2 (Sandler et al. 2018): inverted residuals with depthwise convolutions and ReLU6.


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [*_conv_bn(cin, hidden, 1), nn.ReLU6()]
        layers += [*_conv_bn(hidden, hidden, 3, stride, groups=hidden), nn.ReLU6(), *_conv_bn(hidden, cout, 1)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    # (expansion, output channels, repeats, first stride) per stage, as in the paper's Table 2.
    STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))

    def __init__(self) -> None:
        super().__init__()
        layers: list[nn.Module] = [*_conv_bn(3, 32, 3, 2), nn.ReLU6()]
        cin = 32
        for expand, cout, repeats, stride in self.STAGES:
            for index in range(repeats):
                layers.append(InvertedResidual(cin, cout, stride if index == 0 else 1, expand))
                cin = cout
        layers += [*_conv_bn(cin, 1280, 1), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, 1000))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


# SqueezeNet 1.1 (Iandola et al. 2016): Fire modules, ceil-mode max pools, a convolutional classifier.


class Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, expand1x1: int, expand3x3: int) -> None:
        super().__init__()
        self.squeeze = nn.Sequential(nn.Conv2d(cin, squeeze, 1), nn.ReLU())
        self.expand1x1 = nn.Sequential(nn.Conv2d(squeeze, expand1x1, 1), nn.ReLU())
        self.expand3x3 = nn.Sequential(nn.Conv2d(squeeze, expand3x3, 3, padding=1), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.squeeze(x)
        return torch.cat([self.expand1x1(x), self.expand3x3(x)], 1)


class SqueezeNet11(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, 2),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(64, 16, 64, 64),
            Fire(128, 16, 64, 64),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(128, 32, 128, 128),
            Fire(256, 32, 128, 128),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(256, 48, 192, 192),
            Fire(384, 48, 192, 192),
            Fire(384, 64, 256, 256),
            Fire(512, 64, 256, 256),
        )
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(512, 1000, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(self.classifier(self.features(x)), 1)


# A small BERT-style encoder (Devlin et al. 2018), post-norm, with the attention written out so the export
# is MatMul / Softmax rather than a fused attention op.


class SelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.query = nn.Linear(BERT_HIDDEN, BERT_HIDDEN)
        self.key = nn.Linear(BERT_HIDDEN, BERT_HIDDEN)
        self.value = nn.Linear(BERT_HIDDEN, BERT_HIDDEN)
        self.out = nn.Linear(BERT_HIDDEN, BERT_HIDDEN)
        self.head_size = BERT_HIDDEN // BERT_HEADS

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(1, BERT_SEQ, BERT_HEADS, self.head_size).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self._heads(self.query(x)), self._heads(self.key(x)), self._heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.out(context.transpose(1, 2).reshape(1, BERT_SEQ, BERT_HIDDEN))


class EncoderLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attention = SelfAttention()
        self.norm1 = nn.LayerNorm(BERT_HIDDEN)
        self.ffn = nn.Sequential(nn.Linear(BERT_HIDDEN, BERT_FFN), nn.GELU(), nn.Linear(BERT_FFN, BERT_HIDDEN))
        self.norm2 = nn.LayerNorm(BERT_HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.attention(x))
        return self.norm2(x + self.ffn(x))


class BertEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tokens = nn.Embedding(BERT_VOCAB, BERT_HIDDEN)
        self.positions = nn.Embedding(BERT_SEQ, BERT_HIDDEN)
        self.register_buffer("position_ids", torch.arange(BERT_SEQ).unsqueeze(0), persistent=False)
        self.norm = nn.LayerNorm(BERT_HIDDEN)
        self.layers = nn.Sequential(*[EncoderLayer() for _ in range(BERT_LAYERS)])

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(input_ids) + self.positions(self.position_ids)
        return self.layers(self.norm(x))


MODELS: dict[str, Callable[[], nn.Module]] = {
    "resnet18": lambda: ResNet(BasicBlock, (2, 2, 2, 2)),
    "resnet50": lambda: ResNet(Bottleneck, (3, 4, 6, 3)),
    "mobilenetv2": MobileNetV2,
    "squeezenet1_1": SqueezeNet11,
    "bert": BertEncoder,
}


def build(name: str) -> nn.Module:
    """The model `name` in eval mode, with weights and batch-norm statistics drawn from a fixed seed."""
    if name not in MODELS:
        raise KeyError(f"unknown model '{name}' (known: {', '.join(MODELS)})")
    torch.manual_seed(0)
    model = MODELS[name]()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
    return model.eval()


def input_name(name: str) -> str:
    return "input_ids" if name == "bert" else "image"


def example_inputs(name: str) -> dict[str, np.ndarray]:
    """Seeded feeds for model `name`, keyed by the ONNX input name."""
    rng = np.random.default_rng(0)
    if name == "bert":
        return {input_name(name): rng.integers(0, BERT_VOCAB, (1, BERT_SEQ), dtype=np.int64)}
    return {input_name(name): rng.standard_normal(IMAGE_SHAPE, dtype=np.float32)}


def export(name: str, path: str | os.PathLike[str], *, keep_batch_norm: bool = False) -> Path:
    """Exports model `name` to ONNX at `path` (TorchScript exporter, opset 17) and returns the path.

    The exporter folds eval-mode batch norm into the convolution before it; with `keep_batch_norm` each stays a
    BatchNormalization node, so that the compiler's own folding (glow-fold-batchnorm) has it to do.
    """
    model = build(name)
    args = tuple(torch.from_numpy(a) for a in example_inputs(name).values())
    with warnings.catch_warnings():
        # The TorchScript exporter is deprecated in favour of the dynamo one, which needs onnxscript.
        warnings.simplefilter("ignore", DeprecationWarning)
        # PRESERVE keeps the model's eval mode; the advice against constant folding is for training mode.
        warnings.filterwarnings("ignore", "It is recommended that constant folding be turned off", UserWarning)
        torch.onnx.export(
            model,
            args,
            str(path),
            dynamo=False,
            opset_version=OPSET,
            input_names=[input_name(name)],
            output_names=["output"],
            training=torch.onnx.TrainingMode.PRESERVE if keep_batch_norm else torch.onnx.TrainingMode.EVAL,
        )
    return Path(path)


def exported(name: str, *, keep_batch_norm: bool = False) -> Path:
    """The ONNX file of model `name` (see `export`), exported once into the temp folder and reused while
    still current."""
    digest = hashlib.sha256(Path(__file__).read_bytes() + torch.__version__.encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / "glow-mlir-models"
    folder.mkdir(exist_ok=True)
    stem = f"{name}{'-bn' if keep_batch_norm else ''}-{digest}"
    path = folder / f"{stem}.onnx"
    if not path.exists():
        partial = folder / f"{stem}.{os.getpid()}.partial.onnx"
        export(name, partial, keep_batch_norm=keep_batch_norm)
        partial.replace(path)
    return path
