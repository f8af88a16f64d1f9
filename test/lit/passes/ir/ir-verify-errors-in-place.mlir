// glow-ir-verify: only an elementwise instruction may write a buffer it reads.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-ir-verify)' 2>&1 | FileCheck %s

// CHECK: tr: error: 'glow_ir.transpose' reads %0 through an @in operand while writing it through @out: only an elementwise instruction may work in place, with both operands of one type
func.func @f(%x: memref<4x4xf32> {glow.name = "x"}, %y: memref<4x4xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<4x4xf32>
  "glow_ir.element_exp"(%a, %x) {roles = ["out", "in"]} : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  "glow_ir.transpose"(%a, %a) {roles = ["out", "in"], shuffle = array<i64: 1, 0>} : (memref<4x4xf32>, memref<4x4xf32>) -> () loc("tr")
  "glow_ir.copy"(%y, %a) {roles = ["out", "in"]} : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<4x4xf32>) -> ()
  return
}
