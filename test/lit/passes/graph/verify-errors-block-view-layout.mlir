// A block_view's type has the strides and offset of the block's place in its source.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK: layout: error: 'glow_ir.block_view' view layout must be strided<[3, 1], offset: 1>, the block's place in its source
func.func @layout(%a: memref<2x3xf32> {glow.name = "a"}) {
  %0 = "glow_ir.block_view"(%a) {start = array<i64: 0, 1>} : (memref<2x3xf32>) -> memref<2x2xf32> loc("layout")
  return
}
