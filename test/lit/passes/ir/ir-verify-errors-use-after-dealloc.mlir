// glow-ir-verify: no instruction reads or writes a buffer after its dealloc, also through a view.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-ir-verify)' 2>&1 | FileCheck %s

// CHECK: late_read: error: 'glow_ir.element_neg' reads %0 after its dealloc
func.func @f(%x: memref<4xf32> {glow.name = "x"}, %y: memref<2x2xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  "glow_ir.element_exp"(%a, %x) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  %v = "glow_ir.tensor_view"(%a) : (memref<4xf32>) -> memref<2x2xf32>
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<4xf32>) -> ()
  "glow_ir.element_neg"(%y, %v) {roles = ["out", "in"]} : (memref<2x2xf32>, memref<2x2xf32>) -> () loc("late_read")
  return
}
