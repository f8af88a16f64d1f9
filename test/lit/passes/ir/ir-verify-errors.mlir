// glow-ir-verify: the rules of buffers in glow_ir code, one case per chunk, each error at the instruction
// that breaks the rule.
// RUN: glow-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(glow-ir-verify)'

// Every activation is deallocated exactly once.
func.func @f(%x: memref<4xf32> {glow.name = "x"}, %y: memref<4xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  "glow_ir.element_exp"(%a, %x) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.copy"(%y, %a) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<4xf32>) -> ()
  // expected-error @+1 {{'glow_ir.dealloc_activation' deallocates %0 a second time}}
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<4xf32>) -> ()
  return
}

// -----

// Only an elementwise instruction may write a buffer it reads.
func.func @f(%x: memref<4x4xf32> {glow.name = "x"}, %y: memref<4x4xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<4x4xf32>
  "glow_ir.element_exp"(%a, %x) {roles = ["out", "in"]} : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  // expected-error @+1 {{'glow_ir.transpose' reads %0 through an @in operand while writing it through @out: only an elementwise instruction may work in place, with both operands of one type}}
  "glow_ir.transpose"(%a, %a) {roles = ["out", "in"], shuffle = array<i64: 1, 0>} : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  "glow_ir.copy"(%y, %a) {roles = ["out", "in"]} : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<4x4xf32>) -> ()
  return
}

// -----

// An @in operand never reads an activation (or output) that nothing wrote yet.
func.func @f(%x: memref<4xf32> {glow.name = "x"}, %y: memref<4xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  // expected-error @+1 {{'glow_ir.element_add' reads %0 before any instruction wrote it}}
  "glow_ir.element_add"(%y, %x, %a) {roles = ["out", "in", "in"]} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<4xf32>) -> ()
  return
}

// -----

// No instruction reads or writes a buffer after its dealloc, also through a view.
func.func @f(%x: memref<4xf32> {glow.name = "x"}, %y: memref<2x2xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  "glow_ir.element_exp"(%a, %x) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  %v = "glow_ir.tensor_view"(%a) : (memref<4xf32>) -> memref<2x2xf32>
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<4xf32>) -> ()
  // expected-error @+1 {{'glow_ir.element_neg' reads %0 after its dealloc}}
  "glow_ir.element_neg"(%y, %v) {roles = ["out", "in"]} : (memref<2x2xf32>, memref<2x2xf32>) -> ()
  return
}
