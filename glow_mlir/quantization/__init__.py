"""Quantization (Glow's profile-guided flow) and low-precision float conversion (docs/QUANTIZATION.md).

    profile = glow_mlir.quantization.profile(model, sample_feeds)      # ranges and histograms, by node
    profile.save("model.profile.json"); profile = Profile.load("model.profile.json", model)
    quantized = glow_mlir.quantization.quantize(model, profile, schema="symmetric", calibration="kl")
    print(glow_mlir.quantization.report(model, quantized, feeds))      # per-layer SQNR, worst layers first
    half = glow_mlir.quantization.convert_to(model, "bf16", keep_float=["softmax"])
"""

from glow_mlir.quantization.convert import convert_to
from glow_mlir.quantization.profile import NodeProfile, Profile, ProfileError, graph_hash, profile
from glow_mlir.quantization.quantize import quantize
from glow_mlir.quantization.report import LayerError, Report, report

__all__ = [
    "LayerError",
    "NodeProfile",
    "Profile",
    "ProfileError",
    "Report",
    "convert_to",
    "graph_hash",
    "profile",
    "quantize",
    "report",
]
