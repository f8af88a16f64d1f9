// glow-ir-verify: an @in operand never reads an activation (or output) that nothing wrote yet.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-ir-verify)' 2>&1 | FileCheck %s

// CHECK: uninitialized: error: 'glow_ir.element_add' reads %0 before any instruction wrote it
func.func @f(%x: memref<4xf32> {glow.name = "x"}, %y: memref<4xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  "glow_ir.element_add"(%y, %x, %a) {roles = ["out", "in", "in"]} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> () loc("uninitialized")
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<4xf32>) -> ()
  return
}
