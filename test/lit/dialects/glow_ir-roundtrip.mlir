// Every instruction of the `glow_ir` dialect parses, verifies (roles included) and prints back.
// RUN: glow-opt %s | glow-opt | FileCheck %s

memref.global "private" constant @w : memref<4x3x3x3xf32> = dense<1.0>

// CHECK-LABEL: func.func @all_instructions
func.func @all_instructions(%x: memref<1x3x8x8xf32> {glow.name = "x"}, %y: memref<1x4x6x6xf32> {glow.name = "y", glow.output}) {
  // CHECK: %[[W:.*]] = memref.get_global @w
  %w = memref.get_global @w : memref<4x3x3x3xf32>
  // CHECK: %[[B:.*]] = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  %b = "glow_ir.alloc_activation"() : () -> memref<4xf32>
  // CHECK: "glow_ir.splat"(%[[B]]) {roles = ["out"], value = 0.000000e+00 : f32}
  "glow_ir.splat"(%b) {roles = ["out"], value = 0.0 : f32} : (memref<4xf32>) -> ()
  // CHECK: "glow_ir.convolution"(%{{.*}}, %{{.*}}, %[[W]], %[[B]]) {dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>}
  %c = "glow_ir.alloc_activation"() : () -> memref<1x4x6x6xf32>
  "glow_ir.convolution"(%c, %x, %w, %b) {roles = ["out", "in", "in", "in"], kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, group = 1 : i64, dilation = array<i64: 1, 1>} : (memref<1x4x6x6xf32>, memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<4xf32>) -> ()
  // CHECK: "glow_ir.max_pool"(%{{.*}}, %{{.*}}) {kernels = array<i64: 2, 2>, roles = ["out", "in"], strides = array<i64: 2, 2>}
  %p = "glow_ir.alloc_activation"() : () -> memref<1x4x3x3xf32>
  "glow_ir.max_pool"(%p, %c) {roles = ["out", "in"], kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (memref<1x4x3x3xf32>, memref<1x4x6x6xf32>) -> ()
  // CHECK: "glow_ir.avg_pool"
  "glow_ir.avg_pool"(%p, %c) {roles = ["out", "in"], kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (memref<1x4x3x3xf32>, memref<1x4x6x6xf32>) -> ()
  // CHECK: "glow_ir.tensor_view"(%{{.*}}) : (memref<1x4x3x3xf32>) -> memref<4x9xf32>
  %v = "glow_ir.tensor_view"(%p) : (memref<1x4x3x3xf32>) -> memref<4x9xf32>
  // CHECK: "glow_ir.block_view"(%{{.*}}) {start = array<i64: 0, 1, 1, 1>} : (memref<1x4x3x3xf32>) -> memref<1x2x2x2xf32, strided<[36, 9, 3, 1], offset: 13>>
  %blk = "glow_ir.block_view"(%p) {start = array<i64: 0, 1, 1, 1>} : (memref<1x4x3x3xf32>) -> memref<1x2x2x2xf32, strided<[36, 9, 3, 1], offset: 13>>
  %t = "glow_ir.alloc_activation"() : () -> memref<9x4xf32>
  // CHECK: "glow_ir.transpose"(%{{.*}}, %{{.*}}) {roles = ["out", "in"], shuffle = array<i64: 1, 0>}
  "glow_ir.transpose"(%t, %v) {roles = ["out", "in"], shuffle = array<i64: 1, 0>} : (memref<9x4xf32>, memref<4x9xf32>) -> ()
  %mm = "glow_ir.alloc_activation"() : () -> memref<9x9xf32>
  // CHECK: "glow_ir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) {roles = ["out", "in", "in"]}
  "glow_ir.matmul"(%mm, %t, %v) {roles = ["out", "in", "in"]} : (memref<9x9xf32>, memref<9x4xf32>, memref<4x9xf32>) -> ()
  %row = "glow_ir.alloc_activation"() : () -> memref<9xf32>
  // CHECK: "glow_ir.extract_tensor"(%{{.*}}, %{{.*}}) {roles = ["out", "in"], start = array<i64: 0, 0>}
  %row2 = "glow_ir.tensor_view"(%row) : (memref<9xf32>) -> memref<1x9xf32>
  "glow_ir.extract_tensor"(%row2, %mm) {roles = ["out", "in"], start = array<i64: 0, 0>} : (memref<1x9xf32>, memref<9x9xf32>) -> ()
  // CHECK: "glow_ir.batched_add"(%{{.*}}, %{{.*}}, %{{.*}}) {roles = ["out", "in", "in"]}
  "glow_ir.batched_add"(%mm, %mm, %row) {roles = ["out", "in", "in"]} : (memref<9x9xf32>, memref<9x9xf32>, memref<9xf32>) -> ()
  // CHECK: "glow_ir.element_add"
  "glow_ir.element_add"(%mm, %mm, %mm) {roles = ["out", "in", "in"]} : (memref<9x9xf32>, memref<9x9xf32>, memref<9x9xf32>) -> ()
  // CHECK: "glow_ir.element_sub"
  "glow_ir.element_sub"(%mm, %mm, %mm) {roles = ["out", "in", "in"]} : (memref<9x9xf32>, memref<9x9xf32>, memref<9x9xf32>) -> ()
  // CHECK: "glow_ir.element_mul"
  "glow_ir.element_mul"(%mm, %mm, %mm) {roles = ["out", "in", "in"]} : (memref<9x9xf32>, memref<9x9xf32>, memref<9x9xf32>) -> ()
  // CHECK: "glow_ir.element_div"
  "glow_ir.element_div"(%mm, %mm, %mm) {roles = ["out", "in", "in"]} : (memref<9x9xf32>, memref<9x9xf32>, memref<9x9xf32>) -> ()
  // CHECK: "glow_ir.element_max"
  "glow_ir.element_max"(%mm, %mm, %mm) {roles = ["out", "in", "in"]} : (memref<9x9xf32>, memref<9x9xf32>, memref<9x9xf32>) -> ()
  // CHECK: "glow_ir.element_min"
  "glow_ir.element_min"(%mm, %mm, %mm) {roles = ["out", "in", "in"]} : (memref<9x9xf32>, memref<9x9xf32>, memref<9x9xf32>) -> ()
  // CHECK: "glow_ir.sigmoid"
  "glow_ir.sigmoid"(%mm, %mm) {roles = ["out", "in"]} : (memref<9x9xf32>, memref<9x9xf32>) -> ()
  // CHECK: "glow_ir.tanh"
  "glow_ir.tanh"(%mm, %mm) {roles = ["out", "in"]} : (memref<9x9xf32>, memref<9x9xf32>) -> ()
  // CHECK: "glow_ir.element_exp"
  "glow_ir.element_exp"(%mm, %mm) {roles = ["out", "in"]} : (memref<9x9xf32>, memref<9x9xf32>) -> ()
  // CHECK: "glow_ir.element_sqrt"
  "glow_ir.element_sqrt"(%mm, %mm) {roles = ["out", "in"]} : (memref<9x9xf32>, memref<9x9xf32>) -> ()
  // CHECK: "glow_ir.softmax"
  "glow_ir.softmax"(%mm, %mm) {roles = ["out", "in"]} : (memref<9x9xf32>, memref<9x9xf32>) -> ()
  // CHECK: "glow_ir.insert_tensor"(%{{.*}}, %{{.*}}) {roles = ["inout", "in"], start = array<i64: 0, 0>}
  "glow_ir.insert_tensor"(%mm, %row2) {roles = ["inout", "in"], start = array<i64: 0, 0>} : (memref<9x9xf32>, memref<1x9xf32>) -> ()
  // CHECK: "glow_ir.broadcast"(%{{.*}}, %{{.*}}) {axis = 1 : i64, roles = ["out", "in"]}
  "glow_ir.broadcast"(%y, %b) {roles = ["out", "in"], axis = 1 : i64} : (memref<1x4x6x6xf32>, memref<4xf32>) -> ()
  // CHECK: "glow_ir.copy"(%{{.*}}, %{{.*}}) {roles = ["out", "in"]}
  "glow_ir.copy"(%y, %c) {roles = ["out", "in"]} : (memref<1x4x6x6xf32>, memref<1x4x6x6xf32>) -> ()
  // CHECK: "glow_ir.dealloc_activation"(%{{.*}}) {roles = ["out"]}
  "glow_ir.dealloc_activation"(%row) {roles = ["out"]} : (memref<9xf32>) -> ()
  "glow_ir.dealloc_activation"(%mm) {roles = ["out"]} : (memref<9x9xf32>) -> ()
  "glow_ir.dealloc_activation"(%t) {roles = ["out"]} : (memref<9x4xf32>) -> ()
  "glow_ir.dealloc_activation"(%p) {roles = ["out"]} : (memref<1x4x3x3xf32>) -> ()
  "glow_ir.dealloc_activation"(%c) {roles = ["out"]} : (memref<1x4x6x6xf32>) -> ()
  "glow_ir.dealloc_activation"(%b) {roles = ["out"]} : (memref<4xf32>) -> ()
  return
}
