// glow-cpu-schedule outlines the vector loop nests a lowering wrote itself into the entry function (the int8
// kernels, a quantization's pass): each becomes a private function called in its place, and two that print
// alike share one (a repeated block compiles once). A scalar loop stays in the entry, where LLVM unrolls it,
// as does a loop with results.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-schedule)' | FileCheck %s

// CHECK:       func.func private @__glow_loops_f_0(%[[A:.*]]: memref<64xf32>, %[[B:.*]]: memref<64xf32>)
// CHECK:         scf.for
// CHECK:           vector.load %[[A]]
// CHECK:           vector.store {{.*}}, %[[B]]
// CHECK-NOT:   func.func private @__glow_loops_f_1
// CHECK-LABEL: func.func @f(
// CHECK-SAME:    %[[X:[^:]*]]: memref<64xf32>, %[[Y:[^:]*]]: memref<64xf32>, %[[Z:[^:]*]]: memref<64xf32>
// CHECK:         call @__glow_loops_f_0(%[[X]], %[[Y]])
// CHECK:         call @__glow_loops_f_0(%[[X]], %[[Z]])
// CHECK:         scf.for
// CHECK:           memref.load
// CHECK:         scf.for {{.*}} iter_args
// CHECK:         return
func.func @f(%x: memref<64xf32>, %y: memref<64xf32>, %z: memref<64xf32>, %s: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %twice = arith.constant dense<2.0> : vector<16xf32>
  scf.for %i = %c0 to %c64 step %c16 {
    %v = vector.load %x[%i] : memref<64xf32>, vector<16xf32>
    %w = arith.mulf %v, %twice : vector<16xf32>
    vector.store %w, %y[%i] : memref<64xf32>, vector<16xf32>
  }
  scf.for %i = %c0 to %c64 step %c16 {
    %v = vector.load %x[%i] : memref<64xf32>, vector<16xf32>
    %w = arith.mulf %v, %twice : vector<16xf32>
    vector.store %w, %z[%i] : memref<64xf32>, vector<16xf32>
  }
  scf.for %i = %c0 to %c64 step %c1 {
    %v = memref.load %x[%i] : memref<64xf32>
    memref.store %v, %z[%i] : memref<64xf32>
  }
  %sum = scf.for %i = %c0 to %c64 step %c16 iter_args(%acc = %zero) -> (f32) {
    %v = vector.load %x[%i] : memref<64xf32>, vector<16xf32>
    %r = vector.reduction <add>, %v, %acc : vector<16xf32> into f32
    scf.yield %r : f32
  }
  memref.store %sum, %s[%c0] : memref<1xf32>
  return
}
