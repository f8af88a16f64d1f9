// glow-ir-to-linalg's det (codegen/math.py): each matrix is copied to a stack buffer, then per column the pivot
// is the largest magnitude on or below the diagonal (a search carrying the best value and row), its row swapped
// up, the determinant multiplied by the pivot (negated when the rows swapped), and the rows below eliminated
// unless the pivot is 0.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s

// CHECK-LABEL: func.func @det(
// CHECK:         %[[WORK:.*]] = memref.alloca() : memref<4x4xf32>
// CHECK:         scf.for %[[B:.*]] = %c0{{.*}} to %c3{{.*}}
// CHECK:           memref.store %{{.*}}, %[[WORK]]
// CHECK:           %[[DET:.*]] = scf.for %[[K:.*]] = %c0{{.*}} to %c4{{.*}} iter_args(%{{.*}} = %cst{{.*}}) -> (f32)
// CHECK:             scf.for %{{.*}} = %[[K]] to %c4{{.*}} iter_args(%{{.*}}, %{{.*}}) -> (f32, index)
// CHECK:               math.absf
// CHECK:               arith.cmpf ogt
// CHECK:             arith.cmpi ne
// CHECK:             arith.negf
// CHECK:             arith.cmpf one
// CHECK:             scf.if
// CHECK:               arith.divf
// CHECK:           memref.store %[[DET]], %arg1[%[[B]]] : memref<3xf32>
func.func @det(%x: memref<3x4x4xf32> {glow.name = "x"}, %y: memref<3xf32> {glow.name = "y", glow.output}) {
  "glow_ir.det"(%y, %x) {roles = ["out", "in"]} : (memref<3xf32>, memref<3x4x4xf32>) -> ()
  return
}
