// glow-allocate expands a glow_ir.loop whose body computes a condition (`condition = 1`: the body's first
// output, an i1) into an scf.while that runs while the iteration is below the trip count and the condition
// the last iteration wrote holds (true before the first).
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-allocate)' | FileCheck %s

// CHECK-LABEL: func.func @while_loop
// CHECK-SAME: %[[ARENA:[^:]*]]: memref<320xi8> {glow.arena}
// CHECK: %[[BODY:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<320xi8> to memref<128xi8>
// CHECK: %[[I:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<320xi8> to memref<i64>
// CHECK: %[[MORE:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<320xi8> to memref<i1>
// CHECK: %[[NEXT:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<320xi8> to memref<3xf32>
// CHECK: "glow_ir.copy"(%[[A:.*]], %[[A0:[^)]*]])
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[N:.*]] = arith.constant 100 : index
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK-NEXT: memref.store %[[TRUE]], %[[MORE]][]
// CHECK-NEXT: scf.while (%[[IV:.*]] = %{{.*}}) : (index) -> index {
// CHECK-NEXT: %[[IN:.*]] = arith.cmpi slt, %[[IV]], %[[N]] : index
// CHECK-NEXT: %[[LAST:.*]] = memref.load %[[MORE]][] : memref<i1>
// CHECK-NEXT: %[[GO:.*]] = arith.andi %[[IN]], %[[LAST]] : i1
// CHECK-NEXT: scf.condition(%[[GO]]) %[[IV]] : index
// CHECK-NEXT: } do {
// CHECK-NEXT: ^bb0(%[[J:.*]]: index):
// CHECK-NEXT: %[[J1:.*]] = arith.addi %[[J]], %[[ONE]] : index
// CHECK: memref.store %{{.*}}, %[[I]][]
// CHECK-NEXT: "glow_ir.element_add"(%[[NEXT]], %[[A]], %{{.*}})
// CHECK: "glow_ir.element_cmp_lt"(%[[MORE]],
// CHECK-NEXT: "glow_ir.copy"(%[[A]], %[[NEXT]])
// CHECK-NEXT: scf.yield %[[J1]] : index
// CHECK-NOT: func.func private @wbody
func.func @while_loop(%a0: memref<3xf32> {glow.name = "a0"}, %x: memref<3xf32> {glow.name = "x"}, %a: memref<3xf32> {glow.name = "a", glow.output}) {
  "glow_ir.loop"(%a, %a0, %x) {body = @wbody, condition = 1 : i64, num_carried = 1 : i64, num_scan_inputs = 0 : i64, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, roles = ["out", "in", "in"], scan_input_axes = array<i64>, scan_input_directions = array<i64>, scan_output_axes = array<i64>, scan_output_directions = array<i64>, trip_count = 100 : i64} : (memref<3xf32>, memref<3xf32>, memref<3xf32>) -> ()
  return
}
func.func private @wbody(%i: memref<i64>, %acc: memref<3xf32>, %x: memref<3xf32>, %more: memref<i1> {glow.output}, %next: memref<3xf32> {glow.output}) {
  "glow_ir.element_add"(%next, %acc, %x) {roles = ["out", "in", "in"]} : (memref<3xf32>, memref<3xf32>, memref<3xf32>) -> ()
  %t = "glow_ir.alloc_activation"() : () -> memref<f32>
  "glow_ir.batched_reduce_add"(%t, %next) {axes = array<i64: 0>, roles = ["out", "in"]} : (memref<f32>, memref<3xf32>) -> ()
  %ten = "glow_ir.alloc_activation"() : () -> memref<f32>
  "glow_ir.splat"(%ten) {value = 1.000000e+01 : f32, roles = ["out"]} : (memref<f32>) -> ()
  "glow_ir.element_cmp_lt"(%more, %t, %ten) {roles = ["out", "in", "in"]} : (memref<i1>, memref<f32>, memref<f32>) -> ()
  "glow_ir.dealloc_activation"(%ten) {roles = ["out"]} : (memref<f32>) -> ()
  "glow_ir.dealloc_activation"(%t) {roles = ["out"]} : (memref<f32>) -> ()
  return
}
