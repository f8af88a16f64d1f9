"""The rule that keeps a convolution to few channels NCHW (narrow_conv_recipes.keeps_nchw) and the register tile
of its kernel (register_tile): accumulators, the tap's broadcast weights and its input vector within AVX-512's
registers. The kernel's numbers against onnxruntime are test_onnx_ops_nn.py::test_conv_narrow's."""

from __future__ import annotations

import pytest

from glow_mlir.backends.cpu.narrow_conv_recipes import (
    MAX_ACCUMULATORS,
    REGISTERS,
    WINOGRAD_OUTPUTS,
    keeps_nchw,
    register_tile,
    row_tiles,
)


@pytest.mark.parametrize("filters", range(1, 16))
def test_register_tile_fits(filters: int) -> None:
    for out in [(1, 16), (7, 20), (28, 24), (56, 56), (128, 128), (1, 8000), (20, 88)]:
        tile = register_tile(out, filters)
        accumulators = tile.rows * tile.vectors * filters
        assert accumulators <= MAX_ACCUMULATORS and accumulators + filters + 1 <= REGISTERS, (out, filters, tile)
        # The row's tiles cover it: whole vectors, then the last (partial) one.
        covered = sum(v * count for v, _, count in row_tiles(out[1], tile.vectors))
        assert covered == -(-out[1] // 16)


def test_keeps_nchw() -> None:
    def keeps(f: int, group: int = 1, width: int = 32, window: tuple[int, int] = (3, 3), stride: int = 1,
              winograd: bool = False) -> bool:  # fmt: skip
        return keeps_nchw(f, group, width, window, stride, winograd)

    assert keeps(3) and keeps(15) and not keeps(16)
    assert keeps(WINOGRAD_OUTPUTS, winograd=True) and not keeps(WINOGRAD_OUTPUTS + 1, winograd=True)
    assert not keeps(3, window=(1, 1)) and keeps(3, window=(1, 7))
    assert not keeps(3, width=15) and not keeps(3, stride=2) and not keeps(4, group=2)
