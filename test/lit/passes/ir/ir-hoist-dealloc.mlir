// glow-ir-hoist-dealloc moves each dealloc right after the last instruction accessing its buffer.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-hoist-dealloc,glow-ir-verify)' | FileCheck %s
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-hoist-dealloc,glow-allocate)' | FileCheck %s --check-prefix=ARENA

// %a's dealloc sits at the end, so all three buffers look live together (a 192-byte arena); hoisted, %a ends
// at the exp and %c reuses its memory (128 bytes). An access through a view counts: %c ends after the
// transpose reading %v, and %b's dealloc, already right after its last reader, stays.
// CHECK-LABEL: func.func @late
// CHECK: "glow_ir.element_exp"(%[[B:.*]], %[[A:.*]]) {roles
// CHECK-NEXT: "glow_ir.dealloc_activation"(%[[A]])
// CHECK: "glow_ir.tanh"(%[[C:.*]], %[[B]])
// CHECK-NEXT: "glow_ir.dealloc_activation"(%[[B]])
// CHECK: "glow_ir.transpose"
// CHECK-NEXT: "glow_ir.dealloc_activation"(%[[C]])
// CHECK-NEXT: return
// ARENA-LABEL: func.func @late
// ARENA-SAME: glow.arena_bytes = 128 : i64
func.func @late(%x: memref<16xf32> {glow.name = "x"}, %y: memref<16xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<16xf32>
  "glow_ir.element_neg"(%a, %x) {roles = ["out", "in"]} : (memref<16xf32>, memref<16xf32>) -> ()
  %b = "glow_ir.alloc_activation"() : () -> memref<16xf32>
  "glow_ir.element_exp"(%b, %a) {roles = ["out", "in"]} : (memref<16xf32>, memref<16xf32>) -> ()
  %c = "glow_ir.alloc_activation"() : () -> memref<16xf32>
  "glow_ir.tanh"(%c, %b) {roles = ["out", "in"]} : (memref<16xf32>, memref<16xf32>) -> ()
  "glow_ir.dealloc_activation"(%b) {roles = ["out"]} : (memref<16xf32>) -> ()
  %v = "glow_ir.tensor_view"(%c) : (memref<16xf32>) -> memref<4x4xf32>
  %w = "glow_ir.tensor_view"(%y) : (memref<16xf32>) -> memref<4x4xf32>
  "glow_ir.transpose"(%w, %v) {roles = ["out", "in"], shuffle = array<i64: 1, 0>} : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%c) {roles = ["out"]} : (memref<16xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<16xf32>) -> ()
  return
}
