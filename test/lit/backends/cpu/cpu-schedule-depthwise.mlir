// glow-ir-to-linalg lowers a depthwise CPU convolution to linalg.depthwise_conv_2d_nhwc_hwc between its marked
// bias and activation; glow-cpu-schedule replaces all three with one vector kernel (depthwise_recipes.py) whose
// register tiles start from the bias and clamp before their one store.
// @banded (14x14x88, in L2; its filter an argument: a constant one would run as phased flat rows,
// cpu-schedule-depthwise-phased.mlir): one band of all 14 rows; blocks of 32 channels (two registers, the 3x3 filter's 18
// vectors loaded once per tile of 2 rows, outside the loop of 2 x 2 pixel tiles), then a block of one whole
// register at channel 64 and one of 8 lanes at channel 80 (tiles of 3 x 5 pixels: one register each).
// @large_map (56x56x96, 2.4 MB of input and output, a 3-row window of 67 KB): bands of 21 rows (the last one of
// 14), in each the channel blocks one after the other down the band's tiles of rows.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s --check-prefix=LINALG
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// LINALG-LABEL: func.func @banded(
// LINALG:         linalg.generic {{.*}} attrs = {glow.conv_bias}
// LINALG:         linalg.depthwise_conv_2d_nhwc_hwc
// LINALG:         linalg.generic {{.*}} attrs = {glow.conv_activation}

// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-SAME:    %[[W:.*]]: memref<3x3x88xf32>, %[[B:.*]]: memref<88xf32>, %[[X:.*]]: memref<1x16x16x88xf32>, %[[Y:.*]]: memref<1x14x14x88xf32>
// CHECK:         scf.for %[[C:.*]] = %c0 to %c64 step %c32 {
// CHECK:           scf.for %[[R:.*]] = %c0 to %c14 step %c2 {
// CHECK:             vector.load %[[W]][%c0, %c0, %[[C]]] : memref<3x3x88xf32>, vector<16xf32>
// CHECK:             vector.load %[[B]][%[[C]]]
// CHECK:             scf.for %[[P:.*]] = %c0 to %c14 step %c2 {
// CHECK:               vector.load %[[X]][%c0, %[[R]], %[[P]], %[[C]]]
// CHECK:               vector.fma {{.*}} : vector<16xf32>
// CHECK:               arith.cmpf uge
// CHECK:               arith.cmpf ule
// CHECK:               vector.store {{.*}}, %[[Y]][%c0, %[[R]], %[[P]], %[[C]]]
// CHECK:         scf.for %{{.*}} = %c0 to %c12 step %c3 {
// CHECK:         vector.load %[[W]][%c0, %c0, %c64] : memref<3x3x88xf32>, vector<16xf32>
// CHECK:         vector.load %[[W]][%c0, %c0, %c80] : memref<3x3x88xf32>, vector<8xf32>
// CHECK:         vector.store {{.*}}, %[[Y]][{{.*}}, %c80] : memref<1x14x14x88xf32>, vector<8xf32>
// CHECK-NOT:   linalg.
// CHECK-LABEL: func.func @banded(
// CHECK:         call @__glow_kernel0(
// CHECK-NEXT:    return

// CHECK-LABEL: func.func private @__glow_kernel1(
// CHECK-SAME:    %[[W:.*]]: memref<3x3x96xf32>, %[[B:.*]]: memref<96xf32>, %[[X:.*]]: memref<1x58x58x96xf32>, %[[Y:.*]]: memref<1x56x56x96xf32>
// CHECK:         scf.for %[[BAND:.*]] = %c0 to %c42 step %c21 {
// CHECK:           scf.for %[[C:.*]] = %c0 to %c96 step %c32 {
// CHECK:             scf.for %{{.*}} = %c0 to %c20 step %c2 {
// CHECK:               vector.load %[[W]][%c0, %c0, %[[C]]] : memref<3x3x96xf32>, vector<16xf32>
// CHECK:               scf.for %{{.*}} = %c0 to %c56 step %c2 {
// CHECK:                 vector.fma {{.*}} : vector<16xf32>
// CHECK:         scf.for %{{.*}} = %c0 to %c96 step %c32 {
// CHECK:           scf.for %{{.*}} = %c0 to %c14 step %c2 {
// CHECK-NOT:   linalg.
// CHECK-LABEL: func.func @large_map(
// CHECK:         call @__glow_kernel1(
// CHECK-NEXT:    return
// @large_window (5x5 over 14x14x32: a filter read by the tile): tiles of 2 rows x 7 pixels, whose filter rows are
// a loop carrying the 14 accumulators, loading that filter row's 5 vectors and each input row once.
// CHECK-LABEL: func.func private @__glow_kernel2(
// CHECK-SAME:    %[[B:.*]]: memref<32xf32>, %[[W:.*]]: memref<5x5x32xf32>, %[[X:.*]]: memref<1x18x18x32xf32>, %[[Y:.*]]: memref<1x14x14x32xf32>
// CHECK:         scf.for %[[C:.*]] = %c0 to %c32 step %c16 {
// CHECK:           scf.for %[[R:.*]] = %c0 to %c14 step %c2 {
// CHECK:             %[[START:.*]] = vector.load %[[B]][%[[C]]]
// CHECK:             scf.for %[[P:.*]] = %c0 to %c14 step %c7 {
// CHECK:               scf.for %[[I:.*]] = %c0 to %c5 step %c1 iter_args(%{{.*}} = %[[START]], {{.*}}) -> (vector<16xf32>, {{.*}}) {
// CHECK:                 vector.load %[[W]][%[[I]], %c0, %[[C]]] : memref<5x5x32xf32>, vector<16xf32>
// CHECK:                 vector.load %[[W]][%[[I]], %c4, %[[C]]]
// CHECK:                 %[[IN:.*]] = arith.addi %[[R]], %[[I]]
// CHECK:                 vector.load %[[X]][%c0, %[[IN]], %[[P]], %[[C]]]
// CHECK-COUNT-70:        vector.fma
// CHECK-NOT:             vector.fma
// CHECK:                 scf.yield
// CHECK-COUNT-14:      arith.cmpf uge
// CHECK-LABEL: func.func @large_window(
// CHECK:         call @__glow_kernel2(
// @strided (3x3 stride 2 over 29x29x96): blocks of one register, not two: a loaded vector feeds fewer outputs
// of a strided window, and one register's tiles (3 rows x 5 pixels) reuse each more than two registers' 2 x 2.
// CHECK-LABEL: func.func private @__glow_kernel3(
// CHECK-SAME:    memref<1x29x29x96xf32>
// CHECK:         scf.for %{{.*}} = %c0 to %c96 step %c16 {
// CHECK:           scf.for %{{.*}} = %c0 to %c12 step %c3 {
// @strided_aliased (512 channels: a block's vectors along a row fall into 2 of L1's sets): blocks of two
// registers, whose pixels span twice the sets, in 2 x 2 tiles.
// CHECK-LABEL: func.func private @__glow_kernel4(
// CHECK-SAME:    memref<1x15x15x512xf32>
// CHECK:         scf.for %{{.*}} = %c0 to %c512 step %c32 {
// CHECK:           scf.for %{{.*}} = %c0 to %c6 step %c2 {
// @streamed (56x56x800: a 3-row window of 186 KB per row, no band of one output row within BAND_BYTES): tiles of
// 2 rows, tiles of 2 pixels, and innermost the channel blocks, their filter vectors loaded with each tile.
// CHECK-LABEL: func.func private @__glow_kernel5(
// CHECK-SAME:    %[[W:.*]]: memref<3x3x800xf32>, %[[B:.*]]: memref<800xf32>, %[[X:.*]]: memref<1x58x58x800xf32>, %[[Y:.*]]: memref<1x56x56x800xf32>
// CHECK:         scf.for %[[R:.*]] = %c0 to %c56 step %c2 {
// CHECK:           scf.for %[[P:.*]] = %c0 to %c56 step %c2 {
// CHECK:             scf.for %[[C:.*]] = %c0 to %c800 step %c32 {
// CHECK:               vector.load %[[W]][%c0, %c0, %[[C]]] : memref<3x3x800xf32>, vector<16xf32>
// CHECK:               vector.fma {{.*}} : vector<16xf32>
// CHECK:               arith.cmpf uge
// CHECK:               vector.store {{.*}}, %[[Y]][%c0, %[[R]], %[[P]], %[[C]]]
// CHECK-NOT:   linalg.
// CHECK-LABEL: func.func @streamed(
// CHECK:         call @__glow_kernel5(
// CHECK-NEXT:    return

module {
  memref.global "private" constant @b88 : memref<88xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  memref.global "private" constant @w5 : memref<5x5x1x32xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b5 : memref<32xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  memref.global "private" constant @w96 : memref<3x3x1x96xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b96 : memref<96xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @banded(%arg0: memref<1x16x16x88xf32> {glow.name = "x"}, %arg1: memref<1x14x14x88xf32> {glow.name = "y", glow.output}, %w: memref<3x3x1x88xf32> {glow.name = "w"}) {
    %1 = memref.get_global @b88 : memref<88xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %w, %1) {activation = "clip", activationArgs = array<f32: 0.0, 6.0>, dilation = array<i64: 1, 1>, group = 88 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x14x14x88xf32>, memref<1x16x16x88xf32>, memref<3x3x1x88xf32>, memref<88xf32>) -> ()
    return
  }
  func.func @large_map(%arg0: memref<1x58x58x96xf32> {glow.name = "x"}, %arg1: memref<1x56x56x96xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w96 : memref<3x3x1x96xf32>
    %1 = memref.get_global @b96 : memref<96xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 96 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x56x56x96xf32>, memref<1x58x58x96xf32>, memref<3x3x1x96xf32>, memref<96xf32>) -> ()
    return
  }
  func.func @large_window(%arg0: memref<1x18x18x32xf32> {glow.name = "x"}, %arg1: memref<1x14x14x32xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w5 : memref<5x5x1x32xf32>
    %1 = memref.get_global @b5 : memref<32xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 32 : i64, kernels = array<i64: 5, 5>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x14x14x32xf32>, memref<1x18x18x32xf32>, memref<5x5x1x32xf32>, memref<32xf32>) -> ()
    return
  }
  func.func @strided(%arg0: memref<1x29x29x96xf32> {glow.name = "x"}, %arg1: memref<1x14x14x96xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w96 : memref<3x3x1x96xf32>
    %1 = memref.get_global @b96 : memref<96xf32>
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %0, %1) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 96 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 2, 2>} : (memref<1x14x14x96xf32>, memref<1x29x29x96xf32>, memref<3x3x1x96xf32>, memref<96xf32>) -> ()
    return
  }
  func.func @strided_aliased(%arg0: memref<1x15x15x512xf32> {glow.name = "x"}, %arg1: memref<1x7x7x512xf32> {glow.name = "y", glow.output}, %w: memref<3x3x1x512xf32> {glow.name = "w"}, %b: memref<512xf32> {glow.name = "b"}) {
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %w, %b) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 512 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 2, 2>} : (memref<1x7x7x512xf32>, memref<1x15x15x512xf32>, memref<3x3x1x512xf32>, memref<512xf32>) -> ()
    return
  }
  func.func @streamed(%arg0: memref<1x58x58x800xf32> {glow.name = "x"}, %arg1: memref<1x56x56x800xf32> {glow.name = "y", glow.output}, %w: memref<3x3x1x800xf32> {glow.name = "w"}, %b: memref<800xf32> {glow.name = "b"}) {
    "glow_ir.cpu_conv_nhwc"(%arg1, %arg0, %w, %b) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 800 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x56x56x800xf32>, memref<1x58x58x800xf32>, memref<3x3x1x800xf32>, memref<800xf32>) -> ()
    return
  }
}
