// glow-cpu-pad-channels (backends/cpu/pad_channels.py): the zero-padded input of a depthwise convolution whose
// 128-channel pixels (512 bytes) put a channel block's vectors into 8 of L1's sets becomes a buffer of 144-channel
// pixels; the splat fills it, the producer writes its interior through a block view of the new buffer at the same
// place, and the convolution reads the first 128 channels of every pixel through a block view from its origin.
// @spread: 96 channels (6 lines a pixel) already spread over 32 sets: nothing changes.
// @viewed: the padded buffer is also read under another shape (a tensor_view), which a padded pixel would break:
// nothing changes.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-pad-channels,glow-ir-verify)' | FileCheck %s

// CHECK-LABEL: func.func @aliased(
// CHECK:         %[[P:.*]] = "glow_ir.alloc_activation"() : () -> memref<1x36x36x144xf32>
// CHECK-NEXT:    "glow_ir.splat"(%[[P]]) {{.*}} : (memref<1x36x36x144xf32>) -> ()
// CHECK-NEXT:    %[[IN:.*]] = "glow_ir.block_view"(%[[P]]) {start = array<i64: 0, 2, 2, 0>} : (memref<1x36x36x144xf32>) -> memref<1x32x32x128xf32, strided<[186624, 5184, 144, 1], offset: 10656>>
// CHECK-NEXT:    "glow_ir.element_exp"(%[[IN]], %arg0)
// CHECK-NEXT:    %[[ALL:.*]] = "glow_ir.block_view"(%[[P]]) {start = array<i64: 0, 0, 0, 0>} : (memref<1x36x36x144xf32>) -> memref<1x36x36x128xf32, strided<[186624, 5184, 144, 1]>>
// CHECK-NEXT:    "glow_ir.cpu_conv_nhwc"(%arg1, %[[ALL]], %{{.*}}, %{{.*}}) {{.*}} : (memref<1x16x16x128xf32>, memref<1x36x36x128xf32, strided<[186624, 5184, 144, 1]>>
// CHECK-NEXT:    "glow_ir.dealloc_activation"(%[[P]]) {{.*}} : (memref<1x36x36x144xf32>) -> ()
// CHECK-NOT:     memref<1x36x36x128xf32>)

// CHECK-LABEL: func.func @spread(
// CHECK:         "glow_ir.alloc_activation"() : () -> memref<1x36x36x96xf32>
// CHECK-NOT:     glow_ir.alloc_activation

// CHECK-LABEL: func.func @viewed(
// CHECK:         "glow_ir.alloc_activation"() : () -> memref<1x36x36x128xf32>
// CHECK-NOT:     glow_ir.alloc_activation

module {
  memref.global "private" constant @w128 : memref<5x5x1x128xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b128 : memref<128xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  memref.global "private" constant @w96 : memref<5x5x1x96xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b96 : memref<96xf32> = dense<2.500000e-01> {alignment = 64 : i64}
  func.func @aliased(%arg0: memref<1x32x32x128xf32> {glow.name = "x"}, %arg1: memref<1x16x16x128xf32> {glow.name = "y", glow.output}) {
    %w = memref.get_global @w128 : memref<5x5x1x128xf32>
    %b = memref.get_global @b128 : memref<128xf32>
    %p = "glow_ir.alloc_activation"() : () -> memref<1x36x36x128xf32>
    "glow_ir.splat"(%p) {roles = ["out"], value = 0.000000e+00 : f32} : (memref<1x36x36x128xf32>) -> ()
    %v = "glow_ir.block_view"(%p) {start = array<i64: 0, 2, 2, 0>} : (memref<1x36x36x128xf32>) -> memref<1x32x32x128xf32, strided<[165888, 4608, 128, 1], offset: 9472>>
    "glow_ir.element_exp"(%v, %arg0) {roles = ["out", "in"]} : (memref<1x32x32x128xf32, strided<[165888, 4608, 128, 1], offset: 9472>>, memref<1x32x32x128xf32>) -> ()
    "glow_ir.cpu_conv_nhwc"(%arg1, %p, %w, %b) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 128 : i64, kernels = array<i64: 5, 5>, roles = ["out", "in", "in", "in"], strides = array<i64: 2, 2>} : (memref<1x16x16x128xf32>, memref<1x36x36x128xf32>, memref<5x5x1x128xf32>, memref<128xf32>) -> ()
    "glow_ir.dealloc_activation"(%p) {roles = ["out"]} : (memref<1x36x36x128xf32>) -> ()
    return
  }
  func.func @spread(%arg0: memref<1x32x32x96xf32> {glow.name = "x"}, %arg1: memref<1x16x16x96xf32> {glow.name = "y", glow.output}) {
    %w = memref.get_global @w96 : memref<5x5x1x96xf32>
    %b = memref.get_global @b96 : memref<96xf32>
    %p = "glow_ir.alloc_activation"() : () -> memref<1x36x36x96xf32>
    "glow_ir.splat"(%p) {roles = ["out"], value = 0.000000e+00 : f32} : (memref<1x36x36x96xf32>) -> ()
    %v = "glow_ir.block_view"(%p) {start = array<i64: 0, 2, 2, 0>} : (memref<1x36x36x96xf32>) -> memref<1x32x32x96xf32, strided<[124416, 3456, 96, 1], offset: 7104>>
    "glow_ir.element_exp"(%v, %arg0) {roles = ["out", "in"]} : (memref<1x32x32x96xf32, strided<[124416, 3456, 96, 1], offset: 7104>>, memref<1x32x32x96xf32>) -> ()
    "glow_ir.cpu_conv_nhwc"(%arg1, %p, %w, %b) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 96 : i64, kernels = array<i64: 5, 5>, roles = ["out", "in", "in", "in"], strides = array<i64: 2, 2>} : (memref<1x16x16x96xf32>, memref<1x36x36x96xf32>, memref<5x5x1x96xf32>, memref<96xf32>) -> ()
    "glow_ir.dealloc_activation"(%p) {roles = ["out"]} : (memref<1x36x36x96xf32>) -> ()
    return
  }
  func.func @viewed(%arg0: memref<1x32x32x128xf32> {glow.name = "x"}, %arg1: memref<1x16x16x128xf32> {glow.name = "y", glow.output}, %arg2: memref<165888xf32> {glow.name = "z", glow.output}) {
    %w = memref.get_global @w128 : memref<5x5x1x128xf32>
    %b = memref.get_global @b128 : memref<128xf32>
    %p = "glow_ir.alloc_activation"() : () -> memref<1x36x36x128xf32>
    "glow_ir.splat"(%p) {roles = ["out"], value = 0.000000e+00 : f32} : (memref<1x36x36x128xf32>) -> ()
    %v = "glow_ir.block_view"(%p) {start = array<i64: 0, 2, 2, 0>} : (memref<1x36x36x128xf32>) -> memref<1x32x32x128xf32, strided<[165888, 4608, 128, 1], offset: 9472>>
    "glow_ir.element_exp"(%v, %arg0) {roles = ["out", "in"]} : (memref<1x32x32x128xf32, strided<[165888, 4608, 128, 1], offset: 9472>>, memref<1x32x32x128xf32>) -> ()
    "glow_ir.cpu_conv_nhwc"(%arg1, %p, %w, %b) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 128 : i64, kernels = array<i64: 5, 5>, roles = ["out", "in", "in", "in"], strides = array<i64: 2, 2>} : (memref<1x16x16x128xf32>, memref<1x36x36x128xf32>, memref<5x5x1x128xf32>, memref<128xf32>) -> ()
    %flat = "glow_ir.tensor_view"(%p) : (memref<1x36x36x128xf32>) -> memref<165888xf32>
    "glow_ir.copy"(%arg2, %flat) {roles = ["out", "in"]} : (memref<165888xf32>, memref<165888xf32>) -> ()
    "glow_ir.dealloc_activation"(%p) {roles = ["out"]} : (memref<1x36x36x128xf32>) -> ()
    return
  }
}
