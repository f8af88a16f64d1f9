// glow-ir-sink-alloc moves each alloc (and tensor_view) right before its first user.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-sink-alloc,glow-ir-verify)' | FileCheck %s
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-sink-alloc,glow-allocate)' | FileCheck %s --check-prefix=ARENA

// Every alloc at the top, as a naive front end emits them: all three look live at once (64 + 64 + 128 = 256
// bytes). Sunk, %c starts after %a ended and only %b lives beside it (192 bytes). %c's view sinks too, or it would pin %c's alloc.
// CHECK-LABEL: func.func @early
// CHECK: %[[A:.*]] = "glow_ir.alloc_activation"
// CHECK-NEXT: "glow_ir.element_neg"(%[[A]], %arg0)
// CHECK-NEXT: %[[B:.*]] = "glow_ir.alloc_activation"
// CHECK-NEXT: "glow_ir.element_exp"(%[[B]], %[[A]])
// CHECK-NEXT: "glow_ir.dealloc_activation"(%[[A]])
// CHECK-NEXT: %[[C:.*]] = "glow_ir.alloc_activation"
// CHECK-NEXT: %[[V:.*]] = "glow_ir.tensor_view"(%[[C]])
// CHECK-NEXT: "glow_ir.broadcast"(%[[V]], %[[B]])
// ARENA-LABEL: func.func @early
// ARENA-SAME: glow.arena_bytes = 192 : i64
func.func @early(%x: memref<16xf32> {glow.name = "x"}, %y: memref<2x16xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<16xf32>
  %b = "glow_ir.alloc_activation"() : () -> memref<16xf32>
  %c = "glow_ir.alloc_activation"() : () -> memref<32xf32>
  %v = "glow_ir.tensor_view"(%c) : (memref<32xf32>) -> memref<2x16xf32>
  "glow_ir.element_neg"(%a, %x) {roles = ["out", "in"]} : (memref<16xf32>, memref<16xf32>) -> ()
  "glow_ir.element_exp"(%b, %a) {roles = ["out", "in"]} : (memref<16xf32>, memref<16xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<16xf32>) -> ()
  "glow_ir.broadcast"(%v, %b) {axis = 1 : i64, roles = ["out", "in"]} : (memref<2x16xf32>, memref<16xf32>) -> ()
  "glow_ir.dealloc_activation"(%b) {roles = ["out"]} : (memref<16xf32>) -> ()
  "glow_ir.element_neg"(%y, %v) {roles = ["out", "in"]} : (memref<2x16xf32>, memref<2x16xf32>) -> ()
  "glow_ir.dealloc_activation"(%c) {roles = ["out"]} : (memref<32xf32>) -> ()
  return
}
