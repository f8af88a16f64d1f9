// glow-cpu-external-weights: constant globals of `size` bytes or more that the code reads become declarations, their
// values kept in the module's glow.weights (the runtime supplies the data); smaller ones, splats and globals
// nothing reads are not kept there.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-external-weights{size=16})' | FileCheck %s
// glow-to-llvm then lowers the declaration to an external LLVM global without data, its alignment kept.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-external-weights{size=16},glow-to-llvm)' | FileCheck %s --check-prefix=LLVM
// At the default size (16 KiB) nothing here is large enough.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-external-weights)' | FileCheck %s --check-prefix=SMALL

// CHECK: module attributes {glow.weights = {w = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>}}
// CHECK-NOT: @unused
// CHECK-DAG: memref.global "public" constant @w : memref<4xf32> {alignment = 64 : i64}
// CHECK-DAG: memref.global "private" constant @small : memref<2xf32> = dense<[5.000000e+00, 6.000000e+00]>
// CHECK-DAG: memref.global "private" constant @splat : memref<4xf32> = dense<1.000000e+00>
// LLVM: llvm.mlir.global external constant @w() {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<4 x f32>
// SMALL-NOT: glow.weights
// SMALL: memref.global "private" constant @w : memref<4xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>

memref.global "private" constant @w : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]> {alignment = 64 : i64}
memref.global "private" constant @small : memref<2xf32> = dense<[5.0, 6.0]>
memref.global "private" constant @splat : memref<4xf32> = dense<1.0>
memref.global "private" constant @unused : memref<4xf32> = dense<[7.0, 8.0, 9.0, 10.0]>

func.func @model(%x: memref<4xf32>, %y: memref<4xf32>, %z: memref<2xf32>) {
  %w = memref.get_global @w : memref<4xf32>
  %s = memref.get_global @small : memref<2xf32>
  %o = memref.get_global @splat : memref<4xf32>
  memref.copy %w, %x : memref<4xf32> to memref<4xf32>
  memref.copy %o, %y : memref<4xf32> to memref<4xf32>
  memref.copy %s, %z : memref<2xf32> to memref<2xf32>
  return
}
