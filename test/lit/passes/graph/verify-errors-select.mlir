// select takes an i1 condition.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK: where1: error: 'glow.select' cond must be i1, got f32
func.func @select(%c: tensor<4xf32> {glow.name = "c"}, %a: tensor<4xf32> {glow.name = "a"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %0 = "glow.select"(%c, %a, %a) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("where1")
  return %0 : tensor<4xf32>
}
