// Element types follow the convention: well-typed functions pass, a comparison must give i1.
// RUN: not glow-opt %s --pass-pipeline='builtin.module(glow-verify)' 2>&1 | FileCheck %s

// CHECK-NOT: error
// CHECK: cmp1: error: 'glow.cmp_lt' result element type f32 must equal the type rule's i1
// CHECK-NOT: error

func.func @good_ints(%a: tensor<2x3xi64> {glow.name = "a"}, %b: tensor<3x4xi64> {glow.name = "b"}) -> (tensor<2x4xi1> {glow.name = "y"}) {
  %0 = "glow.matmul"(%a, %b) : (tensor<2x3xi64>, tensor<3x4xi64>) -> tensor<2x4xi64> loc("mm")
  %1 = "glow.splat"() {value = -3 : i64} : () -> tensor<2x4xi64> loc("three")
  %2 = "glow.div"(%0, %1) : (tensor<2x4xi64>, tensor<2x4xi64>) -> tensor<2x4xi64> loc("div")
  %3 = "glow.cmp_lte"(%2, %1) : (tensor<2x4xi64>, tensor<2x4xi64>) -> tensor<2x4xi1> loc("le")
  %4 = "glow.not"(%3) : (tensor<2x4xi1>) -> tensor<2x4xi1> loc("not")
  return %4 : tensor<2x4xi1>
}

func.func @good_floats(%x: tensor<2x3xf16> {glow.name = "x"}) -> (tensor<3xf16> {glow.name = "y"}, tensor<2x3xi32> {glow.name = "z"}) {
  %0 = "glow.erf"(%x) : (tensor<2x3xf16>) -> tensor<2x3xf16> loc("erf")
  %1 = "glow.batched_reduce_add"(%0) {axes = array<i64: 0>} : (tensor<2x3xf16>) -> tensor<3xf16> loc("sum")
  %2 = "glow.convert_to"(%x) : (tensor<2x3xf16>) -> tensor<2x3xi32> loc("cast")
  return %1, %2 : tensor<3xf16>, tensor<2x3xi32>
}

func.func @bad_compare(%a: tensor<4xf32> {glow.name = "a"}, %b: tensor<4xf32> {glow.name = "b"}) -> (tensor<4xf32> {glow.name = "y"}) {
  %0 = "glow.cmp_lt"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("cmp1")
  return %0 : tensor<4xf32>
}
