// glow-ir-copy-elim removes copies by making their source and destination one buffer.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-copy-elim,glow-ir-verify,glow-verify)' | FileCheck %s
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-copy-elim,glow-allocate)' | FileCheck %s --check-prefix=ARENA

// IRGen's insert_tensor: copy `big` into a fresh buffer, then insert in place. `big` dies at the copy, so the
// insert works in `big`'s buffer. A copy onto the same buffer is deleted.
// CHECK-LABEL: func.func @insert
// CHECK: %[[E:.*]] = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
// CHECK-NEXT: "glow_ir.element_exp"(%[[E]], %arg0)
// CHECK-NEXT: "glow_ir.insert_tensor"(%[[E]], %arg1)
// CHECK-NEXT: "glow_ir.element_neg"(%arg2, %[[E]])
// CHECK-NEXT: "glow_ir.dealloc_activation"(%[[E]])
// CHECK-NEXT: return
// ARENA-LABEL: func.func @insert
// ARENA-SAME: glow.arena_bytes = 64 : i64
func.func @insert(%x: memref<2x4xf32> {glow.name = "x"}, %s: memref<1x2xf32> {glow.name = "s"}, %y: memref<2x4xf32> {glow.name = "y", glow.output}) {
  %e = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
  "glow_ir.element_exp"(%e, %x) {roles = ["out", "in"]} : (memref<2x4xf32>, memref<2x4xf32>) -> ()
  %d = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
  "glow_ir.copy"(%d, %e) {roles = ["out", "in"]} : (memref<2x4xf32>, memref<2x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%e) {roles = ["out"]} : (memref<2x4xf32>) -> ()
  "glow_ir.insert_tensor"(%d, %s) {roles = ["inout", "in"], start = array<i64: 1, 2>} : (memref<2x4xf32>, memref<1x2xf32>) -> ()
  "glow_ir.copy"(%d, %d) {roles = ["out", "in"]} : (memref<2x4xf32>, memref<2x4xf32>) -> ()
  "glow_ir.element_neg"(%y, %d) {roles = ["out", "in"]} : (memref<2x4xf32>, memref<2x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%d) {roles = ["out"]} : (memref<2x4xf32>) -> ()
  return
}

// A view returned: IRGen copies it into the output. The producer writes the output (through a view of it)
// and the activation is gone. Copying an input into an output is needed and stays.
// CHECK-LABEL: func.func @output
// CHECK: %[[V:.*]] = "glow_ir.tensor_view"(%arg1) : (memref<8xf32>) -> memref<2x4xf32>
// CHECK-NOT: glow_ir.alloc_activation
// CHECK: "glow_ir.element_exp"(%[[V]], %arg0)
// CHECK-NEXT: "glow_ir.copy"(%arg2, %arg0)
// CHECK-NEXT: return
// ARENA-LABEL: func.func @output
// ARENA-SAME: glow.arena_bytes = 0 : i64
func.func @output(%x: memref<2x4xf32> {glow.name = "x"}, %y: memref<8xf32> {glow.name = "y", glow.output}, %z: memref<2x4xf32> {glow.name = "z", glow.output}) {
  %e = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
  "glow_ir.element_exp"(%e, %x) {roles = ["out", "in"]} : (memref<2x4xf32>, memref<2x4xf32>) -> ()
  %v = "glow_ir.tensor_view"(%e) : (memref<2x4xf32>) -> memref<8xf32>
  "glow_ir.copy"(%y, %v) {roles = ["out", "in"]} : (memref<8xf32>, memref<8xf32>) -> ()
  "glow_ir.dealloc_activation"(%e) {roles = ["out"]} : (memref<2x4xf32>) -> ()
  "glow_ir.copy"(%z, %x) {roles = ["out", "in"]} : (memref<2x4xf32>, memref<2x4xf32>) -> ()
  return
}

// Kept: the source is read again after the copy and the copy's destination is then written.
// CHECK-LABEL: func.func @kept
// CHECK: "glow_ir.copy"
func.func @kept(%x: memref<4xf32> {glow.name = "x"}, %s: memref<1xf32> {glow.name = "s"}, %y: memref<4xf32> {glow.name = "y", glow.output}) {
  %e = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  "glow_ir.element_exp"(%e, %x) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  %d = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  "glow_ir.copy"(%d, %e) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.insert_tensor"(%d, %s) {roles = ["inout", "in"], start = array<i64: 1>} : (memref<4xf32>, memref<1xf32>) -> ()
  "glow_ir.element_add"(%y, %d, %e) {roles = ["out", "in", "in"]} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.dealloc_activation"(%e) {roles = ["out"]} : (memref<4xf32>) -> ()
  "glow_ir.dealloc_activation"(%d) {roles = ["out"]} : (memref<4xf32>) -> ()
  return
}

// Two paddings share one splat of zeros (graph CSE); the first copies it because the second writes into it.
// That copy becomes a splat of its own: writing zeros instead of reading them too.
// CHECK-LABEL: func.func @shared_zeros
// CHECK:      %[[Z:.*]] = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
// CHECK-NEXT: "glow_ir.splat"(%[[Z]]) {roles = ["out"], value = 0.000000e+00 : f32}
// CHECK-NEXT: %[[D:.*]] = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
// CHECK-NEXT: "glow_ir.splat"(%[[D]]) {roles = ["out"], value = 0.000000e+00 : f32}
// CHECK-NOT:  "glow_ir.copy"
// CHECK:      return
func.func @shared_zeros(%s: memref<1x2xf32> {glow.name = "s"}, %y: memref<2x4xf32> {glow.name = "y", glow.output}, %z: memref<2x4xf32> {glow.name = "z", glow.output}) {
  %zeros = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
  "glow_ir.splat"(%zeros) {roles = ["out"], value = 0.000000e+00 : f32} : (memref<2x4xf32>) -> ()
  %d = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
  "glow_ir.copy"(%d, %zeros) {roles = ["out", "in"]} : (memref<2x4xf32>, memref<2x4xf32>) -> ()
  "glow_ir.insert_tensor"(%d, %s) {roles = ["inout", "in"], start = array<i64: 1, 2>} : (memref<2x4xf32>, memref<1x2xf32>) -> ()
  "glow_ir.element_neg"(%y, %d) {roles = ["out", "in"]} : (memref<2x4xf32>, memref<2x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%d) {roles = ["out"]} : (memref<2x4xf32>) -> ()
  "glow_ir.insert_tensor"(%zeros, %s) {roles = ["inout", "in"], start = array<i64: 0, 0>} : (memref<2x4xf32>, memref<1x2xf32>) -> ()
  "glow_ir.element_exp"(%z, %zeros) {roles = ["out", "in"]} : (memref<2x4xf32>, memref<2x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%zeros) {roles = ["out"]} : (memref<2x4xf32>) -> ()
  return
}
