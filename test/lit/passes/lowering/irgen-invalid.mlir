// glow-irgen stops on an op that glow-lower should have rewritten, naming the op and where it is.
// RUN: glow-opt %s --verify-diagnostics --pass-pipeline='builtin.module(glow-irgen)'

func.func @unlowered(%x: tensor<2x5xf32> {glow.name = "x"}) -> (tensor<2x5xf32> {glow.name = "y"}) {
  // expected-error @+1 {{'glow.relu' has no IRGen rule: it must be lowered first (run glow-lower)}}
  %0 = "glow.relu"(%x) : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}
