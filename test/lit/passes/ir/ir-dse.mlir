// glow-ir-dse removes instructions whose written buffers are never read, then allocs nothing uses.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-dse,glow-ir-verify,glow-verify)' | FileCheck %s

// %dead is written and never read; %over is fully overwritten before its read; the first write of the output
// is overwritten too. The @inout insert into %dead goes with it, and %dead's alloc, view and dealloc.
// CHECK-LABEL: func.func @stores
// CHECK-NOT: glow_ir.tanh
// CHECK-NOT: glow_ir.sigmoid
// CHECK: %[[O:.*]] = "glow_ir.alloc_activation"() : () -> memref<4xf32>
// CHECK-NEXT: "glow_ir.element_neg"(%[[O]], %arg0)
// CHECK-NEXT: "glow_ir.element_exp"(%arg1, %[[O]])
// CHECK-NEXT: "glow_ir.dealloc_activation"(%[[O]])
// CHECK-NEXT: return
func.func @stores(%x: memref<4xf32> {glow.name = "x"}, %y: memref<4xf32> {glow.name = "y", glow.output}) {
  %dead = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  "glow_ir.tanh"(%dead, %x) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  %view = "glow_ir.tensor_view"(%dead) : (memref<4xf32>) -> memref<2x2xf32>
  "glow_ir.insert_tensor"(%dead, %x) {roles = ["inout", "in"], start = array<i64: 0>} : (memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.dealloc_activation"(%dead) {roles = ["out"]} : (memref<4xf32>) -> ()
  "glow_ir.sigmoid"(%y, %x) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  %over = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  "glow_ir.tanh"(%over, %x) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.element_neg"(%over, %x) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.element_exp"(%y, %over) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.dealloc_activation"(%over) {roles = ["out"]} : (memref<4xf32>) -> ()
  return
}

// A partial (@inout) write does not kill what was there: the splat under the insert is read through it.
// CHECK-LABEL: func.func @partial
// CHECK: "glow_ir.splat"
// CHECK: "glow_ir.insert_tensor"
// CHECK: "glow_ir.copy"
func.func @partial(%x: memref<2xf32> {glow.name = "x"}, %y: memref<4xf32> {glow.name = "y", glow.output}) {
  %p = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  "glow_ir.splat"(%p) {roles = ["out"], value = 0.0 : f32} : (memref<4xf32>) -> ()
  "glow_ir.insert_tensor"(%p, %x) {roles = ["inout", "in"], start = array<i64: 1>} : (memref<4xf32>, memref<2xf32>) -> ()
  "glow_ir.copy"(%y, %p) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.dealloc_activation"(%p) {roles = ["out"]} : (memref<4xf32>) -> ()
  return
}
