// glow-cpu-layout moves NCHW convolutions and pools to the CPU backend's NHWC ops between transposes; the
// constant filter is transposed to [KH, KW, C / group, O] at compile time. glow-sink-transpose then cancels
// the transposes between layers, and glow-lower expands the pads in NHWC.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-layout,glow-verify)' | FileCheck %s --check-prefix=LAYOUT
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-layout,glow-sink-transpose,glow-lower,glow-verify)' | FileCheck %s --check-prefix=SUNK

// LAYOUT-LABEL: func.func @conv_relu_conv
// LAYOUT-NOT: glow.convolution
// LAYOUT: %[[B1:.*]] = "glow.splat"() {value = 5.000000e-01 : f32} : () -> tensor<2xf32>
// LAYOUT: %[[X:.*]] = "glow.transpose"(%arg0) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x3xf32>
// LAYOUT: %[[W1:.*]] = "glow.constant"() {value = dense<{{\[\[\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]]]> : tensor<1x1x3x2xf32>}
// LAYOUT: %[[C1:.*]] = "glow.cpu_conv_nhwc"(%[[X]], %[[W1]], %[[B1]]) {activation = "none", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x8x3xf32>, tensor<1x1x3x2xf32>, tensor<2xf32>) -> tensor<1x8x8x2xf32>
// LAYOUT: %[[BACK:.*]] = "glow.transpose"(%[[C1]]) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x8x8x2xf32>) -> tensor<1x2x8x8xf32>
// LAYOUT: %[[R:.*]] = "glow.relu"(%[[BACK]])
// LAYOUT: %[[FWD:.*]] = "glow.transpose"(%[[R]]) {shuffle = array<i64: 0, 2, 3, 1>}
// LAYOUT: "glow.cpu_max_pool_nhwc"(%[[FWD]]) {kernels = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x8x2xf32>) -> tensor<1x4x4x2xf32>
// LAYOUT: "glow.constant"() {value = dense<1.000000e+00> : tensor<3x3x2x4xf32>}
// LAYOUT: "glow.cpu_conv_nhwc"
// LAYOUT-SAME: pads = array<i64: 1, 1, 1, 1>
// LAYOUT-SAME: -> tensor<1x4x4x4xf32>
// LAYOUT: %[[Y:.*]] = "glow.transpose"
// LAYOUT: return %[[Y]]

// After sinking only the transposes at the boundary are left; pads are NHWC insert_tensors.
// SUNK-LABEL: func.func @conv_relu_conv
// SUNK: "glow.transpose"(%arg0) {shuffle = array<i64: 0, 2, 3, 1>}
// SUNK-NOT: "glow.transpose"
// SUNK: %[[C1:.*]] = "glow.cpu_conv_nhwc"
// SUNK: %[[ZERO:.*]] = "glow.splat"() {value = 0.000000e+00 : f32} : () -> tensor<1x8x8x2xf32>
// SUNK: %[[R:.*]] = "glow.max"(%[[C1]], %[[ZERO]]) : (tensor<1x8x8x2xf32>, tensor<1x8x8x2xf32>) -> tensor<1x8x8x2xf32>
// SUNK: %[[NEG:.*]] = "glow.splat"() {value = 0xFF800000 : f32} : () -> tensor<1x10x10x2xf32>
// SUNK: %[[PADDED:.*]] = "glow.insert_tensor"(%[[NEG]], %[[R]]) {start = array<i64: 0, 1, 1, 0>}
// SUNK: %[[P:.*]] = "glow.cpu_max_pool_nhwc"(%[[PADDED]]) {kernels = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x10x10x2xf32>) -> tensor<1x4x4x2xf32>
// SUNK-NOT: "glow.transpose"
// SUNK: "glow.insert_tensor"(%{{.*}}, %[[P]]) {start = array<i64: 0, 1, 1, 0>} : (tensor<1x6x6x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x6x6x2xf32>
// SUNK: %[[C2:.*]] = "glow.cpu_conv_nhwc"
// SUNK-SAME: pads = array<i64: 0, 0, 0, 0>
// SUNK: %[[Y:.*]] = "glow.transpose"(%[[C2]]) {shuffle = array<i64: 0, 3, 1, 2>}
// SUNK: return %[[Y]]
func.func @conv_relu_conv(%x: tensor<1x3x8x8xf32> {glow.name = "x"}) -> (tensor<1x4x4x4xf32> {glow.name = "y"}) {
  %w1 = "glow.constant"() {value = dense<[[[[1.0]], [[2.0]], [[3.0]]], [[[4.0]], [[5.0]], [[6.0]]]]> : tensor<2x3x1x1xf32>} : () -> tensor<2x3x1x1xf32> loc("w1")
  %b1 = "glow.splat"() {value = 0.5 : f32} : () -> tensor<2xf32> loc("b1")
  %c1 = "glow.convolution"(%x, %w1, %b1) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<2x3x1x1xf32>, tensor<2xf32>) -> tensor<1x2x8x8xf32> loc("conv1")
  %r = "glow.relu"(%c1) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> loc("relu")
  %p = "glow.max_pool"(%r) {kernels = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32> loc("pool")
  %w2 = "glow.splat"() {value = 1.0 : f32} : () -> tensor<4x2x3x3xf32> loc("w2")
  %b2 = "glow.splat"() {value = 0.0 : f32} : () -> tensor<4xf32> loc("b2")
  %c2 = "glow.convolution"(%p, %w2, %b2) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32> loc("conv2")
  return %c2 : tensor<1x4x4x4xf32>
}

// A filter computed at run time is transposed in the graph; grouping and the avg_pool's attributes carry over.
// LAYOUT-LABEL: func.func @runtime_filter
// LAYOUT: %[[W:.*]] = "glow.transpose"(%arg1) {shuffle = array<i64: 2, 3, 1, 0>} : (tensor<4x2x3x3xf32>) -> tensor<3x3x2x4xf32>
// LAYOUT: "glow.cpu_conv_nhwc"(%{{.*}}, %[[W]], %arg2)
// LAYOUT-SAME: dilation = array<i64: 2, 2>, group = 2 : i64
// LAYOUT-SAME: (tensor<1x9x9x4xf32>, tensor<3x3x2x4xf32>, tensor<4xf32>) -> tensor<1x5x5x4xf32>
// LAYOUT: "glow.cpu_avg_pool_nhwc"(%{{.*}}) {countIncludePads = false, kernels = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x5x5x4xf32>) -> tensor<1x3x3x4xf32>
func.func @runtime_filter(%x: tensor<1x4x9x9xf32> {glow.name = "x"}, %w: tensor<4x2x3x3xf32> {glow.name = "w"}, %b: tensor<4xf32> {glow.name = "b"}) -> (tensor<1x4x3x3xf32> {glow.name = "y"}) {
  %c = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64, dilation = array<i64: 2, 2>} : (tensor<1x4x9x9xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32> loc("conv")
  %p = "glow.avg_pool"(%c) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, countIncludePads = false} : (tensor<1x4x5x5xf32>) -> tensor<1x4x3x3xf32> loc("pool")
  return %p : tensor<1x4x3x3xf32>
}

// A transposed convolution becomes one NHWC convolution of its stride-2 phases and their interleave: the 4x4
// filter (w[kh, kw] = 4 kh + kw) as 2x2 phase taps read in reverse, phase (py, px) in output channel 2 py + px
// (tap (u, v) of phase (py, px) is w[2 (1 - u) + py, 2 (1 - v) + px]); the bias repeated per phase; the input
// padded by one; the phases interleaved by one transpose; the pad of one cropped by a slice.
// LAYOUT-LABEL: func.func @conv_transpose
// LAYOUT-NOT: glow.conv_transpose
// LAYOUT-DAG: %[[W:.*]] = "glow.constant"() {value = dense<{{\[\[\[\[}}1.000000e+01, 1.100000e+01, 1.400000e+01, 1.500000e+01]], {{\[\[}}8.000000e+00, 9.000000e+00, 1.200000e+01, 1.300000e+01]]], {{\[\[\[}}2.000000e+00, 3.000000e+00, 6.000000e+00, 7.000000e+00]], {{\[\[}}0.000000e+00, 1.000000e+00, 4.000000e+00, 5.000000e+00]]]]> : tensor<2x2x1x4xf32>}
// LAYOUT-DAG: %[[B:.*]] = "glow.constant"() {value = dense<5.000000e-01> : tensor<4xf32>}
// LAYOUT-DAG: %[[X:.*]] = "glow.transpose"(%arg0) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x1x3x3xf32>) -> tensor<1x3x3x1xf32>
// LAYOUT: %[[C:.*]] = "glow.cpu_conv_nhwc"(%[[X]], %[[W]], %[[B]]) {activation = "none", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x3x1xf32>, tensor<2x2x1x4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
// LAYOUT: %[[R1:.*]] = "glow.reshape"(%[[C]]) {dims = array<i64: 1, 4, 4, 2, 2, 1>}
// LAYOUT: %[[T:.*]] = "glow.transpose"(%[[R1]]) {shuffle = array<i64: 0, 1, 3, 2, 4, 5>} : (tensor<1x4x4x2x2x1xf32>) -> tensor<1x4x2x4x2x1xf32>
// LAYOUT: %[[R2:.*]] = "glow.reshape"(%[[T]]) {dims = array<i64: 1, 8, 8, 1>}
// LAYOUT: %[[S:.*]] = "glow.slice"(%[[R2]]) {start = array<i64: 0, 1, 1, 0>} : (tensor<1x8x8x1xf32>) -> tensor<1x6x6x1xf32>
// LAYOUT: %[[Y:.*]] = "glow.transpose"(%[[S]]) {shuffle = array<i64: 0, 3, 1, 2>}
// LAYOUT: return %[[Y]]
func.func @conv_transpose(%x: tensor<1x1x3x3xf32> {glow.name = "x"}) -> (tensor<1x1x6x6xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<[[[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]]]> : tensor<1x1x4x4xf32>} : () -> tensor<1x1x4x4xf32>
  %b = "glow.constant"() {value = dense<0.5> : tensor<1xf32>} : () -> tensor<1xf32>
  %y = "glow.conv_transpose"(%x, %w, %b) {kernels = array<i64: 4, 4>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<1x1x4x4xf32>, tensor<1xf32>) -> tensor<1x1x6x6xf32>
  return %y : tensor<1x1x6x6xf32>
}

// A run-time filter is rearranged by a gather of its flattened elements with a zero after them (the taps a
// phase lacks); with 2 groups the phases interleave by group too, [N, MH, MW, G, SH, SW, O] ->
// [N, MH, SH, MW, SW, G, O]. Each group has one input channel, so the phases' convolution is depthwise with 6
// filters per channel: it reads its channels repeated (a gather along them) as a depthwise one of 12.
// LAYOUT-LABEL: func.func @conv_transpose_runtime_filter
// LAYOUT: %[[FLAT:.*]] = "glow.reshape"(%arg1) {dims = array<i64: 12>}
// LAYOUT: %[[PADDED:.*]] = "glow.insert_tensor"(%{{.*}}, %[[FLAT]]) {start = array<i64: 0>} : (tensor<13xf32>, tensor<12xf32>) -> tensor<13xf32>
// LAYOUT: %[[G:.*]] = "glow.gather"(%[[PADDED]], %{{.*}}) {axis = 0 : i64} : (tensor<13xf32>, tensor<12x1x1x1xi64>) -> tensor<12x1x1x1xf32>
// LAYOUT: %[[W:.*]] = "glow.transpose"(%[[G]]) {shuffle = array<i64: 2, 3, 1, 0>}
// LAYOUT: %[[X:.*]] = "glow.gather"(%{{.*}}, %{{.*}}) {axis = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<12xi64>) -> tensor<1x2x2x12xf32>
// LAYOUT: "glow.cpu_conv_nhwc"(%[[X]], %[[W]], %{{.*}}) {{.*}}group = 12 : i64, kernels = array<i64: 1, 1>
// LAYOUT: "glow.transpose"(%{{.*}}) {shuffle = array<i64: 0, 1, 4, 2, 5, 3, 6>} : (tensor<1x2x2x2x2x1x3xf32>) -> tensor<1x2x2x2x1x2x3xf32>
func.func @conv_transpose_runtime_filter(%x: tensor<1x2x2x2xf32> {glow.name = "x"}, %w: tensor<2x3x2x1xf32> {glow.name = "w"}) -> (tensor<1x6x4x2xf32> {glow.name = "y"}) {
  %b = "glow.constant"() {value = dense<0.0> : tensor<6xf32>} : () -> tensor<6xf32>
  %y = "glow.conv_transpose"(%x, %w, %b) {kernels = array<i64: 2, 1>, strides = array<i64: 2, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64, dilation = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x3x2x1xf32>, tensor<6xf32>) -> tensor<1x6x4x2xf32>
  return %y : tensor<1x6x4x2xf32>
}

// A dilated convolution on a map not much larger than its reach: rate 12 on 16x16 reads the input with taps
// {1, 2} for outputs 0-3, {1} for 4-11, {0, 1} for 12-15 along each dim, a quarter of its multiply-adds. Split
// into the 3 x 3 regions of outputs sharing their live taps, each an unpadded NHWC convolution of the input
// block it reads with those taps, concatenated along W, then H.
// LAYOUT-LABEL: func.func @aspp_regions
// LAYOUT-NOT: glow.convolution
// LAYOUT: "glow.cpu_conv_nhwc"({{.*}}kernels = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>{{.*}} -> tensor<1x4x4x16xf32>
// LAYOUT: "glow.cpu_conv_nhwc"({{.*}}kernels = array<i64: 2, 1>, pads = array<i64: 0, 0, 0, 0>{{.*}} -> tensor<1x4x8x16xf32>
// LAYOUT: "glow.cpu_conv_nhwc"({{.*}}kernels = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>{{.*}} -> tensor<1x4x4x16xf32>
// LAYOUT: "glow.concat"({{.*}}) {dim = 2 : i64
// LAYOUT: %[[CENTRE_IN:.*]] = "glow.slice"(%{{.*}}) {start = array<i64: 0, 4, 4, 0>} : (tensor<1x16x16x2xf32>) -> tensor<1x8x8x2xf32>
// LAYOUT: "glow.cpu_conv_nhwc"(%[[CENTRE_IN]], {{.*}}kernels = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>{{.*}} -> tensor<1x8x8x16xf32>
// LAYOUT-COUNT-4: "glow.cpu_conv_nhwc"
// LAYOUT: "glow.concat"({{.*}}) {dim = 1 : i64
// LAYOUT: "glow.transpose"({{.*}}) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
func.func @aspp_regions(%x: tensor<1x2x16x16xf32> {glow.name = "x"}) -> (tensor<1x16x16x16xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<16x2x3x3xf32>} : () -> tensor<16x2x3x3xf32>
  %b = "glow.constant"() {value = dense<0.5> : tensor<16xf32>} : () -> tensor<16xf32>
  %y = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 12, 12, 12, 12>, group = 1 : i64, dilation = array<i64: 12, 12>} : (tensor<1x2x16x16xf32>, tensor<16x2x3x3xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32>
  return %y : tensor<1x16x16x16xf32>
}

// Rate 4 on 16x16 saves only 31 % (runs of 4, 8, 4 outputs with 2, 3, 2 taps): one convolution.
// LAYOUT-LABEL: func.func @rate4_whole
// LAYOUT-COUNT-1: "glow.cpu_conv_nhwc"
// LAYOUT-NOT: "glow.cpu_conv_nhwc"
// LAYOUT: return
func.func @rate4_whole(%x: tensor<1x2x16x16xf32> {glow.name = "x"}) -> (tensor<1x16x16x16xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<16x2x3x3xf32>} : () -> tensor<16x2x3x3xf32>
  %b = "glow.constant"() {value = dense<0.5> : tensor<16xf32>} : () -> tensor<16xf32>
  %y = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 4, 4, 4, 4>, group = 1 : i64, dilation = array<i64: 4, 4>} : (tensor<1x2x16x16xf32>, tensor<16x2x3x3xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32>
  return %y : tensor<1x16x16x16xf32>
}

// With 16 outputs (no lanes to spare), the 4x4 / stride-2 / pad-1 layer is one convolution per output phase:
// each computes the 3x3 outputs the crop keeps (the combined form 4x4 per phase), output phase 0 from input
// phase 1 padded before, phase 1 from input phase 0 padded after; concatenated and interleaved, no slice.
// LAYOUT-LABEL: func.func @conv_transpose_per_phase
// LAYOUT: "glow.cpu_conv_nhwc"({{.*}}kernels = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>{{.*}} -> tensor<1x3x3x16xf32>
// LAYOUT: "glow.cpu_conv_nhwc"({{.*}}kernels = array<i64: 2, 2>, pads = array<i64: 1, 0, 0, 1>{{.*}} -> tensor<1x3x3x16xf32>
// LAYOUT: "glow.cpu_conv_nhwc"({{.*}}kernels = array<i64: 2, 2>, pads = array<i64: 0, 1, 1, 0>{{.*}} -> tensor<1x3x3x16xf32>
// LAYOUT: "glow.cpu_conv_nhwc"({{.*}}kernels = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>{{.*}} -> tensor<1x3x3x16xf32>
// LAYOUT: %[[C:.*]] = "glow.concat"({{.*}}) {dim = 3 : i64
// LAYOUT: %[[R:.*]] = "glow.reshape"(%[[C]]) {dims = array<i64: 1, 3, 3, 2, 2, 16>}
// LAYOUT: "glow.transpose"(%[[R]]) {shuffle = array<i64: 0, 1, 3, 2, 4, 5>}
// LAYOUT-NOT: glow.slice
// LAYOUT: return
func.func @conv_transpose_per_phase(%x: tensor<1x1x3x3xf32> {glow.name = "x"}) -> (tensor<1x16x6x6xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<1x16x4x4xf32>} : () -> tensor<1x16x4x4xf32>
  %b = "glow.constant"() {value = dense<0.5> : tensor<16xf32>} : () -> tensor<16xf32>
  %y = "glow.conv_transpose"(%x, %w, %b) {kernels = array<i64: 4, 4>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<1x16x4x4xf32>, tensor<16xf32>) -> tensor<1x16x6x6xf32>
  return %y : tensor<1x16x6x6xf32>
}

// Fewer output channels than a vector's lanes (a generator's last layer to RGB): the convolution stays NCHW, for
// the kernel that vectorizes along its rows (narrow_conv_recipes.py); a 1x1 one, or one on rows shorter than a
// vector, moves to NHWC as any other.
// LAYOUT-LABEL: func.func @narrow
// LAYOUT-NOT: "glow.transpose"
// LAYOUT: "glow.convolution"(%arg0, {{.*}}) -> tensor<1x3x20x40xf32>
// LAYOUT: "glow.transpose"(%arg0) {shuffle = array<i64: 0, 2, 3, 1>}
// LAYOUT: "glow.cpu_conv_nhwc"({{.*}}kernels = array<i64: 1, 1>{{.*}} -> tensor<1x20x40x3xf32>
// LAYOUT: "glow.cpu_conv_nhwc"({{.*}}kernels = array<i64: 3, 3>{{.*}} -> tensor<1x20x8x3xf32>
// LAYOUT: return
func.func @narrow(%x: tensor<1x8x20x40xf32> {glow.name = "x"}) -> (tensor<1x3x20x40xf32> {glow.name = "y"}, tensor<1x3x20x40xf32> {glow.name = "y1"}, tensor<1x3x20x8xf32> {glow.name = "y2"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<3x8x3x3xf32>} : () -> tensor<3x8x3x3xf32>
  %w1 = "glow.constant"() {value = dense<1.0> : tensor<3x8x1x1xf32>} : () -> tensor<3x8x1x1xf32>
  %b = "glow.constant"() {value = dense<0.5> : tensor<3xf32>} : () -> tensor<3xf32>
  %y = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x8x20x40xf32>, tensor<3x8x3x3xf32>, tensor<3xf32>) -> tensor<1x3x20x40xf32>
  %y1 = "glow.convolution"(%x, %w1, %b) {kernels = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x8x20x40xf32>, tensor<3x8x1x1xf32>, tensor<3xf32>) -> tensor<1x3x20x40xf32>
  %y2 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 5>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x8x20x40xf32>, tensor<3x8x3x3xf32>, tensor<3xf32>) -> tensor<1x3x20x8xf32>
  return %y, %y1, %y2 : tensor<1x3x20x40xf32>, tensor<1x3x20x40xf32>, tensor<1x3x20x8xf32>
}

// A matmul to a few columns (9, no power of two) over 32 rows multiplies B and the bias padded with zeros to 16
// columns, one vector (narrow_matmul.py), and slices its 9; 8 columns (a power of two: one block already) and 4
// rows stay as they are.
// LAYOUT-LABEL: func.func @narrow_matmul
// LAYOUT: %[[Z:.*]] = "glow.splat"() {value = 0.000000e+00 : f32} : () -> tensor<64x16xf32>
// LAYOUT: %[[W:.*]] = "glow.insert_tensor"(%[[Z]], %arg1) {start = array<i64: 0, 0>} : (tensor<64x16xf32>, tensor<64x9xf32>) -> tensor<64x16xf32>
// LAYOUT: %[[B:.*]] = "glow.insert_tensor"(%{{.*}}, %arg2) {start = array<i64: 0>} : (tensor<16xf32>, tensor<9xf32>) -> tensor<16xf32>
// LAYOUT: %[[Y:.*]] = "glow.fully_connected"(%arg0, %[[W]], %[[B]]) : (tensor<32x64xf32>, tensor<64x16xf32>, tensor<16xf32>) -> tensor<32x16xf32>
// LAYOUT: "glow.slice"(%[[Y]]) {start = array<i64: 0, 0>} : (tensor<32x16xf32>) -> tensor<32x9xf32>
// LAYOUT: "glow.matmul"(%arg0, %arg3) : (tensor<32x64xf32>, tensor<64x8xf32>) -> tensor<32x8xf32>
// LAYOUT: "glow.matmul"(%arg4, %arg1) : (tensor<4x64xf32>, tensor<64x9xf32>) -> tensor<4x9xf32>
func.func @narrow_matmul(%x: tensor<32x64xf32> {glow.name = "x"}, %w: tensor<64x9xf32> {glow.name = "w"}, %b: tensor<9xf32> {glow.name = "b"}, %w8: tensor<64x8xf32> {glow.name = "w8"}, %x4: tensor<4x64xf32> {glow.name = "x4"}) -> (tensor<32x9xf32> {glow.name = "y"}, tensor<32x8xf32> {glow.name = "y8"}, tensor<4x9xf32> {glow.name = "y4"}) {
  %y = "glow.fully_connected"(%x, %w, %b) : (tensor<32x64xf32>, tensor<64x9xf32>, tensor<9xf32>) -> tensor<32x9xf32>
  %y8 = "glow.matmul"(%x, %w8) : (tensor<32x64xf32>, tensor<64x8xf32>) -> tensor<32x8xf32>
  %y4 = "glow.matmul"(%x4, %w) : (tensor<4x64xf32>, tensor<64x9xf32>) -> tensor<4x9xf32>
  return %y, %y8, %y4 : tensor<32x9xf32>, tensor<32x8xf32>, tensor<4x9xf32>
}

// A window as wide as the unpadded input (LSTNet's, a text CNN's Conv2d(C, F, (k, width))) is a 1-D convolution
// along H over width x C channels: reshapes of the NHWC input, filter and output (the same bytes) around an NHWC
// row convolution with the window, stride, pads and dilation of H along W. With the width padded it stays 2-D.
// LAYOUT-LABEL: func.func @full_width
// LAYOUT: %[[X:.*]] = "glow.transpose"(%arg0) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<2x3x10x6xf32>) -> tensor<2x10x6x3xf32>
// LAYOUT: %[[W:.*]] = "glow.constant"() {{.*}} -> tensor<1x3x18x4xf32>
// LAYOUT: %[[R:.*]] = "glow.reshape"(%[[X]]) {dims = array<i64: 2, 1, 10, 18>}
// LAYOUT: %[[C:.*]] = "glow.cpu_conv_nhwc"(%[[R]], %[[W]], %{{.*}}) {activation = "none", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 1, 3>, pads = array<i64: 0, 1, 0, 1>, strides = array<i64: 1, 2>} : (tensor<2x1x10x18xf32>, tensor<1x3x18x4xf32>, tensor<4xf32>) -> tensor<2x1x5x4xf32>
// LAYOUT: %[[Y:.*]] = "glow.reshape"(%[[C]]) {dims = array<i64: 2, 5, 1, 4>}
// LAYOUT: "glow.transpose"(%[[Y]]) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<2x5x1x4xf32>) -> tensor<2x4x5x1xf32>
// LAYOUT: "glow.cpu_conv_nhwc"({{.*}}kernels = array<i64: 3, 6>, pads = array<i64: 1, 1, 1, 1>{{.*}} -> tensor<2x5x3x4xf32>
func.func @full_width(%x: tensor<2x3x10x6xf32> {glow.name = "x"}) -> (tensor<2x4x5x1xf32> {glow.name = "y"}, tensor<2x4x5x3xf32> {glow.name = "y1"}) {
  %w = "glow.constant"() {value = dense<1.0> : tensor<4x3x3x6xf32>} : () -> tensor<4x3x3x6xf32>
  %b = "glow.constant"() {value = dense<0.5> : tensor<4xf32>} : () -> tensor<4xf32>
  %y = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 6>, strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 1, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<2x3x10x6xf32>, tensor<4x3x3x6xf32>, tensor<4xf32>) -> tensor<2x4x5x1xf32>
  %y1 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 6>, strides = array<i64: 2, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<2x3x10x6xf32>, tensor<4x3x3x6xf32>, tensor<4xf32>) -> tensor<2x4x5x3xf32>
  return %y, %y1 : tensor<2x4x5x1xf32>, tensor<2x4x5x3xf32>
}

// A product to one column is a row reduction: the column reshaped to a row and broadcast over A's rows, the
// products summed along k; a fully_connected adds its bias after; one row (a dot product) stays a matmul.
// LAYOUT-LABEL: func.func @one_column
// LAYOUT: %[[R:.*]] = "glow.reshape"(%arg1) {dims = array<i64: 1, 64>} : (tensor<64x1xf32>) -> tensor<1x64xf32>
// LAYOUT: %[[B:.*]] = "glow.broadcast"(%[[R]]) {axis = 0 : i64} : (tensor<1x64xf32>) -> tensor<32x64xf32>
// LAYOUT: %[[P:.*]] = "glow.mul"(%arg0, %[[B]])
// LAYOUT: %[[S:.*]] = "glow.batched_reduce_add"(%[[P]]) {axes = array<i64: 1>} : (tensor<32x64xf32>) -> tensor<32xf32>
// LAYOUT: %[[Y:.*]] = "glow.reshape"(%[[S]]) {dims = array<i64: 32, 1>}
// LAYOUT: %[[C:.*]] = "glow.broadcast"(%arg2) {axis = 1 : i64} : (tensor<1xf32>) -> tensor<32x1xf32>
// LAYOUT: "glow.add"(%[[Y]], %[[C]])
// LAYOUT: "glow.broadcast"({{.*}}) {axis = 0 : i64} : (tensor<3x1x64xf32>) -> tensor<3x32x64xf32>
// LAYOUT: "glow.batched_reduce_add"({{.*}}) {axes = array<i64: 2>} : (tensor<3x32x64xf32>) -> tensor<3x32xf32>
// LAYOUT: "glow.matmul"(%arg4, %arg1) : (tensor<1x64xf32>, tensor<64x1xf32>) -> tensor<1x1xf32>
func.func @one_column(%x: tensor<32x64xf32> {glow.name = "x"}, %w: tensor<64x1xf32> {glow.name = "w"}, %b: tensor<1xf32> {glow.name = "b"}, %bx: tensor<3x32x64xf32> {glow.name = "bx"}, %x1: tensor<1x64xf32> {glow.name = "x1"}, %bw: tensor<3x64x1xf32> {glow.name = "bw"}) -> (tensor<32x1xf32> {glow.name = "y"}, tensor<3x32x1xf32> {glow.name = "y3"}, tensor<1x1xf32> {glow.name = "y1"}) {
  %y = "glow.fully_connected"(%x, %w, %b) : (tensor<32x64xf32>, tensor<64x1xf32>, tensor<1xf32>) -> tensor<32x1xf32>
  %y3 = "glow.batch_matmul"(%bx, %bw) : (tensor<3x32x64xf32>, tensor<3x64x1xf32>) -> tensor<3x32x1xf32>
  %y1 = "glow.matmul"(%x1, %w) : (tensor<1x64xf32>, tensor<64x1xf32>) -> tensor<1x1xf32>
  return %y, %y3, %y1 : tensor<32x1xf32>, tensor<3x32x1xf32>, tensor<1x1xf32>
}

// RoiAlign reads a vector of channels per sample in NHWC: the feature map goes to NHWC, the boxes and batch
// indices stay as they are, and the [R, OH, OW, C] result goes back to NCHW.
// LAYOUT-LABEL: func.func @roi_align
// LAYOUT: %[[X:.*]] = "glow.transpose"(%arg0) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<2x32x10x12xf32>) -> tensor<2x10x12x32xf32>
// LAYOUT: %[[P:.*]] = "glow.cpu_roi_align_nhwc"(%[[X]], %arg1, %arg2) {half_pixel = true, mode = "avg", output_size = array<i64: 7, 7>, sampling_ratio = 0 : i64, spatial_scale = 2.500000e-01 : f32} : (tensor<2x10x12x32xf32>, tensor<5x4xf32>, tensor<5xi64>) -> tensor<5x7x7x32xf32>
// LAYOUT: "glow.transpose"(%[[P]]) {shuffle = array<i64: 0, 3, 1, 2>} : (tensor<5x7x7x32xf32>) -> tensor<5x32x7x7xf32>
func.func @roi_align(%x: tensor<2x32x10x12xf32> {glow.name = "x"}, %rois: tensor<5x4xf32> {glow.name = "rois"}, %bi: tensor<5xi64> {glow.name = "bi"}) -> (tensor<5x32x7x7xf32> {glow.name = "y"}) {
  %y = "glow.roi_align"(%x, %rois, %bi) {output_size = array<i64: 7, 7>, sampling_ratio = 0 : i64, spatial_scale = 2.500000e-01 : f32, half_pixel = true, mode = "avg"} : (tensor<2x32x10x12xf32>, tensor<5x4xf32>, tensor<5xi64>) -> tensor<5x32x7x7xf32>
  return %y : tensor<5x32x7x7xf32>
}

// A batched product with each pair's expert gathered from constant weights [E, K, N]: one matmul against
// every expert, [S M, K] x [K, E N], and a gather_elements of each pair's expert (expert_matmul.py). With 8
// experts for 2 pairs the gather stays (the dense form would read 8 experts' weights for 2).
// LAYOUT-LABEL: func.func @gathered_experts
// LAYOUT-NOT: "glow.gather"(
// LAYOUT: "glow.transpose"(%[[W:.*]]) {shuffle = array<i64: 1, 0, 2>} : (tensor<4x8x5xf32>) -> tensor<8x4x5xf32>
// LAYOUT: %[[EVERY:.*]] = "glow.matmul"(%{{.*}}, %{{.*}}) : (tensor<12x8xf32>, tensor<8x20xf32>) -> tensor<12x20xf32>
// LAYOUT: "glow.reshape"(%[[EVERY]]) {dims = array<i64: 6, 2, 4, 5>}
// LAYOUT: "glow.gather_elements"(%{{.*}}, %{{.*}}) {axis = 2 : i64} : (tensor<6x2x4x5xf32>, tensor<6x2x1x5xi64>) -> tensor<6x2x1x5xf32>
// LAYOUT-LABEL: func.func @few_pairs
// LAYOUT: "glow.gather"(
// LAYOUT: "glow.batch_matmul"
func.func @gathered_experts(%x: tensor<6x2x8xf32> {glow.name = "x"}, %ids: tensor<6xi64> {glow.name = "ids"}) -> (tensor<6x2x5xf32> {glow.name = "y"}) {
  %w = "glow.splat"() {value = 5.000000e-01 : f32} : () -> tensor<4x8x5xf32>
  %g = "glow.gather"(%w, %ids) {axis = 0 : i64} : (tensor<4x8x5xf32>, tensor<6xi64>) -> tensor<6x8x5xf32>
  %y = "glow.batch_matmul"(%x, %g) : (tensor<6x2x8xf32>, tensor<6x8x5xf32>) -> tensor<6x2x5xf32>
  return %y : tensor<6x2x5xf32>
}
func.func @few_pairs(%x: tensor<2x2x8xf32> {glow.name = "x"}, %ids: tensor<2xi64> {glow.name = "ids"}) -> (tensor<2x2x5xf32> {glow.name = "y"}) {
  %w = "glow.splat"() {value = 5.000000e-01 : f32} : () -> tensor<8x8x5xf32>
  %g = "glow.gather"(%w, %ids) {axis = 0 : i64} : (tensor<8x8x5xf32>, tensor<2xi64>) -> tensor<2x8x5xf32>
  %y = "glow.batch_matmul"(%x, %g) : (tensor<2x2x8xf32>, tensor<2x8x5xf32>) -> tensor<2x2x5xf32>
  return %y : tensor<2x2x5xf32>
}
