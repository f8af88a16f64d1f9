// Broadcast aligns the input at `axis`: each input dim must be 1 or the target dim it meets.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK: bcast: error: 'glow.broadcast' input [3] aligned at axis 1 must have dims 1 or equal to target [2, 4]
func.func @broadcast(%x: tensor<3xf32> {glow.name = "x"}) -> (tensor<2x4xf32> {glow.name = "y"}) {
  %0 = "glow.broadcast"(%x) {axis = 1 : i64} : (tensor<3xf32>) -> tensor<2x4xf32> loc("bcast")
  return %0 : tensor<2x4xf32>
}
