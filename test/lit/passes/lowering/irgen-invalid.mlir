// glow-irgen stops on an op that glow-lower should have rewritten, naming the op and where it is.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-irgen)' 2>&1 | FileCheck %s

func.func @unlowered(%x: tensor<2x5xf32> {glow.name = "x"}) -> (tensor<2x5xf32> {glow.name = "y"}) {
  // CHECK: irgen-invalid.mlir:[[@LINE+1]]:8: error: 'glow.relu' has no IRGen rule: it must be lowered first (run glow-lower)
  %0 = "glow.relu"(%x) : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}
