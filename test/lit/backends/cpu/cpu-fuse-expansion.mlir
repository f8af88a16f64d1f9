// glow-cpu-fuse-expansion makes an inverted residual's 1x1 expansion and the depthwise convolution that reads
// its padded result one glow_ir.cpu_expand_depthwise_nhwc (backends/cpu/expansion.py): the padded buffer %p,
// its zero splat and the view the expansion wrote through are gone, the pads are where that view sat, each
// convolution's activation is kept under its name, and the expansion's input %x lives until the fused
// instruction (its dealloc moves after it).
// @shared: the padded buffer is also copied out, so it must exist: nothing changes.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-fuse-expansion,glow-ir-verify)' | FileCheck %s

// CHECK-LABEL: func.func @fused(
// CHECK-NOT:     glow_ir.splat
// CHECK-NOT:     glow_ir.block_view
// CHECK:         %[[X:.*]] = "glow_ir.alloc_activation"() : () -> memref<1x6x6x4xf32>
// CHECK:         "glow_ir.transpose"(%[[X]], %arg0)
// CHECK-NOT:     glow_ir.cpu_conv_nhwc
// CHECK:         "glow_ir.cpu_expand_depthwise_nhwc"(%arg1, %[[X]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, expandActivation = "clip", expandActivationArgs = array<f32: 0.000000e+00, 6.000000e+00>, expandDilation = array<i64: 1, 1>, expandKernels = array<i64: 1, 1>, expandStrides = array<i64: 1, 1>, kernels = array<i64: 3, 3>, pads = array<i64: 0, 0, 1, 1>, roles = ["out", "in", "in", "in", "in", "in"], strides = array<i64: 2, 2>}
// CHECK-NEXT:    "glow_ir.dealloc_activation"(%[[X]])
// CHECK-NOT:     glow_ir.alloc_activation
// CHECK:         return

// CHECK-LABEL: func.func @shared(
// CHECK:         glow_ir.splat
// CHECK:         "glow_ir.cpu_conv_nhwc"
// CHECK:         "glow_ir.cpu_conv_nhwc"
// CHECK-NOT:     glow_ir.cpu_expand_depthwise_nhwc

module {
  memref.global "private" constant @w1 : memref<1x1x4x16xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b1 : memref<16xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  memref.global "private" constant @w2 : memref<3x3x1x16xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b2 : memref<16xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @fused(%arg0: memref<1x4x6x6xf32> {glow.name = "x"}, %arg1: memref<1x3x3x16xf32> {glow.name = "y", glow.output}) {
    %w1 = memref.get_global @w1 : memref<1x1x4x16xf32>
    %b1 = memref.get_global @b1 : memref<16xf32>
    %w2 = memref.get_global @w2 : memref<3x3x1x16xf32>
    %b2 = memref.get_global @b2 : memref<16xf32>
    %x = "glow_ir.alloc_activation"() : () -> memref<1x6x6x4xf32>
    "glow_ir.transpose"(%x, %arg0) {roles = ["out", "in"], shuffle = array<i64: 0, 2, 3, 1>} : (memref<1x6x6x4xf32>, memref<1x4x6x6xf32>) -> ()
    %p = "glow_ir.alloc_activation"() : () -> memref<1x7x7x16xf32>
    "glow_ir.splat"(%p) {roles = ["out"], value = 0.000000e+00 : f32} : (memref<1x7x7x16xf32>) -> ()
    %v = "glow_ir.block_view"(%p) {start = array<i64: 0, 0, 0, 0>} : (memref<1x7x7x16xf32>) -> memref<1x6x6x16xf32, strided<[784, 112, 16, 1]>>
    "glow_ir.cpu_conv_nhwc"(%v, %x, %w1, %b1) {activation = "clip", activationArgs = array<f32: 0.0, 6.0>, dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 1, 1>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x6x6x16xf32, strided<[784, 112, 16, 1]>>, memref<1x6x6x4xf32>, memref<1x1x4x16xf32>, memref<16xf32>) -> ()
    "glow_ir.dealloc_activation"(%x) {roles = ["out"]} : (memref<1x6x6x4xf32>) -> ()
    "glow_ir.cpu_conv_nhwc"(%arg1, %p, %w2, %b2) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 16 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 2, 2>} : (memref<1x3x3x16xf32>, memref<1x7x7x16xf32>, memref<3x3x1x16xf32>, memref<16xf32>) -> ()
    "glow_ir.dealloc_activation"(%p) {roles = ["out"]} : (memref<1x7x7x16xf32>) -> ()
    return
  }
  func.func @shared(%arg0: memref<1x6x6x4xf32> {glow.name = "x"}, %arg1: memref<1x3x3x16xf32> {glow.name = "y", glow.output}, %arg2: memref<1x7x7x16xf32> {glow.name = "p", glow.output}) {
    %w1 = memref.get_global @w1 : memref<1x1x4x16xf32>
    %b1 = memref.get_global @b1 : memref<16xf32>
    %w2 = memref.get_global @w2 : memref<3x3x1x16xf32>
    %b2 = memref.get_global @b2 : memref<16xf32>
    %p = "glow_ir.alloc_activation"() : () -> memref<1x7x7x16xf32>
    "glow_ir.splat"(%p) {roles = ["out"], value = 0.000000e+00 : f32} : (memref<1x7x7x16xf32>) -> ()
    %v = "glow_ir.block_view"(%p) {start = array<i64: 0, 0, 0, 0>} : (memref<1x7x7x16xf32>) -> memref<1x6x6x16xf32, strided<[784, 112, 16, 1]>>
    "glow_ir.cpu_conv_nhwc"(%v, %arg0, %w1, %b1) {activation = "none", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 1, 1>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x6x6x16xf32, strided<[784, 112, 16, 1]>>, memref<1x6x6x4xf32>, memref<1x1x4x16xf32>, memref<16xf32>) -> ()
    "glow_ir.cpu_conv_nhwc"(%arg1, %p, %w2, %b2) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 16 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 2, 2>} : (memref<1x3x3x16xf32>, memref<1x7x7x16xf32>, memref<3x3x1x16xf32>, memref<16xf32>) -> ()
    "glow_ir.copy"(%arg2, %p) {roles = ["out", "in"]} : (memref<1x7x7x16xf32>, memref<1x7x7x16xf32>) -> ()
    "glow_ir.dealloc_activation"(%p) {roles = ["out"]} : (memref<1x7x7x16xf32>) -> ()
    return
  }
}
