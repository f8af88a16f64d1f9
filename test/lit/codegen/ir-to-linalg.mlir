// glow-ir-to-linalg turns every glow_ir instruction into linalg/arith/math/scf on the same memrefs.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s --check-prefix=NONE
// NONE-NOT: glow_ir.
// NONE-NOT: memref.alloc(

memref.global "private" constant @w : memref<4x3x3x3xf32> = dense<1.0>
memref.global "private" constant @gw : memref<4x1x3x3xf32> = dense<1.0>
memref.global "private" constant @b : memref<4xf32> = dense<0.5>

// CHECK-LABEL: func.func @convs
// CHECK-SAME: llvm.emit_c_interface
func.func @convs(%x: memref<1x3x8x8xf32> {glow.name = "x"}, %y: memref<1x4x3x3xf32> {glow.name = "y", glow.output},
                 %arena: memref<1280xi8> {glow.arena}) attributes {glow.arena_bytes = 1280 : i64} {
  %c0 = arith.constant 0 : index
  %c576 = arith.constant 576 : index
  %w = memref.get_global @w : memref<4x3x3x3xf32>
  %gw = memref.get_global @gw : memref<4x1x3x3xf32>
  %b = memref.get_global @b : memref<4xf32>
  %c = memref.view %arena[%c0][] : memref<1280xi8> to memref<1x4x6x6xf32>
  %d = memref.view %arena[%c576][] : memref<1280xi8> to memref<1x4x4x4xf32>
  // The bias is broadcast into the destination, then the convolution accumulates onto it.
  // CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<4xf32>) outs(%[[C:.*]] : memref<1x4x6x6xf32>)
  // CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
  "glow_ir.convolution"(%c, %x, %w, %b) {roles = ["out", "in", "in", "in"], kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (memref<1x4x6x6xf32>, memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<4xf32>) -> ()
  // A depthwise convolution runs on views with an explicit group dimension.
  // CHECK: memref.reinterpret_cast {{.*}} to memref<1x4x1x6x6xf32>
  // CHECK: memref.reinterpret_cast {{.*}} to memref<4x1x1x3x3xf32>
  // CHECK: memref.reinterpret_cast {{.*}} to memref<1x4x1x4x4xf32>
  // CHECK: linalg.conv_2d_ngchw_gfchw
  "glow_ir.convolution"(%d, %c, %gw, %b) {roles = ["out", "in", "in", "in"], kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, group = 4 : i64, dilation = array<i64: 1, 1>} : (memref<1x4x4x4xf32>, memref<1x4x6x6xf32>, memref<4x1x3x3xf32>, memref<4xf32>) -> ()
  // Max pooling starts from -inf; the window operand only carries the shape.
  // CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
  // CHECK: linalg.fill ins(%[[NEG]] : f32) outs(%{{.*}} : memref<1x4x3x3xf32>)
  // CHECK: %[[WIN:.*]] = memref.alloca() : memref<2x2xf32>
  // CHECK: linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%{{.*}}, %[[WIN]] : memref<1x4x4x4xf32>, memref<2x2xf32>)
  "glow_ir.max_pool"(%y, %d) {roles = ["out", "in"], kernels = array<i64: 2, 2>, strides = array<i64: 1, 1>} : (memref<1x4x3x3xf32>, memref<1x4x4x4xf32>) -> ()
  // CHECK: return
  return
}

// CHECK-LABEL: func.func @dense
func.func @dense(%x: memref<2x3xf32> {glow.name = "x"}, %m: memref<3x4xf32> {glow.name = "m"},
                 %y: memref<2x4xf32> {glow.name = "y", glow.output}, %z: memref<4x2xf32> {glow.name = "z", glow.output},
                 %arena: memref<64xi8> {glow.arena}) attributes {glow.arena_bytes = 64 : i64} {
  %c0 = arith.constant 0 : index
  %t = memref.view %arena[%c0][] : memref<64xi8> to memref<2x4xf32>
  // CHECK: linalg.fill
  // CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<2x3xf32>, memref<3x4xf32>) outs(%[[T:.*]] : memref<2x4xf32>)
  "glow_ir.matmul"(%t, %x, %m) {roles = ["out", "in", "in"]} : (memref<2x4xf32>, memref<2x3xf32>, memref<3x4xf32>) -> ()
  // CHECK: linalg.generic
  // CHECK: arith.maximumf
  "glow_ir.element_max"(%t, %t, %t) {roles = ["out", "in", "in"]} : (memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>) -> ()
  // CHECK: linalg.generic
  // CHECK: math.tanh
  "glow_ir.tanh"(%t, %t) {roles = ["out", "in"]} : (memref<2x4xf32>, memref<2x4xf32>) -> ()
  // Softmax is loops with carried max and sum, no scratch buffer.
  // CHECK: scf.for {{.*}} iter_args
  // CHECK: arith.maximumf
  // CHECK: scf.for {{.*}} iter_args
  // CHECK: math.exp
  // CHECK: arith.divf
  "glow_ir.softmax"(%y, %t) {roles = ["out", "in"]} : (memref<2x4xf32>, memref<2x4xf32>) -> ()
  // CHECK: linalg.transpose ins(%{{.*}} : memref<2x4xf32>) outs(%{{.*}} : memref<4x2xf32>) permutation = [1, 0]
  "glow_ir.transpose"(%z, %y) {roles = ["out", "in"], shuffle = array<i64: 1, 0>} : (memref<4x2xf32>, memref<2x4xf32>) -> ()
  // CHECK: memref.subview %{{.*}}[1, 0] [1, 4] [1, 1] : memref<2x4xf32> to memref<1x4xf32, strided<[4, 1], offset: 4>>
  // CHECK: linalg.copy
  %v = "glow_ir.tensor_view"(%x) : (memref<2x3xf32>) -> memref<6xf32>
  %c32 = arith.constant 32 : index
  %r = memref.view %arena[%c32][] : memref<64xi8> to memref<1x4xf32>
  "glow_ir.insert_tensor"(%y, %r) {roles = ["inout", "in"], start = array<i64: 1, 0>} : (memref<2x4xf32>, memref<1x4xf32>) -> ()
  return
}

// ReLU as glow-lower writes it, max(x, splat 0): the splat's buffer is only written by the splat, so the max
// takes 0.0 as a scalar, and the splat, read by nobody then, is gone.
// CHECK-LABEL: func.func @relu_of_splat
// CHECK-NOT:   linalg.fill
// CHECK:       linalg.generic
// CHECK-SAME:  ins(%arg0 : memref<4x8xf32>) outs(%arg1 : memref<4x8xf32>)
// CHECK:       arith.maximumf %{{.*}}, %cst
// CHECK-NOT:   linalg.fill
// CHECK:       return
func.func @relu_of_splat(%x: memref<4x8xf32> {glow.name = "x"}, %y: memref<4x8xf32> {glow.name = "y", glow.output}, %arena: memref<128xi8> {glow.arena}) {
  %c0 = arith.constant 0 : index
  %z = memref.view %arena[%c0][] : memref<128xi8> to memref<4x8xf32>
  "glow_ir.splat"(%z) {roles = ["out"], value = 0.000000e+00 : f32} : (memref<4x8xf32>) -> ()
  "glow_ir.element_max"(%y, %x, %z) {roles = ["out", "in", "in"]} : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  return
}

// A transpose's unit dims move nothing: where one is innermost, it is the transpose of the buffers without them
// (reinterpret_casts), so the recipe's register tiles walk real dims; with only unit dims moved it is a copy.
// CHECK-LABEL: func.func @transpose_unit_dims
// CHECK: %[[SRC:.*]] = memref.reinterpret_cast %arg0 to offset: [0], sizes: [2, 16, 8], strides: [128, 8, 1]
// CHECK: %[[DST:.*]] = memref.reinterpret_cast %arg1 to offset: [0], sizes: [2, 8, 16], strides: [128, 16, 1]
// CHECK: linalg.transpose ins(%[[SRC]] : memref<2x16x8xf32>) outs(%[[DST]] : memref<2x8x16xf32>) permutation = [0, 2, 1]
// CHECK: linalg.copy {{.*}}ins(%{{.*}} : memref<4x6xf32>) outs(%{{.*}} : memref<4x6xf32>)
// CHECK-NOT: linalg.transpose
func.func @transpose_unit_dims(%x: memref<2x16x1x8xf32> {glow.name = "x"}, %y: memref<2x8x16x1xf32> {glow.name = "y", glow.output},
                               %a: memref<4x6x1xf32> {glow.name = "a"}, %b: memref<4x1x6xf32> {glow.name = "b", glow.output}) {
  "glow_ir.transpose"(%y, %x) {roles = ["out", "in"], shuffle = array<i64: 0, 3, 1, 2>} : (memref<2x8x16x1xf32>, memref<2x16x1x8xf32>) -> ()
  "glow_ir.transpose"(%b, %a) {roles = ["out", "in"], shuffle = array<i64: 0, 2, 1>} : (memref<4x1x6xf32>, memref<4x6x1xf32>) -> ()
  return
}
