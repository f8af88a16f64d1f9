// glow-allocate places every activation in one arena argument at 64-byte aligned offsets, reusing the
// memory of buffers that are dead.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-allocate,glow-verify)' | FileCheck %s

// A chain a -> b -> c -> d of 256-byte buffers: at most two are live at once, so a and c share one offset
// and b and d the other.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: memref<8x8xf32> {glow.name = "x"}, %[[Y:.*]]: memref<8x8xf32> {glow.name = "y", glow.output}, %[[ARENA:.*]]: memref<512xi8> {glow.arena})
// CHECK-SAME: attributes {glow.arena_bytes = 512 : i64, glow.naive_activation_bytes = 1024 : i64, glow.peak_live_bytes = 512 : i64}
// CHECK-NOT: glow_ir.alloc_activation
// CHECK-NOT: glow_ir.dealloc_activation
// CHECK: %[[OA:.*]] = arith.constant [[OFFSET_AC:[0-9]+]] : index
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%[[OA]]][] : memref<512xi8> to memref<8x8xf32>
// CHECK: "glow_ir.element_exp"(%[[A]], %[[X]])
// CHECK: %[[OB:.*]] = arith.constant [[OFFSET_BD:[0-9]+]] : index
// CHECK: %[[B:.*]] = memref.view %[[ARENA]][%[[OB]]][] : memref<512xi8> to memref<8x8xf32>
// CHECK: "glow_ir.element_exp"(%[[B]], %[[A]])
// CHECK: %[[OC:.*]] = arith.constant [[OFFSET_AC]] : index
// CHECK: %[[C:.*]] = memref.view %[[ARENA]][%[[OC]]][] : memref<512xi8> to memref<8x8xf32>
// CHECK: "glow_ir.element_exp"(%[[C]], %[[B]])
// CHECK: %[[OD:.*]] = arith.constant [[OFFSET_BD]] : index
// CHECK: %[[D:.*]] = memref.view %[[ARENA]][%[[OD]]][] : memref<512xi8> to memref<8x8xf32>
// CHECK: "glow_ir.element_exp"(%[[D]], %[[C]])
// CHECK: "glow_ir.element_exp"(%[[Y]], %[[D]])
// CHECK-NOT: glow_ir.dealloc_activation
// CHECK: return
func.func @chain(%x: memref<8x8xf32> {glow.name = "x"}, %y: memref<8x8xf32> {glow.name = "y", glow.output}) {
  %a = "glow_ir.alloc_activation"() : () -> memref<8x8xf32>
  "glow_ir.element_exp"(%a, %x) {roles = ["out", "in"]} : (memref<8x8xf32>, memref<8x8xf32>) -> ()
  %b = "glow_ir.alloc_activation"() : () -> memref<8x8xf32>
  "glow_ir.element_exp"(%b, %a) {roles = ["out", "in"]} : (memref<8x8xf32>, memref<8x8xf32>) -> ()
  "glow_ir.dealloc_activation"(%a) {roles = ["out"]} : (memref<8x8xf32>) -> ()
  %c = "glow_ir.alloc_activation"() : () -> memref<8x8xf32>
  "glow_ir.element_exp"(%c, %b) {roles = ["out", "in"]} : (memref<8x8xf32>, memref<8x8xf32>) -> ()
  "glow_ir.dealloc_activation"(%b) {roles = ["out"]} : (memref<8x8xf32>) -> ()
  %d = "glow_ir.alloc_activation"() : () -> memref<8x8xf32>
  "glow_ir.element_exp"(%d, %c) {roles = ["out", "in"]} : (memref<8x8xf32>, memref<8x8xf32>) -> ()
  "glow_ir.dealloc_activation"(%c) {roles = ["out"]} : (memref<8x8xf32>) -> ()
  "glow_ir.element_exp"(%y, %d) {roles = ["out", "in"]} : (memref<8x8xf32>, memref<8x8xf32>) -> ()
  "glow_ir.dealloc_activation"(%d) {roles = ["out"]} : (memref<8x8xf32>) -> ()
  return
}

// Sizes are rounded up to 64 bytes (12 bytes -> 64). A read through a tensor_view is a use of the viewed
// buffer: %t is read through %v after its dealloc and after %u is made, so %u must not take %t's memory.
// CHECK-LABEL: func.func @views_and_alignment
// CHECK-SAME: %[[ARENA:[^:]*]]: memref<128xi8> {glow.arena}
// CHECK-SAME: glow.arena_bytes = 128 : i64, glow.naive_activation_bytes = 128 : i64, glow.peak_live_bytes = 128 : i64
// CHECK: %[[OT:.*]] = arith.constant [[OFFSET_T:[0-9]+]] : index
// CHECK: %[[T:.*]] = memref.view %[[ARENA]][%[[OT]]][] : memref<128xi8> to memref<3xf32>
// CHECK: %[[V:.*]] = "glow_ir.tensor_view"(%[[T]]) : (memref<3xf32>) -> memref<1x3xf32>
// CHECK-NOT: arith.constant [[OFFSET_T]] : index
// CHECK: %[[U:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<128xi8> to memref<1x3xf32>
// CHECK: "glow_ir.element_add"(%{{.*}}, %[[U]], %[[V]])
func.func @views_and_alignment(%x: memref<3xf32> {glow.name = "x"}, %y: memref<1x3xf32> {glow.name = "y", glow.output}) {
  %t = "glow_ir.alloc_activation"() : () -> memref<3xf32>
  "glow_ir.element_exp"(%t, %x) {roles = ["out", "in"]} : (memref<3xf32>, memref<3xf32>) -> ()
  %v = "glow_ir.tensor_view"(%t) : (memref<3xf32>) -> memref<1x3xf32>
  "glow_ir.dealloc_activation"(%t) {roles = ["out"]} : (memref<3xf32>) -> ()
  %u = "glow_ir.alloc_activation"() : () -> memref<1x3xf32>
  "glow_ir.splat"(%u) {roles = ["out"], value = 1.0 : f32} : (memref<1x3xf32>) -> ()
  "glow_ir.element_add"(%y, %u, %v) {roles = ["out", "in", "in"]} : (memref<1x3xf32>, memref<1x3xf32>, memref<1x3xf32>) -> ()
  "glow_ir.dealloc_activation"(%u) {roles = ["out"]} : (memref<1x3xf32>) -> ()
  return
}

// A function without activations still gets the (empty) arena, so every function has one calling convention.
// CHECK-LABEL: func.func @no_activations
// CHECK-SAME: %{{.*}}: memref<0xi8> {glow.arena}
// CHECK-SAME: glow.arena_bytes = 0 : i64
func.func @no_activations(%x: memref<3xf32> {glow.name = "x"}, %y: memref<3xf32> {glow.name = "y", glow.output}) {
  "glow_ir.element_exp"(%y, %x) {roles = ["out", "in"]} : (memref<3xf32>, memref<3xf32>) -> ()
  return
}
