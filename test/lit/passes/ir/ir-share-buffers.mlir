// glow-ir-share-buffers lets an elementwise instruction write over an operand buffer that dies there.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-share-buffers,glow-ir-verify,glow-verify)' | FileCheck %s
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-share-buffers,glow-allocate)' | FileCheck %s --check-prefix=ARENA

// tanh -> sigmoid -> exp runs in one buffer: one alloc where there were three, one 64-byte slot in the arena
// where there were two.
// CHECK-LABEL: func.func @chain
// CHECK: %[[A:.*]] = "glow_ir.alloc_activation"() : () -> memref<16xf32>
// CHECK-NEXT: "glow_ir.tanh"(%[[A]], %arg0)
// CHECK-NEXT: "glow_ir.sigmoid"(%[[A]], %[[A]])
// CHECK-NEXT: "glow_ir.element_exp"(%[[A]], %[[A]])
// CHECK-NEXT: "glow_ir.element_add"(%arg1, %[[A]], %arg0)
// CHECK-NEXT: "glow_ir.dealloc_activation"(%[[A]])
// CHECK-NEXT: return
// ARENA-LABEL: func.func @chain
// ARENA-SAME: glow.arena_bytes = 64 : i64
func.func @chain(%x: memref<16xf32> {glow.name = "x"}, %y: memref<16xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<16xf32>
  "glow_ir.tanh"(%a, %x) {roles = ["out", "in"]} : (memref<16xf32>, memref<16xf32>) -> ()
  %b = "glow_ir.alloc_activation"() : () -> memref<16xf32>
  "glow_ir.sigmoid"(%b, %a) {roles = ["out", "in"]} : (memref<16xf32>, memref<16xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<16xf32>) -> ()
  %c = "glow_ir.alloc_activation"() : () -> memref<16xf32>
  "glow_ir.element_exp"(%c, %b) {roles = ["out", "in"]} : (memref<16xf32>, memref<16xf32>) -> ()
  "glow_ir.dealloc_activation"(%b) {roles = ["out"]} : (memref<16xf32>) -> ()
  "glow_ir.element_add"(%y, %c, %x) {roles = ["out", "in", "in"]} : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
  "glow_ir.dealloc_activation"(%c) {roles = ["out"]} : (memref<16xf32>) -> ()
  return
}

// Not shared: a transpose is not elementwise; a comparison's i1 result differs in type from its operands;
// an operand still read later.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: glow_ir.alloc_activation
func.func @kept(%x: memref<4x4xf32> {glow.name = "x"}, %y: memref<4x4xi1> {glow.name = "y", glow.output}, %z: memref<4x4xf32> {glow.name = "z", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<4x4xf32>
  "glow_ir.element_exp"(%a, %x) {roles = ["out", "in"]} : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  %t = "glow_ir.alloc_activation"() : () -> memref<4x4xf32>
  "glow_ir.transpose"(%t, %a) {roles = ["out", "in"], shuffle = array<i64: 1, 0>} : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<4x4xf32>) -> ()
  %c = "glow_ir.alloc_activation"() : () -> memref<4x4xi1>
  "glow_ir.element_cmp_lt"(%c, %t, %x) {roles = ["out", "in", "in"]} : (memref<4x4xi1>, memref<4x4xf32>, memref<4x4xf32>) -> ()
  "glow_ir.copy"(%y, %c) {roles = ["out", "in"]} : (memref<4x4xi1>, memref<4x4xi1>) -> ()
  "glow_ir.dealloc_activation"(%c) {roles = ["out"]} : (memref<4x4xi1>) -> ()
  %n = "glow_ir.alloc_activation"() : () -> memref<4x4xf32>
  "glow_ir.element_neg"(%n, %t) {roles = ["out", "in"]} : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  "glow_ir.element_add"(%z, %n, %t) {roles = ["out", "in", "in"]} : (memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%t) {roles = ["out"]} : (memref<4x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%n) {roles = ["out"]} : (memref<4x4xf32>) -> ()
  return
}
