// An integer splat's value is an integer attribute that fits the result's element type.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK: fill: error: 'glow.splat' attribute 'value' 200 must lie in [-128, 127] for i8 results
func.func @splat() -> (tensor<4xi8> {glow.name = "y"}) {
  %0 = "glow.splat"() {value = 200 : i64} : () -> tensor<4xi8> loc("fill")
  return %0 : tensor<4xi8>
}
