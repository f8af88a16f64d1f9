// glow-verify checks glow_ir.cpu_expand_depthwise_nhwc against its shape rule (backends/cpu/ops.py): the 1x1
// convolution's [N, H, W, E] padded by `pads` and convolved depthwise. Each case is a chunk of its own.
// RUN: glow-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(glow-verify)'

// 14x14 padded by 1, 3x3 at stride 2: 7x7, not 8x7.
func.func @rows(%y: memref<1x8x7x16xf32>, %x: memref<1x14x14x4xf32>, %w1: memref<1x1x4x16xf32>, %b1: memref<16xf32>, %w2: memref<3x3x1x16xf32>, %b2: memref<16xf32>) {
  // expected-error @+1 {{'glow_ir.cpu_expand_depthwise_nhwc' destination shape [1, 8, 7, 16] must equal the shape rule's [1, 7, 7, 16]}}
  "glow_ir.cpu_expand_depthwise_nhwc"(%y, %x, %w1, %b1, %w2, %b2) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, expandDilation = array<i64: 1, 1>, expandKernels = array<i64: 1, 1>, expandStrides = array<i64: 1, 1>, expandActivation = "none", expandActivationArgs = array<f32>, kernels = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, roles = ["out", "in", "in", "in", "in", "in"], strides = array<i64: 2, 2>} : (memref<1x8x7x16xf32>, memref<1x14x14x4xf32>, memref<1x1x4x16xf32>, memref<16xf32>, memref<3x3x1x16xf32>, memref<16xf32>) -> ()
  return
}

// -----

// The depthwise filter must have the expansion's 16 channels.
func.func @channels(%y: memref<1x7x7x16xf32>, %x: memref<1x14x14x4xf32>, %w1: memref<1x1x4x16xf32>, %b1: memref<16xf32>, %w2: memref<3x3x1x8xf32>, %b2: memref<8xf32>) {
  // expected-error @+1 {{group 16 must divide the filter's output channels: filter [3, 3, 1, 8]}}
  "glow_ir.cpu_expand_depthwise_nhwc"(%y, %x, %w1, %b1, %w2, %b2) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, expandDilation = array<i64: 1, 1>, expandKernels = array<i64: 1, 1>, expandStrides = array<i64: 1, 1>, expandActivation = "none", expandActivationArgs = array<f32>, kernels = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, roles = ["out", "in", "in", "in", "in", "in"], strides = array<i64: 2, 2>} : (memref<1x7x7x16xf32>, memref<1x14x14x4xf32>, memref<1x1x4x16xf32>, memref<16xf32>, memref<3x3x1x8xf32>, memref<8xf32>) -> ()
  return
}
