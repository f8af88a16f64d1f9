// Float-only ops (log, erf, pow, conv_transpose, ...) refuse integer tensors.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK: log1: error: 'glow.log' element type must be a float (f32, f64, f16), got i32
func.func @log(%x: tensor<4xi32> {glow.name = "x"}) -> (tensor<4xi32> {glow.name = "y"}) {
  %0 = "glow.log"(%x) : (tensor<4xi32>) -> tensor<4xi32> loc("log1")
  return %0 : tensor<4xi32>
}
