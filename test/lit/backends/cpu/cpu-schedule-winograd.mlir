// glow-cpu-schedule runs a 3x3 stride-1 convolution with a constant filter as winograd_recipes' F(2x2, 3x3)
// vector code: the filter transformed at compile time (G g G^T: 16 positions x 32 input x 32 output channels),
// a kernel looping over the rows of 2x2 output tiles (4 of them on this 8x8 map), each a call of a row function
// on views of the 4 input rows and 2 output rows it touches. The row function keeps its scratch (V, the
// transformed inputs; M, the products) in allocas of its own (per call: the rows may run on any thread); per
// 16-channel input vector, in a loop over the tiles, it transforms each tile's 4x4 pixels with additions only
// (B^T d B) into V; per position it multiplies V's rows by the transformed filter in registers (4 tiles x 2
// vectors = 8 accumulators, no direct convolution left); then, in a loop over the tiles, A^T M A, the bias and
// the ReLU, stored once per pixel.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-LABEL: func.func private @__glow_winograd_row_
// CHECK-SAME:    (%[[X:.*]]: memref<4x10x32xf32, strided<[320, 32, 1], offset: ?>>, %[[U:.*]]: memref<16384xf32>, %[[B:.*]]: memref<32xf32>, %[[Y:.*]]: memref<2x8x32xf32, strided<[256, 32, 1], offset: ?>>)
// CHECK:         %[[V:.*]] = memref.alloca() {alignment = 64 : i64} : memref<16x4x32xf32>
// CHECK:         %[[M:.*]] = memref.alloca() {alignment = 64 : i64} : memref<16x4x32xf32>
// CHECK:         scf.for %[[CV:.*]] = %c0 to %c2 step %c1 {
// CHECK:           %[[C0:.*]] = arith.muli %[[CV]], %c16
// CHECK:           scf.for %[[P:.*]] = %c0 to %c4 step %c1 {
// CHECK-COUNT-16:    vector.load %[[X]]
// CHECK-NOT:         arith.mulf
// CHECK:             arith.subf
// CHECK-COUNT-16:    vector.store %{{.*}}, %[[V]][%{{.*}}, %[[P]], %[[C0]]]
// CHECK:           }
// CHECK:         }
// CHECK:         scf.for %[[XI:.*]] = %c0 to %c16 step %c1 {
// CHECK:           scf.for %[[C:.*]] = %c0 to %c32 step %c1 iter_args(
// CHECK:             vector.load %[[U]]
// CHECK:             vector.load %[[U]]
// CHECK:             memref.load %[[V]][%[[XI]], %c0, %[[C]]]
// CHECK-COUNT-8:     vector.fma
// CHECK:           }
// CHECK-COUNT-8:   vector.store %{{.*}}, %[[M]][%[[XI]]
// CHECK:         }
// CHECK:         %[[BIAS:.*]] = vector.load %[[B]]
// CHECK:         scf.for %[[Q:.*]] = %c0 to %c4 step %c1 {
// CHECK-COUNT-16:  vector.load %[[M]][%{{.*}}, %[[Q]], %c0]
// CHECK:           %[[S:.*]] = arith.addf %{{.*}}, %[[BIAS]] : vector<16xf32>
// CHECK-NEXT:      %[[C:.*]] = arith.cmpf uge, %[[S]]
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[C]], %[[S]]
// CHECK-NEXT:      vector.store %[[R]], %[[Y]][%c0, %{{.*}}, %c0]
// CHECK-NOT:   linalg.
// CHECK:       memref.global "private" constant @__glow_packed_winograd_32x32 : memref<16384xf32>
// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-SAME:    %[[XX:.*]]: memref<1x10x10x32xf32>, %[[YY:.*]]: memref<1x8x8x32xf32>, %[[UU:.*]]: memref<16384xf32>, %[[BB:.*]]: memref<32xf32>
// CHECK:         scf.for %[[ROW:.*]] = %c0 to %c4 step %c1 {
// CHECK:           %[[IN:.*]] = memref.subview %[[XX]]
// CHECK:           %[[OUT:.*]] = memref.subview %[[YY]]
// CHECK:           func.call @__glow_winograd_row_{{.*}}(%[[IN]], %[[UU]], %[[BB]], %[[OUT]])
// CHECK-NOT:     linalg.
// CHECK-LABEL: func.func @conv(
// CHECK:         call @__glow_kernel0

module {
  memref.global "private" constant @w : memref<3x3x32x32xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b : memref<32xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @conv(%arg0: memref<1x10x10x32xf32> {glow.name = "x"}, %arg1: memref<1x8x8x32xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w : memref<3x3x32x32xf32>
    %1 = memref.get_global @b : memref<32xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x8x8x32xf32>, memref<1x10x10x32xf32>, memref<3x3x32x32xf32>, memref<32xf32>) -> ()
    return
  }
}
