// glow-to-llvm{profile=1} on code that glow-cpu-parallelize split across 2 threads: a parallel region of the entry
// (a loop of kernel calls, one per column tile) is timed whole, from the calling thread, as one site named after
// the kernel it calls, with what the region splits; a call of a kernel that splits its own loops is timed
// around the call (its fork and join included), with the kernel's splits. No clock is read inside a region.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-parallelize{threads=2},glow-to-llvm{profile=1})' | FileCheck %s

// CHECK: module attributes {glow.profile_kernels = {{\[\[}}"__glow_kernel0", "tiles"], ["__glow_kernel1", "rows"]], glow.profile_splits = {{\[\[}}{dims = ["d1 of 512x128"], trips = array<i64: 8>}], [{dims = ["d0 of 512x128", "d1 of 512x128"], trips = array<i64: 512, 8>}]]}
// CHECK-LABEL: llvm.func @model
// CHECK:         llvm.call @glow_profile_now()
// CHECK-NOT:     glow_profile_now
// CHECK:         omp.parallel
// CHECK-NOT:       glow_profile_now
// CHECK:           llvm.call @__glow_kernel0(
// CHECK-NOT:       glow_profile_now
// CHECK:           omp.terminator
// CHECK:         llvm.call @glow_profile_now()
// CHECK:         llvm.call @glow_profile_now()
// CHECK-NOT:     glow_profile_now
// CHECK:         llvm.call @__glow_kernel1(
// CHECK-NEXT:    llvm.call @glow_profile_now()

// A column tile's kernel: the loop of calls splits across the tiles and the kernel runs whole on one thread.
func.func private @__glow_kernel0(%x: memref<512x64xf32>, %y: memref<512x16xf32, strided<[128, 1], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  scf.for %i = %c0 to %c512 step %c1 {
    %init = arith.constant dense<0.0> : vector<16xf32>
    %acc = scf.for %k = %c0 to %c64 step %c1 iter_args(%s = %init) -> (vector<16xf32>) {
      %a = memref.load %x[%i, %k] : memref<512x64xf32>
      %av = vector.broadcast %a : f32 to vector<16xf32>
      %t = arith.addf %s, %av : vector<16xf32>
      scf.yield %t : vector<16xf32>
    }
    vector.store %acc, %y[%i, %c0] : memref<512x16xf32, strided<[128, 1], offset: ?>>, vector<16xf32>
  }
  return
}

// A bias add over 512 x 128 floats (512 KiB moved): it splits its own loops.
func.func private @__glow_kernel1(%x: memref<512x128xf32>, %bias: memref<128xf32>, %z: memref<512x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %c512 = arith.constant 512 : index
  scf.for %i = %c0 to %c512 step %c1 {
    scf.for %j = %c0 to %c128 step %c16 {
      %v = vector.load %x[%i, %j] : memref<512x128xf32>, vector<16xf32>
      %b = vector.load %bias[%j] : memref<128xf32>, vector<16xf32>
      %y = arith.addf %v, %b : vector<16xf32>
      vector.store %y, %z[%i, %j] : memref<512x128xf32>, vector<16xf32>
    }
  }
  return
}

func.func @model(%x: memref<512x64xf32>, %y: memref<512x128xf32>, %bias: memref<128xf32>, %z: memref<512x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %t = %c0 to %c8 step %c1 {
    %offset = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    %tile = memref.subview %y[0, %offset] [512, 16] [1, 1] : memref<512x128xf32> to memref<512x16xf32, strided<[128, 1], offset: ?>>
    func.call @__glow_kernel0(%x, %tile) : (memref<512x64xf32>, memref<512x16xf32, strided<[128, 1], offset: ?>>) -> () loc("tiles")
  }
  func.call @__glow_kernel1(%y, %bias, %z) : (memref<512x128xf32>, memref<128xf32>, memref<512x128xf32>) -> () loc("rows")
  return
}
