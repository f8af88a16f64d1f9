"""ONNX GridSample, AffineGrid and DeformConv: glow-mlir against onnxruntime, or the spec's reference (spec=True)
where onnxruntime lacks a case (volumetric cubic). Grids reach beyond [-1, 1] so that every padding mode acts, and
some land exactly halfway between pixels so that nearest's round-half-to-even shows; DeformConv's offsets move
samples off the image and onto whole pixels."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_check import check, check_node, model, rand, run_both

from glow_mlir.errors import InvalidNodeError, StaticInputRequired, UnsupportedAttributeError, UnsupportedTypeError
from glow_mlir.frontends.onnx import import_model

MODES = ["linear", "nearest", "cubic"]
PADDINGS = ["zeros", "border", "reflection"]


def _grid(*dims: int, reach: float = 1.6) -> np.ndarray:
    """A grid of random points within [-reach, reach], a few of them at halves and quarters of the span."""
    g = rand(*dims, low=-reach, high=reach)
    flat = g.reshape(-1)
    flat[: min(8, flat.size)] = np.float32([-0.5, 0.0, 0.5, -1.0, 1.0, 0.25, -0.25, 0.75])[: min(8, flat.size)]
    return g


def _ort_departs(mode: str, padding: str) -> bool:
    """onnxruntime's cubic border padding leaves a coordinate beyond the borders where it is and clamps its
    taps (as PyTorch does); the spec's reference clamps the coordinate first, so the weights differ."""
    return mode in ("cubic", "bicubic") and padding == "border"


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_2d(mode: str, padding: str, align: int) -> None:
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    check_node("GridSample", {"x": rand(2, 3, 4, 5), "grid": _grid(2, 3, 6, 2)}, attrs, opset=20,
               spec=_ort_departs(mode, padding))


# The spec's reference does not know opset 16's mode names, so bicubic with border padding, where
# onnxruntime departs from the spec, is left to test_grid_sample_2d.
@pytest.mark.parametrize("mode,padding", [(m, p) for m in ["bilinear", "nearest", "bicubic"] for p in PADDINGS
                                          if not _ort_departs(m, p)])
def test_grid_sample_opset16_names(mode: str, padding: str) -> None:
    attrs = {"mode": mode, "padding_mode": padding}
    check_node("GridSample", {"x": rand(1, 2, 3, 4), "grid": _grid(1, 5, 4, 2)}, attrs, opset=16)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_3d(mode: str, padding: str, align: int) -> None:
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    # onnxruntime has no volumetric cubic.
    check_node("GridSample", {"x": rand(1, 2, 3, 4, 5), "grid": _grid(1, 2, 3, 4, 3)}, attrs, opset=22,
               spec=mode == "cubic")


# GridSample gathers rows of X channels last where its taps are many for the image, else X's elements as they
# are (ops_grid._ROWS_PER_PIXEL): (X, grid) on each side of the threshold for every mode. The rows of all images
# are one matrix, so several images check that each image's taps read its own rows.
PATHS = {
    "rows": ((3, 16, 5, 6), (3, 4, 7, 2)),
    "elements": ((2, 3, 24, 24), (2, 1, 3, 2)),
    "rows_3d": ((2, 8, 3, 4, 5), (2, 2, 4, 4, 3)),
    "elements_3d": ((2, 2, 8, 10, 10), (2, 1, 1, 1, 3)),
}


def _path_case(path: str, mode: str, padding: str, align: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A GridSample node on the shapes of PATHS[path] (checked to be imported that way), and its feeds."""
    x_dims, grid_dims = PATHS[path]
    feeds = {"x": rand(*x_dims), "grid": _grid(*grid_dims)}
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding, align_corners=align)
    m = model([node], feeds, ["y"], opset=22 if path.endswith("3d") else 20)
    elements = '"glow.gather_elements"' in str(import_model(m).module)
    assert elements == path.startswith("elements"), f"{path}: gather_elements in the import is {elements}"
    return m, feeds


@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", PATHS)
def test_grid_sample_paths(path: str, mode: str, padding: str) -> None:
    # Either align_corners, by mode: test_grid_sample_2d and _3d take each mode both ways.
    align = int(mode != "linear")
    m, feeds = _path_case(path, mode, padding, align)
    # onnxruntime has no volumetric cubic.
    check(m, feeds, spec=_ort_departs(mode, padding) or (mode == "cubic" and path.endswith("3d")))


@pytest.mark.parametrize("path", ["rows", "elements"])
def test_grid_sample_nan_grid(path: str) -> None:
    """A NaN coordinate still reads X within its bounds (the row gathers read memory unchecked): linear and cubic
    carry the NaN in its weights, so its point is NaN in every channel; nearest reads some pixel of X or the zero
    frame. onnxruntime reads pixels there too; the other points are onnxruntime's (cubic border padding is left
    out: onnxruntime departs from the spec there, and the spec's reference fails on a NaN)."""
    # The NaN points, each as its channels.
    nan_points = ([0, -1], [0, 0], [1, -1])
    for mode, padding in [(mo, pa) for mo in MODES for pa in PADDINGS if not _ort_departs(mo, pa)]:
        m, feeds = _path_case(path, mode, padding, 0)
        feeds["grid"][0, 0, 1, 0] = feeds["grid"][-1, 0, -1, 1] = np.nan
        [got], [expected] = run_both(m, feeds)
        points = got.transpose(0, 2, 3, 1)[nan_points]
        assert (np.isnan(points) if mode != "nearest" else np.isfinite(points)).all(), (mode, padding)
        for a in (got, expected):
            a.transpose(0, 2, 3, 1)[nan_points] = 0
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=f"{mode} {padding}")


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_reflection_far_outside(mode: str, align: int) -> None:
    """Points several spans away reflect back and forth (odd and even span counts)."""
    attrs = {"mode": mode, "padding_mode": "reflection", "align_corners": align}
    check_node("GridSample", {"x": rand(1, 2, 4, 3), "grid": _grid(1, 4, 5, 2, reach=7.0)}, attrs, opset=20,
               atol=1e-4)


@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_one_pixel_axis(mode: str) -> None:
    """A one-pixel axis: with align_corners its borders meet, and reflection has no span to reflect by (the
    spec's reference divides by zero there; onnxruntime, like glow-mlir, reads the only pixel)."""
    for padding in PADDINGS:
        for align in (0, 1):
            attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
            check_node("GridSample", {"x": rand(1, 2, 1, 4), "grid": _grid(1, 3, 3, 2)}, attrs, opset=20,
                       spec=_ort_departs(mode, padding))


def test_grid_sample_double_and_float16() -> None:
    check_node("GridSample", {"x": rand(1, 2, 4, 4, dtype=np.float64), "grid": _grid(1, 3, 3, 2).astype(np.float64)},
               {"mode": "cubic", "padding_mode": "reflection"}, opset=20)
    check_node("GridSample", {"x": rand(1, 2, 4, 4, dtype=np.float16), "grid": _grid(1, 3, 3, 2).astype(np.float16)},
               {"mode": "linear"}, opset=20, spec=True, rtol=1e-3, atol=2e-3)


def test_grid_sample_nearest_integers() -> None:
    """Nearest only moves pixels, so it takes integer X (the zeros frame is integer too)."""
    x = rand(1, 2, 3, 4, low=-50, high=50, dtype=np.int32)
    check_node("GridSample", {"x": x, "grid": _grid(1, 4, 4, 2)}, {"mode": "nearest"}, opset=20, spec=True)


def test_grid_sample_after_affine_grid() -> None:
    """A spatial transformer: AffineGrid of a run-time theta, then GridSample."""
    theta = rand(2, 2, 3)
    size = np.array([2, 3, 5, 6], np.int64)
    nodes = [
        helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="affine"),
        helper.make_node("GridSample", ["x", "grid"], ["y"], name="sample", mode="cubic", padding_mode="reflection"),
    ]
    feeds = {"theta": theta, "x": rand(2, 3, 4, 4)}
    check(model(nodes, feeds, ["y"], {"size": size}, opset=20), feeds)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [1, 2, 3, 4, 5], [2, 1, 1, 3], [1, 1, 2, 1, 3]])
def test_affine_grid(size: list[int], align: int) -> None:
    k = len(size) - 2
    theta = rand(size[0], k, k + 1)
    check_node("AffineGrid", {"theta": theta}, {"align_corners": align}, {"size": np.array(size, np.int64)},
               opset=20)


def test_affine_grid_double() -> None:
    check_node("AffineGrid", {"theta": rand(2, 2, 3, dtype=np.float64)}, consts={"size": np.array([2, 1, 3, 4])},
               opset=20)


def test_affine_grid_run_time_size_is_refused() -> None:
    node = helper.make_node("AffineGrid", ["theta", "size"], ["y"], name="the_grid")
    m = model([node], {"theta": rand(1, 2, 3), "size": np.array([1, 1, 2, 2], np.int64)}, ["y"], opset=20)
    with pytest.raises(StaticInputRequired, match="the_grid.*'size'"):
        import_model(m)
    # Bound at compile time, the size is a constant again.
    check(m, {"theta": rand(1, 2, 3), "size": np.array([1, 1, 2, 2], np.int64)},
          static_inputs={"size": np.array([1, 1, 2, 2], np.int64)})


def _import(op: str, inputs: dict[str, np.ndarray], attrs: dict[str, object] | None = None, opset: int = 20,
            consts: dict[str, np.ndarray] | None = None) -> None:
    node = helper.make_node(op, [*inputs, *(consts or {})], ["y"], name="the_node", **(attrs or {}))
    import_model(model([node], inputs, ["y"], consts, opset=opset))


def test_grid_sample_errors() -> None:
    x, grid = rand(1, 2, 3, 4), rand(1, 2, 2, 2)
    with pytest.raises(UnsupportedAttributeError, match="the_node.*mode.*'area'"):
        _import("GridSample", {"x": x, "grid": grid}, {"mode": "area"})
    with pytest.raises(UnsupportedAttributeError, match="the_node.*padding_mode.*'wrap'"):
        _import("GridSample", {"x": x, "grid": grid}, {"padding_mode": "wrap"})
    with pytest.raises(InvalidNodeError, match="the_node.*grid \\[1, 2, 2, 3\\]"):
        _import("GridSample", {"x": x, "grid": rand(1, 2, 2, 3)})
    with pytest.raises(InvalidNodeError, match="the_node.*must be \\[N, C, H, W\\]"):
        _import("GridSample", {"x": rand(1, 2, 3, 4, 5), "grid": rand(1, 2, 2, 2, 3)}, opset=16)
    with pytest.raises(UnsupportedTypeError, match="the_node.*int32"):
        _import("GridSample", {"x": rand(1, 2, 3, 4, dtype=np.int32), "grid": grid})


def test_affine_grid_errors() -> None:
    with pytest.raises(InvalidNodeError, match="the_node.*theta \\[1, 2, 3\\] must be \\[1, 3, 4\\]"):
        _import("AffineGrid", {"theta": rand(1, 2, 3)}, consts={"size": np.array([1, 1, 2, 2, 2], np.int64)})
    with pytest.raises(InvalidNodeError, match="the_node.*size \\[1, 2\\]"):
        _import("AffineGrid", {"theta": rand(1, 2, 3)}, consts={"size": np.array([1, 2], np.int64)})


def _offsets(*dims: int, reach: float = 2.5) -> np.ndarray:
    """DeformConv offsets within [-reach, reach] (samples near the borders fall off the image), the first few
    whole numbers (samples on pixels, their far corners weighted 0) or far away (whole samples off the image)."""
    o = rand(*dims, low=-reach, high=reach)
    flat = o.reshape(-1)
    flat[: min(8, flat.size)] = np.float32([0.0, 1.0, -1.0, 2.0, -3.0, 20.0, -20.0, 0.5])[: min(8, flat.size)]
    return o


def _deform_conv(n: int, c: int, hw: tuple[int, int], outputs: int, kernel: tuple[int, int], *, group: int = 1,
                 offset_group: int = 1, bias: bool = False, mask: bool = False, dtype: type = np.float32,
                 **attrs: list[int]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray | None], dict[str, object],
                                              list[str]]:
    """(fed inputs X, offset and mask, constants W and B (None: left out before the mask), attributes, the node's
    input order) of a DeformConv node."""
    strides, dilations = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1])
    pads = attrs.get("pads", [0, 0, 0, 0])
    out_hw = [(hw[a] + pads[a] + pads[a + 2] - (kernel[a] - 1) * dilations[a] - 1) // strides[a] + 1 for a in (0, 1)]
    taps = kernel[0] * kernel[1]
    inputs = {"x": rand(n, c, *hw, dtype=dtype), "offset": _offsets(n, offset_group * taps * 2, *out_hw).astype(dtype)}
    consts: dict[str, np.ndarray | None] = {"w": rand(outputs, c // group, *kernel, dtype=dtype)}
    if bias or mask:
        consts["b"] = rand(outputs, dtype=dtype) if bias else None
    if mask:
        inputs["mask"] = rand(n, offset_group * taps, *out_hw, dtype=dtype)
    order = ["x", "w", "offset", *(["b"] if "b" in consts else []), *(["mask"] if mask else [])]
    return inputs, consts, {"group": group, "offset_group": offset_group, **attrs}, order


# (batch, channels, (H, W), outputs, kernel, options)
DEFORM_CASES = {
    "plain": (1, 2, (5, 6), 3, (3, 3), {}),
    "bias_and_mask": (1, 3, (5, 5), 2, (3, 3), {"bias": True, "mask": True}),
    "mask_without_bias": (1, 2, (4, 5), 2, (3, 3), {"mask": True}),
    "batch_and_offset_groups": (2, 4, (5, 4), 3, (3, 3), {"offset_group": 2, "bias": True, "mask": True}),
    "groups": (1, 4, (5, 5), 4, (3, 3), {"group": 2, "bias": True}),
    # Offset groups of 2 channels across groups of 3: the middle offset group straddles the two groups.
    "groups_across_offset_groups": (2, 6, (5, 6), 4, (2, 3), {"group": 2, "offset_group": 3, "bias": True, "mask": True,
                                                              "strides": [2, 1], "pads": [1, 2, 0, 1],
                                                              "dilations": [1, 2]}),
    "strided_padded_dilated": (1, 2, (7, 6), 2, (3, 2), {"strides": [2, 3], "pads": [2, 1, 1, 0], "dilations": [2, 1],
                                                         "mask": True}),
    "pointwise": (2, 3, (4, 4), 2, (1, 1), {"strides": [2, 2], "offset_group": 3, "bias": True}),
}


@pytest.mark.parametrize("case", DEFORM_CASES)
def test_deform_conv(case: str) -> None:
    n, c, hw, outputs, kernel, options = DEFORM_CASES[case]
    inputs, consts, attrs, order = _deform_conv(n, c, hw, outputs, kernel, **options)
    check_node("DeformConv", inputs, attrs, consts, opset=19, order=order)


def test_deform_conv_spec_reference() -> None:
    """The spec's reference (one GridSample per output pixel) agrees too, on a case with every input."""
    inputs, consts, attrs, order = _deform_conv(2, 4, (4, 5), 2, (2, 3), group=2, offset_group=2, bias=True,
                                                mask=True, pads=[1, 0, 1, 1], strides=[1, 2])
    check_node("DeformConv", inputs, attrs, consts, opset=19, order=order, spec=True)


def test_deform_conv_whole_offsets() -> None:
    """Every sample on a whole pixel, many off the image or on its frame: only exact taps and zeros."""
    inputs, consts, attrs, order = _deform_conv(1, 2, (4, 4), 2, (3, 3), pads=[1, 1, 1, 1], bias=True)
    inputs["offset"] = rand(*inputs["offset"].shape, low=-5, high=5, dtype=np.int32).astype(np.float32)
    check_node("DeformConv", inputs, attrs, consts, opset=19, order=order)


def test_deform_conv_one_row_image() -> None:
    """A one-row image: the spec's reference divides by its height - 1; onnxruntime samples the row as glow-mlir
    does."""
    inputs, consts, attrs, order = _deform_conv(1, 2, (1, 6), 2, (1, 3), pads=[0, 1, 0, 1])
    check_node("DeformConv", inputs, attrs, consts, opset=19, order=order)


def test_deform_conv_run_time_weights() -> None:
    """W and B fed at run time, with groups (the grouped product and its bias add)."""
    inputs, consts, attrs, order = _deform_conv(1, 4, (4, 4), 4, (3, 3), group=2, bias=True, pads=[1, 1, 1, 1])
    check_node("DeformConv", {**inputs, **consts}, attrs, opset=19, order=order)
    inputs, consts, attrs, order = _deform_conv(1, 4, (4, 4), 2, (3, 3), bias=True, mask=True)
    check_node("DeformConv", {**inputs, **consts}, attrs, opset=19, order=order)


def test_deform_conv_double_and_float16() -> None:
    inputs, consts, attrs, order = _deform_conv(1, 2, (4, 5), 3, (3, 3), bias=True, mask=True, dtype=np.float64)
    check_node("DeformConv", inputs, attrs, consts, opset=19, order=order)
    # glow-mlir computes float16 in float32 and rounds once; the spec's reference rounds at every step: each of
    # an output's 18 bilinear samples, products and partial sums (|x| <= 1) to float16, half an ulp (2^-11
    # relative) each. 2e-3 was the typical error, not its bound: draws that the test order picks from the shared
    # generator (2.7e-3 under pytest-xdist) went past it.
    inputs, consts, attrs, order = _deform_conv(1, 2, (4, 5), 3, (3, 3), bias=True, dtype=np.float16)
    check_node("DeformConv", inputs, attrs, consts, opset=19, order=order, spec=True, rtol=1e-3, atol=8e-3)


def test_deform_conv_no_channels() -> None:
    """X without channels: every sample is empty, the output is the bias."""
    inputs, consts, attrs, order = _deform_conv(2, 0, (4, 4), 3, (3, 3), bias=True)
    check_node("DeformConv", inputs, attrs, consts, opset=19, order=order, spec=True)


def test_deform_conv_nan_offsets() -> None:
    """A NaN offset makes its output pixels NaN (its corners read the image, not memory outside it); the other
    pixels are onnxruntime's."""
    inputs, consts, attrs, order = _deform_conv(1, 2, (6, 6), 2, (3, 3), pads=[1, 1, 1, 1])
    inputs["offset"][0, :, 2, 3] = np.nan
    node = helper.make_node("DeformConv", ["x", "w", "offset"], ["y"], name="deform", **attrs)
    [got], [expected] = run_both(model([node], inputs, ["y"], consts, opset=19), inputs)
    assert np.isnan(got[0, :, 2, 3]).all()
    got[0, :, 2, 3] = expected[0, :, 2, 3]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_deform_conv_errors() -> None:
    x, w, offset = rand(1, 4, 5, 5), rand(2, 4, 3, 3), rand(1, 18, 3, 3)
    with pytest.raises(InvalidNodeError, match="the_node.*offset \\[1, 16, 3, 3\\] must be \\[1, 18, 3, 3\\]"):
        _import("DeformConv", {"x": x, "w": w, "offset": rand(1, 16, 3, 3)}, opset=19)
    with pytest.raises(InvalidNodeError, match="the_node.*offset \\[1, 18, 3, 3\\] must be \\[1, 36, 3, 3\\]"):
        _import("DeformConv", {"x": x, "w": w, "offset": offset}, {"offset_group": 2}, opset=19)
    with pytest.raises(InvalidNodeError, match="the_node.*mask \\[1, 9, 2, 2\\] must be \\[1, 9, 3, 3\\]"):
        _import("DeformConv", {"x": x, "w": w, "offset": offset, "b": rand(2), "mask": rand(1, 9, 2, 2)}, opset=19)
    with pytest.raises(InvalidNodeError, match="the_node.*W \\[2, 4, 3, 3\\] must be .* group 2"):
        _import("DeformConv", {"x": x, "w": w, "offset": offset}, {"group": 2}, opset=19)
    with pytest.raises(InvalidNodeError, match="the_node.*4 channels must be divisible by offset_group 3"):
        _import("DeformConv", {"x": x, "w": w, "offset": offset}, {"offset_group": 3}, opset=19)
    with pytest.raises(InvalidNodeError, match="the_node.*kernel dilated by \\[3, 3\\] does not fit"):
        _import("DeformConv", {"x": x, "w": w, "offset": offset}, {"dilations": [3, 3]}, opset=19)
    with pytest.raises(InvalidNodeError, match="the_node.*one float type, got float32, float32, float64"):
        _import("DeformConv", {"x": x, "w": w, "offset": offset.astype(np.float64)}, opset=19)
    with pytest.raises(UnsupportedAttributeError, match="the_node.*3-D DeformConv is not supported"):
        _import("DeformConv", {"x": rand(1, 4, 3, 3, 3), "w": rand(2, 4, 2, 2, 2), "offset": rand(1, 24, 2, 2, 2)},
                opset=19)
