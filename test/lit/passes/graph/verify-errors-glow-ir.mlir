// glow_ir instructions follow the glow rules on their buffers: the out operand has the rule's shape.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK: mm: error: 'glow_ir.matmul' destination shape [2, 2] must equal the shape rule's [2, 4]
func.func @matmul(%a: memref<2x3xf32> {glow.name = "a"}, %b: memref<3x4xf32> {glow.name = "b"}, %c: memref<2x2xf32> {glow.name = "c", glow.output}) {
  "glow_ir.matmul"(%c, %a, %b) {roles = ["out", "in", "in"]} : (memref<2x2xf32>, memref<2x3xf32>, memref<3x4xf32>) -> () loc("mm")
  return
}
