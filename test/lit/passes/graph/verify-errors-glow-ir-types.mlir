// glow_ir instructions follow the glow element-type rules on their buffers: arg_max writes i64.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK: am: error: 'glow_ir.arg_max' destination element type i32 must equal the type rule's i64
func.func @arg_max(%x: memref<2x5xf32> {glow.name = "x"}, %y: memref<2xi32> {glow.name = "y", glow.output}) {
  "glow_ir.arg_max"(%y, %x) {axis = 1 : i64, keepDims = false, roles = ["out", "in"]} : (memref<2xi32>, memref<2x5xf32>) -> () loc("am")
  return
}
