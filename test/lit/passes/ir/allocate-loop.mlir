// glow-allocate plans a loop's body first, reserves one scratch block at the loop in the model's plan (the
// body's arena, the iteration number, the scan slice and the carried and scan outputs), and expands the
// glow_ir.loop into an scf.for around the body's instructions, whose function is then gone.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-allocate)' | FileCheck %s

// CHECK-LABEL: func.func @scan
// CHECK-SAME: (%[[S0:.*]]: memref<4xf32> {glow.name = "s0"}, %[[X:.*]]: memref<4x5xf32> {glow.name = "x"}, %[[S:.*]]: memref<4xf32> {glow.name = "s", glow.output}, %[[Y:.*]]: memref<5x4xf32> {glow.name = "y", glow.output}, %[[ARENA:.*]]: memref<320xi8> {glow.arena})
// CHECK-SAME: glow.arena_bytes = 320 : i64
// CHECK: %[[BODY:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<320xi8> to memref<64xi8>
// CHECK: %[[I:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<320xi8> to memref<i64>
// CHECK: %[[XT:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<320xi8> to memref<4xf32>
// CHECK: %[[HN:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<320xi8> to memref<4xf32>
// CHECK: %[[YT:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<320xi8> to memref<4xf32>
// CHECK: "glow_ir.copy"(%[[S]], %[[S0]])
// CHECK: %[[LAST:.*]] = arith.constant 4 : index
// CHECK: %[[N:.*]] = arith.constant 5 : index
// CHECK: scf.for %[[IV:.*]] = %{{.*}} to %[[N]] step
// CHECK-NEXT: %[[REV:.*]] = arith.subi %[[LAST]], %[[IV]]
// CHECK-NEXT: %[[I64:.*]] = arith.index_cast %[[IV]] : index to i64
// CHECK-NEXT: memref.store %[[I64]], %[[I]][]
// The scan input is reversed along axis 1: its slices are strided.
// CHECK-NEXT: %[[XS:.*]] = memref.subview %[[X]][0, %[[REV]]] [4, 1] [1, 1] : memref<4x5xf32> to memref<4xf32, strided<[5], offset: ?>>
// CHECK-NEXT: "glow_ir.copy"(%[[XT]], %[[XS]])
// CHECK: %[[T:.*]] = memref.view %[[BODY]][%{{.*}}][] : memref<64xi8> to memref<4xf32>
// CHECK-NEXT: "glow_ir.element_exp"(%[[T]], %[[XT]])
// CHECK-NEXT: "glow_ir.element_add"(%[[HN]], %[[S]], %[[T]])
// CHECK-NEXT: "glow_ir.element_mul"(%[[YT]], %[[HN]], %[[HN]])
// CHECK-NEXT: "glow_ir.copy"(%[[S]], %[[HN]])
// CHECK-NEXT: %[[YS:.*]] = memref.subview %[[Y]][%[[IV]], 0] [1, 4] [1, 1]
// CHECK-NEXT: "glow_ir.copy"(%[[YS]], %[[YT]]) {{.*$}}
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: return
// CHECK-NOT: func.func private @body
func.func @scan(%s0: memref<4xf32> {glow.name = "s0"}, %x: memref<4x5xf32> {glow.name = "x"}, %s: memref<4xf32> {glow.name = "s", glow.output}, %y: memref<5x4xf32> {glow.name = "y", glow.output}) {
  "glow_ir.loop"(%s, %y, %s0, %x) {body = @body, num_carried = 1 : i64, num_scan_inputs = 1 : i64, condition = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, roles = ["out", "out", "in", "in"], scan_input_axes = array<i64: 1>, scan_input_directions = array<i64: 1>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>, trip_count = 5 : i64} : (memref<4xf32>, memref<5x4xf32>, memref<4xf32>, memref<4x5xf32>) -> ()
  return
}
func.func private @body(%i: memref<i64>, %h: memref<4xf32>, %xt: memref<4xf32>, %hn: memref<4xf32> {glow.output}, %yt: memref<4xf32> {glow.output}) {
  %t = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  "glow_ir.element_exp"(%t, %xt) {roles = ["out", "in"]} : (memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.element_add"(%hn, %h, %t) {roles = ["out", "in", "in"]} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  "glow_ir.dealloc_activation"(%t) {roles = ["out"]} : (memref<4xf32>) -> ()
  "glow_ir.element_mul"(%yt, %hn, %hn) {roles = ["out", "in", "in"]} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  return
}
