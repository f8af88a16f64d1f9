// glow-cpu-parallelize leaves a function marked glow.serial whole: a recipe's helper that its kernel calls once per
// iteration of the loop to split (winograd_recipes.py's row and block functions, their scratch private to each
// call), whose own loops a fork per call would not pay for. The same nest unmarked splits.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-parallelize{threads=2})' | FileCheck %s

// CHECK-LABEL: func.func private @__glow_helper(
// CHECK-SAME:    attributes {glow.serial}
// CHECK-NOT:     omp.parallel
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK-NOT:     omp.parallel
// CHECK:         return
// CHECK-LABEL: func.func private @__glow_kernel1(
// CHECK:         omp.parallel

func.func private @__glow_helper(%a: memref<64x128xf32>, %b: memref<128x64xf32>, %c: memref<64x64xf32>) attributes {glow.serial} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c64 step %c16 {
      %init = vector.load %c[%i, %j] : memref<64x64xf32>, vector<16xf32>
      %acc = scf.for %k = %c0 to %c128 step %c1 iter_args(%x = %init) -> (vector<16xf32>) {
        %s = memref.load %a[%i, %k] : memref<64x128xf32>
        %v = vector.load %b[%k, %j] : memref<128x64xf32>, vector<16xf32>
        %sv = vector.broadcast %s : f32 to vector<16xf32>
        %y = vector.fma %sv, %v, %x : vector<16xf32>
        scf.yield %y : vector<16xf32>
      }
      vector.store %acc, %c[%i, %j] : memref<64x64xf32>, vector<16xf32>
    }
  }
  return
}

func.func private @__glow_kernel1(%a: memref<64x128xf32>, %b: memref<128x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c64 step %c16 {
      %init = vector.load %c[%i, %j] : memref<64x64xf32>, vector<16xf32>
      %acc = scf.for %k = %c0 to %c128 step %c1 iter_args(%x = %init) -> (vector<16xf32>) {
        %s = memref.load %a[%i, %k] : memref<64x128xf32>
        %v = vector.load %b[%k, %j] : memref<128x64xf32>, vector<16xf32>
        %sv = vector.broadcast %s : f32 to vector<16xf32>
        %y = vector.fma %sv, %v, %x : vector<16xf32>
        scf.yield %y : vector<16xf32>
      }
      vector.store %acc, %c[%i, %j] : memref<64x64xf32>, vector<16xf32>
    }
  }
  return
}
