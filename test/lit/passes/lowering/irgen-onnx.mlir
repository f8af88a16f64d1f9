// glow-irgen on the ops for ONNX coverage and element types other than f32: memrefs keep the tensors'
// element types, constants of any type (i1 included) become globals, attributes are kept, pads are not.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-irgen)' | FileCheck %s

// CHECK: memref.global "private" constant @mask : memref<2x3xi1> = dense<{{\[\[}}true, false, true], [false, false, true]]> {alignment = 64 : i64}
// CHECK: memref.global "private" constant @half : memref<2x3xf16> = dense<5.000000e-01> {alignment = 64 : i64}
// CHECK: memref.global "private" constant @idx : memref<2xi64> = dense<[2, -1]> {alignment = 64 : i64}

// CHECK-LABEL: func.func @typed
// CHECK-SAME: (%[[F:.*]]: memref<2x3xf32> {glow.name = "f"}, %[[K:.*]]: memref<2x3xi32> {glow.name = "k"}, %[[Y:.*]]: memref<2x2xf32> {glow.name = "y", glow.output}, %[[Z:.*]]: memref<2x1xi64> {glow.name = "z", glow.output}, %[[C:.*]]: memref<2x3xi1> {glow.name = "c", glow.output})
// CHECK-NOT: tensor<
// CHECK: %[[I:.*]] = "glow_ir.alloc_activation"() : () -> memref<2x3xi32>
// CHECK: "glow_ir.convert_to"(%[[I]], %[[F]]) {roles = ["out", "in"]} : (memref<2x3xi32>, memref<2x3xf32>) -> ()
// CHECK: %[[LT:.*]] = "glow_ir.alloc_activation"() : () -> memref<2x3xi1>
// CHECK: "glow_ir.element_cmp_lt"(%[[LT]], %[[I]], %[[K]]) {roles = ["out", "in", "in"]}
// CHECK: %[[MASK:.*]] = memref.get_global @mask : memref<2x3xi1>
// CHECK: %[[AND:.*]] = "glow_ir.alloc_activation"() : () -> memref<2x3xi1>
// CHECK: "glow_ir.element_and"(%[[AND]], %[[LT]], %[[MASK]])
// CHECK: "glow_ir.element_not"(%[[C]], %[[AND]])
// CHECK: %[[HALF:.*]] = memref.get_global @half : memref<2x3xf16>
// CHECK: %[[H:.*]] = "glow_ir.alloc_activation"() : () -> memref<2x3xf32>
// CHECK: "glow_ir.convert_to"(%[[H]], %[[HALF]]) {roles = ["out", "in"]} : (memref<2x3xf32>, memref<2x3xf16>) -> ()
// CHECK: %[[SEL:.*]] = "glow_ir.alloc_activation"() : () -> memref<2x3xf32>
// CHECK: "glow_ir.element_select"(%[[SEL]], %[[C]], %[[F]], %[[H]]) {roles = ["out", "in", "in", "in"]}
// CHECK: %[[IDX:.*]] = memref.get_global @idx : memref<2xi64>
// CHECK: "glow_ir.gather"(%[[Y]], %[[SEL]], %[[IDX]]) {axis = 1 : i64, roles = ["out", "in", "in"]}
// CHECK: "glow_ir.arg_max"(%[[Z]], %[[K]]) {axis = 1 : i64, keepDims = true, roles = ["out", "in"]}
// CHECK: return
func.func @typed(%f: tensor<2x3xf32> {glow.name = "f"}, %k: tensor<2x3xi32> {glow.name = "k"})
    -> (tensor<2x2xf32> {glow.name = "y"}, tensor<2x1xi64> {glow.name = "z"}, tensor<2x3xi1> {glow.name = "c"}) {
  %i = "glow.convert_to"(%f) : (tensor<2x3xf32>) -> tensor<2x3xi32>
  %lt = "glow.cmp_lt"(%i, %k) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %mask = "glow.constant"() {value = dense<[[true, false, true], [false, false, true]]> : tensor<2x3xi1>} : () -> tensor<2x3xi1> loc("mask")
  %and = "glow.and"(%lt, %mask) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %not = "glow.not"(%and) : (tensor<2x3xi1>) -> tensor<2x3xi1>
  %half = "glow.constant"() {value = dense<0.5> : tensor<2x3xf16>} : () -> tensor<2x3xf16> loc("half")
  %h = "glow.convert_to"(%half) : (tensor<2x3xf16>) -> tensor<2x3xf32>
  %sel = "glow.select"(%not, %f, %h) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %idx = "glow.constant"() {value = dense<[2, -1]> : tensor<2xi64>} : () -> tensor<2xi64> loc("idx")
  %y = "glow.gather"(%sel, %idx) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  %z = "glow.arg_max"(%k) {axis = 1 : i64, keepDims = true} : (tensor<2x3xi32>) -> tensor<2x1xi64>
  return %y, %z, %not : tensor<2x2xf32>, tensor<2x1xi64>, tensor<2x3xi1>
}

// CHECK-LABEL: func.func @math
// CHECK: "glow_ir.element_pow"
// CHECK: "glow_ir.element_log"
// CHECK: "glow_ir.element_abs"
// CHECK: "glow_ir.element_neg"
// CHECK: "glow_ir.element_floor"
// CHECK: "glow_ir.element_ceil"
// CHECK: "glow_ir.element_round"
// CHECK: "glow_ir.element_erf"
// CHECK: "glow_ir.element_sin"
// CHECK: "glow_ir.element_cos"
// CHECK: "glow_ir.element_cmp_eq"
// CHECK: "glow_ir.element_cmp_neq"
// CHECK: "glow_ir.element_cmp_lte"
// CHECK: "glow_ir.element_or"
// CHECK: "glow_ir.element_xor"
func.func @math(%a: tensor<4xf32> {glow.name = "a"}) -> (tensor<4xf32> {glow.name = "y"}, tensor<4xi1> {glow.name = "b"}) {
  %0 = "glow.pow"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "glow.log"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "glow.abs"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "glow.neg"(%2) : (tensor<4xf32>) -> tensor<4xf32>
  %4 = "glow.floor"(%3) : (tensor<4xf32>) -> tensor<4xf32>
  %5 = "glow.ceil"(%4) : (tensor<4xf32>) -> tensor<4xf32>
  %6 = "glow.round"(%5) : (tensor<4xf32>) -> tensor<4xf32>
  %7 = "glow.erf"(%6) : (tensor<4xf32>) -> tensor<4xf32>
  %8 = "glow.sin"(%7) : (tensor<4xf32>) -> tensor<4xf32>
  %9 = "glow.cos"(%8) : (tensor<4xf32>) -> tensor<4xf32>
  %e = "glow.cmp_eq"(%9, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %n = "glow.cmp_neq"(%9, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %l = "glow.cmp_lte"(%9, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %o = "glow.or"(%e, %n) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %x = "glow.xor"(%o, %l) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %9, %x : tensor<4xf32>, tensor<4xi1>
}

// CHECK-LABEL: func.func @shapes
// CHECK: "glow_ir.batched_reduce_add"(%{{.*}}, %{{.*}}) {axes = array<i64: 0, 2>, roles = ["out", "in"]} : (memref<3xf32>, memref<2x3x4xf32>) -> ()
// CHECK: "glow_ir.batched_reduce_max"({{.*}}) {axes = array<i64: 1>
// CHECK: "glow_ir.batched_reduce_min"({{.*}}) {axes = array<i64: 1>
// CHECK: "glow_ir.batched_reduce_prod"({{.*}}) {axes = array<i64: 1>
// CHECK: "glow_ir.arg_min"({{.*}}) {axis = 2 : i64, keepDims = false
// CHECK: "glow_ir.batch_matmul"({{.*}}) {roles = ["out", "in", "in"]} : (memref<2x3x3xf32>, memref<2x3x4xf32>, memref<2x4x3xf32>) -> ()
// The (already unpadded) transposed convolution keeps every attribute but pads.
// CHECK: "glow_ir.conv_transpose"({{.*}}) {dilation = array<i64: 1, 1>, group = 2 : i64, kernels = array<i64: 2, 2>, roles = ["out", "in", "in", "in"], strides = array<i64: 2, 2>} : (memref<1x4x6x8xf32>, memref<1x2x3x4xf32>, memref<2x2x2x2xf32>, memref<4xf32>) -> ()
func.func @shapes(%x: tensor<2x3x4xf32> {glow.name = "x"}, %t: tensor<2x4x3xf32> {glow.name = "t"},
                  %c: tensor<1x2x3x4xf32> {glow.name = "c"}, %w: tensor<2x2x2x2xf32> {glow.name = "w"},
                  %b: tensor<4xf32> {glow.name = "b"})
    -> (tensor<3xf32> {glow.name = "s"}, tensor<2x4xf32> {glow.name = "mx"}, tensor<2x4xf32> {glow.name = "mn"},
        tensor<2x4xf32> {glow.name = "p"}, tensor<2x3xi64> {glow.name = "am"}, tensor<2x3x3xf32> {glow.name = "bm"},
        tensor<1x4x6x8xf32> {glow.name = "ct"}) {
  %s = "glow.batched_reduce_add"(%x) {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %mx = "glow.batched_reduce_max"(%x) {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %mn = "glow.batched_reduce_min"(%x) {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %p = "glow.batched_reduce_prod"(%x) {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %am = "glow.arg_min"(%x) {axis = 2 : i64, keepDims = false} : (tensor<2x3x4xf32>) -> tensor<2x3xi64>
  %bm = "glow.batch_matmul"(%x, %t) : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %ct = "glow.conv_transpose"(%c, %w, %b) {kernels = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, group = 2 : i64, dilation = array<i64: 1, 1>} : (tensor<1x2x3x4xf32>, tensor<2x2x2x2xf32>, tensor<4xf32>) -> tensor<1x4x6x8xf32>
  return %s, %mx, %mn, %p, %am, %bm, %ct : tensor<3xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x3xi64>, tensor<2x3x3xf32>, tensor<1x4x6x8xf32>
}
