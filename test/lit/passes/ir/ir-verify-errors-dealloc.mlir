// glow-ir-verify: every activation is deallocated exactly once.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-ir-verify)' 2>&1 | FileCheck %s

// CHECK: again: error: 'glow_ir.dealloc_activation' deallocates %0 a second time
func.func @f(%x: memref<4xf32> {glow.name = "x"}, %y: memref<4xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  "glow_ir.element_exp"(%a, %x) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.copy"(%y, %a) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<4xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<4xf32>) -> () loc("again")
  return
}
