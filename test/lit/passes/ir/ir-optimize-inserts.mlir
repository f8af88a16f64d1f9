// glow-ir-optimize-inserts: the instruction computing an inserted block writes it through a block_view of
// the insert's destination; the insert and the block's own buffer go away.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-verify,glow-ir-optimize-inserts,glow-ir-verify)' | FileCheck %s

// A concat of two results, then padded: both concat inputs are written in place; the concat's buffer itself
// has two writers (through the views), so its insert into the padding stays.
// CHECK-LABEL: func.func @concat_then_pad
// CHECK:      %[[C:.*]] = "glow_ir.alloc_activation"() : () -> memref<1x4x4x16xf32>
// CHECK-NEXT: %[[A:.*]] = "glow_ir.block_view"(%[[C]]) {start = array<i64: 0, 0, 0, 0>} : (memref<1x4x4x16xf32>) -> memref<1x4x4x8xf32, strided<[256, 64, 16, 1]>>
// CHECK-NEXT: "glow_ir.element_exp"(%[[A]], %arg0)
// CHECK-NEXT: %[[B:.*]] = "glow_ir.block_view"(%[[C]]) {start = array<i64: 0, 0, 0, 8>} : (memref<1x4x4x16xf32>) -> memref<1x4x4x8xf32, strided<[256, 64, 16, 1], offset: 8>>
// CHECK-NEXT: "glow_ir.element_neg"(%[[B]], %arg0)
// CHECK:      "glow_ir.insert_tensor"(%{{.*}}, %[[C]])
// CHECK-NOT:  "glow_ir.insert_tensor"
// CHECK:      return
func.func @concat_then_pad(%x: memref<1x4x4x8xf32> {glow.name = "x"}, %y: memref<1x6x6x16xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<1x4x4x8xf32>
  "glow_ir.element_exp"(%a, %x) {roles = ["out", "in"]} : (memref<1x4x4x8xf32>, memref<1x4x4x8xf32>) -> ()
  %b = "glow_ir.alloc_activation"() : () -> memref<1x4x4x8xf32>
  "glow_ir.element_neg"(%b, %x) {roles = ["out", "in"]} : (memref<1x4x4x8xf32>, memref<1x4x4x8xf32>) -> ()
  %c = "glow_ir.alloc_activation"() : () -> memref<1x4x4x16xf32>
  "glow_ir.insert_tensor"(%c, %a) {roles = ["inout", "in"], start = array<i64: 0, 0, 0, 0>} : (memref<1x4x4x16xf32>, memref<1x4x4x8xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<1x4x4x8xf32>) -> ()
  "glow_ir.insert_tensor"(%c, %b) {roles = ["inout", "in"], start = array<i64: 0, 0, 0, 8>} : (memref<1x4x4x16xf32>, memref<1x4x4x8xf32>) -> ()
  "glow_ir.dealloc_activation"(%b) {roles = ["out"]} : (memref<1x4x4x8xf32>) -> ()
  %p = "glow_ir.alloc_activation"() : () -> memref<1x6x6x16xf32>
  "glow_ir.splat"(%p) {roles = ["out"], value = 0.000000e+00 : f32} : (memref<1x6x6x16xf32>) -> ()
  "glow_ir.insert_tensor"(%p, %c) {roles = ["inout", "in"], start = array<i64: 0, 1, 1, 0>} : (memref<1x6x6x16xf32>, memref<1x4x4x16xf32>) -> ()
  "glow_ir.dealloc_activation"(%c) {roles = ["out"]} : (memref<1x4x4x16xf32>) -> ()
  "glow_ir.element_exp"(%y, %p) {roles = ["out", "in"]} : (memref<1x6x6x16xf32>, memref<1x6x6x16xf32>) -> ()
  "glow_ir.dealloc_activation"(%p) {roles = ["out"]} : (memref<1x6x6x16xf32>) -> ()
  return
}

// A padding whose zeros are written after the block's producer: the padded buffer and its splat move before
// the producer, which writes the interior; the reader of the block reads it there.
// CHECK-LABEL: func.func @pad
// CHECK:      %[[P:.*]] = "glow_ir.alloc_activation"() : () -> memref<1x6x6x8xf32>
// CHECK-NEXT: "glow_ir.splat"(%[[P]])
// CHECK-NEXT: %[[V:.*]] = "glow_ir.block_view"(%[[P]]) {start = array<i64: 0, 1, 1, 0>} : (memref<1x6x6x8xf32>) -> memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>
// CHECK-NEXT: "glow_ir.element_exp"(%[[V]], %arg0)
// CHECK-NEXT: "glow_ir.element_neg"(%arg2, %[[V]])
// CHECK-NOT:  "glow_ir.insert_tensor"
// CHECK:      return
func.func @pad(%x: memref<1x4x4x8xf32> {glow.name = "x"}, %y: memref<1x6x6x8xf32> {glow.name = "y", glow.output}, %z: memref<1x4x4x8xf32> {glow.name = "z", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<1x4x4x8xf32>
  "glow_ir.element_exp"(%a, %x) {roles = ["out", "in"]} : (memref<1x4x4x8xf32>, memref<1x4x4x8xf32>) -> ()
  "glow_ir.element_neg"(%z, %a) {roles = ["out", "in"]} : (memref<1x4x4x8xf32>, memref<1x4x4x8xf32>) -> ()
  %p = "glow_ir.alloc_activation"() : () -> memref<1x6x6x8xf32>
  "glow_ir.splat"(%p) {roles = ["out"], value = 0.000000e+00 : f32} : (memref<1x6x6x8xf32>) -> ()
  "glow_ir.insert_tensor"(%p, %a) {roles = ["inout", "in"], start = array<i64: 0, 1, 1, 0>} : (memref<1x6x6x8xf32>, memref<1x4x4x8xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<1x4x4x8xf32>) -> ()
  "glow_ir.element_exp"(%y, %p) {roles = ["out", "in"]} : (memref<1x6x6x8xf32>, memref<1x6x6x8xf32>) -> ()
  "glow_ir.dealloc_activation"(%p) {roles = ["out"]} : (memref<1x6x6x8xf32>) -> ()
  return
}

// The padded buffer is read between the producer and the insert: writing the block early would change what
// that read sees, so nothing moves.
// CHECK-LABEL: func.func @read_in_between
// CHECK-NOT:  "glow_ir.block_view"
// CHECK:      "glow_ir.insert_tensor"
func.func @read_in_between(%x: memref<1x4x4x8xf32> {glow.name = "x"}, %y: memref<1x6x6x8xf32> {glow.name = "y", glow.output}, %z: memref<1x6x6x8xf32> {glow.name = "z", glow.output}) {
  %p = "glow_ir.alloc_activation"() : () -> memref<1x6x6x8xf32>
  "glow_ir.splat"(%p) {roles = ["out"], value = 0.000000e+00 : f32} : (memref<1x6x6x8xf32>) -> ()
  %a = "glow_ir.alloc_activation"() : () -> memref<1x4x4x8xf32>
  "glow_ir.element_exp"(%a, %x) {roles = ["out", "in"]} : (memref<1x4x4x8xf32>, memref<1x4x4x8xf32>) -> ()
  "glow_ir.element_exp"(%z, %p) {roles = ["out", "in"]} : (memref<1x6x6x8xf32>, memref<1x6x6x8xf32>) -> ()
  "glow_ir.insert_tensor"(%p, %a) {roles = ["inout", "in"], start = array<i64: 0, 1, 1, 0>} : (memref<1x6x6x8xf32>, memref<1x4x4x8xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<1x4x4x8xf32>) -> ()
  "glow_ir.element_exp"(%y, %p) {roles = ["out", "in"]} : (memref<1x6x6x8xf32>, memref<1x6x6x8xf32>) -> ()
  "glow_ir.dealloc_activation"(%p) {roles = ["out"]} : (memref<1x6x6x8xf32>) -> ()
  return
}

// The model's NCHW input transposed to NHWC, then padded for the stem: the transpose writes the interior of the
// padded buffer in place (no copy of 3-channel rows into it).
// CHECK-LABEL: func.func @transpose_then_pad
// CHECK:      %[[P:.*]] = "glow_ir.alloc_activation"() : () -> memref<1x6x6x3xf32>
// CHECK-NEXT: "glow_ir.splat"(%[[P]])
// CHECK-NEXT: %[[V:.*]] = "glow_ir.block_view"(%[[P]]) {start = array<i64: 0, 1, 1, 0>} : (memref<1x6x6x3xf32>) -> memref<1x4x4x3xf32, strided<[108, 18, 3, 1], offset: 21>>
// CHECK-NEXT: "glow_ir.transpose"(%[[V]], %arg0) {roles = ["out", "in"], shuffle = array<i64: 0, 2, 3, 1>}
// CHECK-NOT:  "glow_ir.insert_tensor"
// CHECK:      return
func.func @transpose_then_pad(%x: memref<1x3x4x4xf32> {glow.name = "x"}, %y: memref<1x6x6x3xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<1x4x4x3xf32>
  "glow_ir.transpose"(%a, %x) {roles = ["out", "in"], shuffle = array<i64: 0, 2, 3, 1>} : (memref<1x4x4x3xf32>, memref<1x3x4x4xf32>) -> ()
  %p = "glow_ir.alloc_activation"() : () -> memref<1x6x6x3xf32>
  "glow_ir.splat"(%p) {roles = ["out"], value = 0.000000e+00 : f32} : (memref<1x6x6x3xf32>) -> ()
  "glow_ir.insert_tensor"(%p, %a) {roles = ["inout", "in"], start = array<i64: 0, 1, 1, 0>} : (memref<1x6x6x3xf32>, memref<1x4x4x3xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<1x4x4x3xf32>) -> ()
  "glow_ir.element_exp"(%y, %p) {roles = ["out", "in"]} : (memref<1x6x6x3xf32>, memref<1x6x6x3xf32>) -> ()
  "glow_ir.dealloc_activation"(%p) {roles = ["out"]} : (memref<1x6x6x3xf32>) -> ()
  return
}
