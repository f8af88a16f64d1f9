// glow-ir-to-linalg's arg_max / arg_min (codegen/arg_search.py): a row along the innermost dim at least two
// vectors long is searched a 64-byte vector at a time, a best value and position per lane, the tail a masked
// load padded with the worst value, then the lanes merged in halves; along another axis a vector of outputs goes
// through the axis together; a short row is searched an element at a time.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s

// CHECK-LABEL: func.func @rows(
// CHECK:         %[[FIRST:.*]] = vector.load %arg0[%{{.*}}, %c0{{.*}}] : memref<4x40xf32>, vector<16xf32>
// CHECK:         scf.for %[[J:.*]] = %c16 to %c32 step %c16{{.*}} iter_args(%{{.*}} = %[[FIRST]], %{{.*}} = %{{.*}}) -> (vector<16xf32>, vector<16xi32>)
// CHECK:           arith.cmpf olt, %{{.*}} : vector<16xf32>
// CHECK:           arith.cmpf uno, %{{.*}} : vector<16xf32>
// CHECK:           arith.select %{{.*}} : vector<16xi1>, vector<16xi32>
// CHECK:         %[[MASK:.*]] = vector.constant_mask [8] : vector<16xi1>
// CHECK:         vector.maskedload %arg0[%{{.*}}, %c32{{.*}}], %[[MASK]]
// CHECK:         vector.shuffle %{{.*}} [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15] : vector<16xf32>
// CHECK:         arith.cmpi slt, %{{.*}} : vector<16xi32>
// CHECK:         vector.shuffle %{{.*}} [1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<16xi32>
// CHECK:         %[[AT:.*]] = vector.extract %{{.*}}[0] : i32 from vector<16xi32>
// CHECK:         %[[WIDE:.*]] = arith.extsi %[[AT]] : i32 to i64
// CHECK:         memref.store %[[WIDE]], %arg1[%{{.*}}] : memref<4xi64>
func.func @rows(%x: memref<4x40xf32> {glow.name = "x"}, %y: memref<4xi64> {glow.name = "y", glow.output}) {
  "glow_ir.arg_min"(%y, %x) {roles = ["out", "in"], axis = 1 : i64, keepDims = false} : (memref<4xi64>, memref<4x40xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @columns(
// CHECK:         scf.for %[[C:.*]] = %c0{{.*}} to %c16 step %c8 {
// CHECK:           scf.for %[[J:.*]] = %c1{{.*}} to %c3{{.*}} step %c1{{.*}} iter_args({{.*}}) -> (vector<8xi64>, vector<8xi32>)
// CHECK:             vector.load %arg0[%{{.*}}, %[[J]], %[[C]]] : memref<2x3x20xi64>, vector<8xi64>
// CHECK:             arith.cmpi sgt, %{{.*}} : vector<8xi64>
// CHECK:           arith.extsi %{{.*}} : vector<8xi32> to vector<8xi64>
// CHECK:           vector.store %{{.*}}, %arg1[%{{.*}}, %c0{{.*}}, %[[C]]] : memref<2x1x20xi64>, vector<8xi64>
// CHECK:         vector.constant_mask [4] : vector<8xi1>
// CHECK:         vector.maskedstore %arg1[%{{.*}}, %c0{{.*}}, %c16{{.*}}]
func.func @columns(%x: memref<2x3x20xi64> {glow.name = "x"}, %y: memref<2x1x20xi64> {glow.name = "y", glow.output}) {
  "glow_ir.arg_max"(%y, %x) {roles = ["out", "in"], axis = 1 : i64, keepDims = true} : (memref<2x1x20xi64>, memref<2x3x20xi64>) -> ()
  return
}

// CHECK-LABEL: func.func @short_rows(
// CHECK-NOT:     vector.
// CHECK:         scf.for {{.*}} iter_args({{.*}}) -> (f32, index)
// CHECK:           memref.load %arg0
// CHECK:           arith.cmpf ogt, %{{.*}} : f32
// CHECK:         arith.index_cast %{{.*}} : index to i64
func.func @short_rows(%x: memref<3x5xf32> {glow.name = "x"}, %y: memref<3xi64> {glow.name = "y", glow.output}) {
  "glow_ir.arg_max"(%y, %x) {roles = ["out", "in"], axis = 1 : i64, keepDims = false} : (memref<3xi64>, memref<3x5xf32>) -> ()
  return
}
