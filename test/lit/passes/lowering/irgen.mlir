// glow-irgen turns glow functions on tensors into glow_ir instructions on memrefs.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-irgen,glow-verify)' | FileCheck %s

// Constants become private constant globals, in program order, named after their nodes.
// CHECK: memref.global "private" constant @w : memref<3x4xf32> = dense<5.000000e-01> {alignment = 64 : i64}
// CHECK: memref.global "private" constant @b : memref<4xf32> = dense<2.500000e-01> {alignment = 64 : i64}

// The signature becomes (inputs, outputs) -> () on memrefs; outputs keep their names and gain glow.output.
// The op that computes the returned value writes the output argument; intermediates get an alloc and a
// dealloc right after their last use.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: memref<2x3xf32> {glow.name = "x"}, %[[Y:.*]]: memref<2x4xf32> {glow.name = "y", glow.output}) {
// CHECK-NOT: tensor
// CHECK: %[[W:.*]] = memref.get_global @w : memref<3x4xf32>
// CHECK: %[[B:.*]] = memref.get_global @b : memref<4xf32>
// CHECK: %[[MM:.*]] = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
// CHECK: "glow_ir.matmul"(%[[MM]], %[[X]], %[[W]]) {roles = ["out", "in", "in"]}
// CHECK: %[[BA:.*]] = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
// CHECK: "glow_ir.batched_add"(%[[BA]], %[[MM]], %[[B]]) {roles = ["out", "in", "in"]}
// CHECK: "glow_ir.dealloc_activation"(%[[MM]]) {roles = ["out"]}
// CHECK: %[[Z:.*]] = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
// CHECK: "glow_ir.splat"(%[[Z]]) {roles = ["out"], value = 0.000000e+00 : f32}
// CHECK: "glow_ir.element_max"(%[[Y]], %[[BA]], %[[Z]]) {roles = ["out", "in", "in"]}
// CHECK: "glow_ir.dealloc_activation"(%[[BA]])
// CHECK: "glow_ir.dealloc_activation"(%[[Z]])
// CHECK-NEXT: return
func.func @mlp(%x: tensor<2x3xf32> {glow.name = "x"}) -> (tensor<2x4xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<0.5> : tensor<3x4xf32>} : () -> tensor<3x4xf32> loc("w")
  %b = "glow.constant"() {value = dense<0.25> : tensor<4xf32>} : () -> tensor<4xf32> loc("b")
  %0 = "glow.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = "glow.batched_add"(%0, %b) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = "glow.splat"() {value = 0.0 : f32} : () -> tensor<2x4xf32>
  %3 = "glow.max"(%1, %2) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %3 : tensor<2x4xf32>
}

// Every compute op maps to its instruction, attributes kept.
// CHECK-LABEL: func.func @elementwise
// CHECK: "glow_ir.element_add"
// CHECK: "glow_ir.element_sub"
// CHECK: "glow_ir.element_mul"
// CHECK: "glow_ir.element_div"
// CHECK: "glow_ir.element_min"
// CHECK: "glow_ir.sigmoid"
// CHECK: "glow_ir.tanh"
// CHECK: "glow_ir.element_exp"
// CHECK: "glow_ir.element_sqrt"
// CHECK: "glow_ir.softmax"(%arg1, %{{.*}}) {roles = ["out", "in"]}
func.func @elementwise(%a: tensor<2x4xf32> {glow.name = "a"}) -> (tensor<2x4xf32> {glow.name = "y"}) {
  %0 = "glow.add"(%a, %a) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = "glow.sub"(%0, %a) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = "glow.mul"(%1, %a) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = "glow.div"(%2, %a) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %4 = "glow.min"(%3, %a) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %5 = "glow.sigmoid"(%4) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %6 = "glow.tanh"(%5) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %7 = "glow.exp"(%6) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %8 = "glow.sqrt"(%7) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %9 = "glow.softmax"(%8) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %9 : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @spatial
// CHECK: "glow_ir.convolution"(%[[C:.*]], %arg0, %arg1, %arg2) {dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x2x4x4xf32>, memref<1x2x6x6xf32>, memref<2x2x3x3xf32>, memref<2xf32>) -> ()
// CHECK: "glow_ir.max_pool"(%[[M:.*]], %[[C]]) {kernels = array<i64: 2, 2>, roles = ["out", "in"], strides = array<i64: 2, 2>}
// CHECK: "glow_ir.avg_pool"(%{{.*}}, %[[M]]) {kernels = array<i64: 2, 2>, roles = ["out", "in"], strides = array<i64: 1, 1>}
// CHECK: "glow_ir.transpose"(%{{.*}}, %{{.*}}) {roles = ["out", "in"], shuffle = array<i64: 0, 2, 3, 1>}
// CHECK: "glow_ir.broadcast"(%{{.*}}, %arg2) {axis = 1 : i64, roles = ["out", "in"]} : (memref<1x2x1x1xf32>, memref<2xf32>) -> ()
func.func @spatial(%x: tensor<1x2x6x6xf32> {glow.name = "x"}, %w: tensor<2x2x3x3xf32> {glow.name = "w"}, %b: tensor<2xf32> {glow.name = "b"}) -> (tensor<1x1x1x2xf32> {glow.name = "t"}, tensor<1x2x1x1xf32> {glow.name = "bb"}) {
  %0 = "glow.convolution"(%x, %w, %b) {kernels = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1 : i64, dilation = array<i64: 1, 1>} : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %1 = "glow.max_pool"(%0) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %2 = "glow.avg_pool"(%1) {kernels = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, countIncludePads = false} : (tensor<1x2x2x2xf32>) -> tensor<1x2x1x1xf32>
  %3 = "glow.transpose"(%2) {shuffle = array<i64: 0, 2, 3, 1>} : (tensor<1x2x1x1xf32>) -> tensor<1x1x1x2xf32>
  %4 = "glow.broadcast"(%b) {axis = 1 : i64} : (tensor<2xf32>) -> tensor<1x2x1x1xf32>
  return %3, %4 : tensor<1x1x1x2xf32>, tensor<1x2x1x1xf32>
}

// Reshape is a view (no copy); its uses keep the viewed buffer alive. Concat is one insert_tensor per input
// into one buffer; slice is extract_tensor; insert_tensor copies `big` and then inserts in place.
// CHECK: memref.global "private" constant @k : memref<2x2xf32>
// CHECK-LABEL: func.func @data_movement
// CHECK-SAME: (%[[A:.*]]: memref<2x4xf32> {glow.name = "a"}, %[[CAT:.*]]: memref<2x7xf32> {glow.name = "cat", glow.output}, %[[S:.*]]: memref<1x2xf32> {glow.name = "s", glow.output}, %[[I:.*]]: memref<2x4xf32> {glow.name = "i", glow.output})
// CHECK: %[[E:.*]] = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
// CHECK: "glow_ir.element_exp"(%[[E]], %[[A]])
// CHECK: %[[V:.*]] = "glow_ir.tensor_view"(%[[E]]) : (memref<2x4xf32>) -> memref<4x2xf32>
// CHECK: %[[K:.*]] = memref.get_global @k
// CHECK: "glow_ir.insert_tensor"(%[[CAT]], %[[A]]) {roles = ["inout", "in"], start = array<i64: 0, 0>} : (memref<2x7xf32>, memref<2x4xf32>) -> ()
// CHECK: "glow_ir.insert_tensor"(%[[CAT]], %[[K]]) {roles = ["inout", "in"], start = array<i64: 0, 4>}
// CHECK: "glow_ir.insert_tensor"(%[[CAT]], %[[ONE:.*]]) {roles = ["inout", "in"], start = array<i64: 0, 6>} : (memref<2x7xf32>, memref<2x1xf32>) -> ()
// CHECK-NEXT: "glow_ir.dealloc_activation"(%[[ONE]])
// CHECK: "glow_ir.extract_tensor"(%[[S]], %[[V]]) {roles = ["out", "in"], start = array<i64: 1, 0>} : (memref<1x2xf32>, memref<4x2xf32>) -> ()
// CHECK: "glow_ir.copy"(%[[I]], %[[E]]) {roles = ["out", "in"]}
// CHECK-NEXT: "glow_ir.dealloc_activation"(%[[E]])
// CHECK-NEXT: "glow_ir.insert_tensor"(%[[I]], %[[S]]) {roles = ["inout", "in"], start = array<i64: 1, 2>}
// CHECK-NEXT: return
func.func @data_movement(%a: tensor<2x4xf32> {glow.name = "a"}) -> (tensor<2x7xf32> {glow.name = "cat"}, tensor<1x2xf32> {glow.name = "s"}, tensor<2x4xf32> {glow.name = "i"}) {
  %e = "glow.exp"(%a) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = "glow.reshape"(%e) {dims = array<i64: 4, 2>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %k = "glow.constant"() {value = dense<1.0> : tensor<2x2xf32>} : () -> tensor<2x2xf32> loc("k")
  %one = "glow.splat"() {value = 1.0 : f32} : () -> tensor<2x1xf32>
  %c = "glow.concat"(%a, %k, %one) {dim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<2x4xf32>, tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x7xf32>
  %s = "glow.slice"(%r) {start = array<i64: 1, 0>} : (tensor<4x2xf32>) -> tensor<1x2xf32>
  %i = "glow.insert_tensor"(%e, %s) {start = array<i64: 1, 2>} : (tensor<2x4xf32>, tensor<1x2xf32>) -> tensor<2x4xf32>
  return %c, %s, %i : tensor<2x7xf32>, tensor<1x2xf32>, tensor<2x4xf32>
}

// Returned values that cannot be computed in place are copied into their outputs: an input, a constant,
// a view, and the second return of one value.
// CHECK-LABEL: func.func @copies
// CHECK-SAME: (%[[A:.*]]: memref<2x4xf32> {glow.name = "a"}, %[[O1:.*]]: memref<2x4xf32> {glow.name = "input", glow.output}, %[[O2:.*]]: memref<2x4xf32> {glow.name = "const", glow.output}, %[[O3:.*]]: memref<8xf32> {glow.name = "view", glow.output}, %[[O4:.*]]: memref<2x4xf32> {glow.name = "twice1", glow.output}, %[[O5:.*]]: memref<2x4xf32> {glow.name = "twice2", glow.output})
// CHECK: %[[G:.*]] = memref.get_global @c
// CHECK: %[[E:.*]] = "glow_ir.alloc_activation"() : () -> memref<2x4xf32>
// CHECK: "glow_ir.element_exp"(%[[E]], %[[A]])
// CHECK: %[[V:.*]] = "glow_ir.tensor_view"(%[[E]]) : (memref<2x4xf32>) -> memref<8xf32>
// CHECK: "glow_ir.sigmoid"(%[[O4]], %[[A]])
// CHECK: "glow_ir.copy"(%[[O1]], %[[A]])
// CHECK: "glow_ir.copy"(%[[O2]], %[[G]])
// CHECK: "glow_ir.copy"(%[[O3]], %[[V]])
// CHECK-NEXT: "glow_ir.dealloc_activation"(%[[E]])
// CHECK-NEXT: "glow_ir.copy"(%[[O5]], %[[O4]])
// CHECK-NEXT: return
func.func @copies(%a: tensor<2x4xf32> {glow.name = "a"}) -> (tensor<2x4xf32> {glow.name = "input"}, tensor<2x4xf32> {glow.name = "const"}, tensor<8xf32> {glow.name = "view"}, tensor<2x4xf32> {glow.name = "twice1"}, tensor<2x4xf32> {glow.name = "twice2"}) {
  %c = "glow.constant"() {value = dense<3.0> : tensor<2x4xf32>} : () -> tensor<2x4xf32> loc("c")
  %e = "glow.exp"(%a) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = "glow.reshape"(%e) {dims = array<i64: 8>} : (tensor<2x4xf32>) -> tensor<8xf32>
  %s = "glow.sigmoid"(%a) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %a, %c, %r, %s, %s : tensor<2x4xf32>, tensor<2x4xf32>, tensor<8xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
