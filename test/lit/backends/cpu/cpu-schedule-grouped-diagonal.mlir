// glow-cpu-schedule runs a grouped KxK convolution whose groups have 2, 4 or 8 input and output channels and fill
// whole registers (here 8 groups of 4: four per register, 3x3) by diagonals (grouped_narrow.DiagonalGroups): the
// filter packed vector-major as [vectors, KH, KW, FG, 16], diagonal r's lane (g, l) input channel l's weight for
// output channel (l - r) mod 4 of group g; each tile of 2 pixels keeps 4 accumulators per pixel (the bias in the
// first), and per filter row multiplies the input vectors as loaded (no shuffle) by each diagonal's 3 weight
// vectors; after the window each pixel's diagonals 1-3 are rotated within the groups (lane (g, o) takes lane
// (g, (o + r) mod 4)) and added to diagonal 0, then the ReLU and the store. The loop nest is blocks of rows (here
// one: all 4 rows of 4 pixels, the block holding at least 28 pixels), channel vectors, rows, tiles.
// cpu-schedule-grouped-narrow.mlir has the 1x1 case, which shuffles its inputs instead.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK: memref.global "private" constant @__glow_packed_diagonal_gconv_2x3x3x4 : memref<2x3x3x4x16xf32>
// CHECK-NOT: __glow_packed_narrow_gconv
// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-SAME:    %[[B:.*]]: memref<32xf32>, %[[X:.*]]: memref<1x6x6x32xf32>, %[[W:.*]]: memref<2x3x3x4x16xf32>, %[[Y:.*]]: memref<1x4x4x32xf32>
// CHECK:         scf.for %[[V:.*]] = %c0 to %c2 step %c1 {
// CHECK:           %[[C:.*]] = arith.muli %[[V]], %c16
// CHECK:           scf.for %[[ROW:.*]] = %c0 to %c4 step %c1 {
// CHECK:             scf.for %[[X0:.*]] = %c0 to %c4 step %c2 {
// CHECK:               %[[START:.*]] = vector.load %[[B]][%[[C]]]
// CHECK:               scf.for %[[KH:.*]] = %c0 to %c3 step %c1 iter_args(%{{.*}} = %[[START]], %{{.*}} = %cst, %{{.*}} = %cst, %{{.*}} = %cst, %{{.*}} = %[[START]], %{{.*}} = %cst, %{{.*}} = %cst, %{{.*}} = %cst)
// CHECK:                 %[[IN:.*]] = vector.load %[[X]][%{{.*}}, %{{.*}}, %[[X0]], %[[C]]]
// CHECK-COUNT-3:         vector.load %[[X]]
// CHECK:                 %[[D0:.*]] = vector.load %[[W]][%[[V]], %[[KH]], %c0, %c0, %c0]
// CHECK-COUNT-2:         vector.load %[[W]][%[[V]], %[[KH]], %c{{[12]}}, %c0, %c0]
// CHECK:                 vector.fma %[[IN]], %[[D0]], %{{.*}} : vector<16xf32>
// CHECK-NOT:             vector.shuffle
// CHECK:                 vector.load %[[W]][%[[V]], %[[KH]], %c0, %c3, %c0]
// CHECK:                 scf.yield
// CHECK:               }
// CHECK:               vector.shuffle %{{.*}}#1, %{{.*}}#1 [1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12]
// CHECK:               arith.addf %{{.*}}#0
// CHECK:               vector.shuffle %{{.*}}#2, %{{.*}}#2 [2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13]
// CHECK:               vector.shuffle %{{.*}}#3, %{{.*}}#3 [3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14]
// CHECK:               %[[R:.*]] = arith.select
// CHECK-NEXT:          vector.store %[[R]], %[[Y]]
// CHECK-NOT:   linalg.
// CHECK-LABEL: func.func @grouped(
// CHECK:         %[[PACKED:.*]] = memref.get_global @__glow_packed_diagonal_gconv_2x3x3x4
// CHECK:         call @__glow_kernel0(%{{.*}}, %arg0, %[[PACKED]], %arg1)
// CHECK-NOT:     linalg.
// CHECK:         return

module {
  memref.global "private" constant @w : memref<3x3x4x32xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b : memref<32xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @grouped(%arg0: memref<1x6x6x32xf32> {glow.name = "x"}, %arg1: memref<1x4x4x32xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w : memref<3x3x4x32xf32>
    %1 = memref.get_global @b : memref<32xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 8 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x4x4x32xf32>, memref<1x6x6x32xf32>, memref<3x3x4x32xf32>, memref<32xf32>) -> ()
    return
  }
}
