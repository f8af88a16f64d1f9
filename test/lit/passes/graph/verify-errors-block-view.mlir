// A block_view is a block inside its source.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK: outside: error: 'glow_ir.block_view' view [2, 2] at [1, 2] must lie inside its source [2, 3]
func.func @outside(%a: memref<2x3xf32> {glow.name = "a"}) {
  %0 = "glow_ir.block_view"(%a) {start = array<i64: 1, 2>} : (memref<2x3xf32>) -> memref<2x2xf32, strided<[3, 1], offset: 5>> loc("outside")
  return
}
