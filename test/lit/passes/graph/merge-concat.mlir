// glow-merge-concat flattens concats of concats and slices through concats.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-merge-concat,glow-verify)' | FileCheck %s

// CHECK-LABEL: func.func @flatten
// CHECK: %[[C:.*]] = "glow.concat"(%arg0, %arg1, %arg0, %arg1) {dim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>}
// CHECK-NOT: glow.concat
// CHECK: return %[[C]]
func.func @flatten(%a: tensor<2x1xf32> {glow.name = "a"}, %b: tensor<2x2xf32> {glow.name = "b"}) -> (tensor<2x6xf32> {glow.name = "y"}) {
  %i = "glow.concat"(%a, %b) {dim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<2x1xf32>, tensor<2x2xf32>) -> tensor<2x3xf32>
  %j = "glow.concat"(%i, %a, %b) {dim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
  return %j : tensor<2x6xf32>
}

// Flattening would need 9 runs of equal-typed inputs (a glow.concat holds 8): the inner concat stays.
// CHECK-LABEL: func.func @run_limit
// CHECK: %[[I:.*]] = "glow.concat"(%arg0, %arg1)
// CHECK: "glow.concat"(%[[I]], %arg0, %arg1, %arg0, %arg1, %arg0, %arg1, %arg0)
func.func @run_limit(%a: tensor<1x1xf32> {glow.name = "a"}, %b: tensor<1x2xf32> {glow.name = "b"}) -> (tensor<1x13xf32> {glow.name = "y"}) {
  %i = "glow.concat"(%a, %b) {dim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<1x1xf32>, tensor<1x2xf32>) -> tensor<1x3xf32>
  %j = "glow.concat"(%i, %a, %b, %a, %b, %a, %b, %a) {dim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1>} : (tensor<1x3xf32>, tensor<1x1xf32>, tensor<1x2xf32>, tensor<1x1xf32>, tensor<1x2xf32>, tensor<1x1xf32>, tensor<1x2xf32>, tensor<1x1xf32>) -> tensor<1x13xf32>
  return %j : tensor<1x13xf32>
}

// A slice that is exactly one input is that input; one inside an input slices that input; one across two
// inputs stays.
// CHECK-LABEL: func.func @slices
// CHECK: %[[C:.*]] = "glow.concat"
// CHECK: %[[S:.*]] = "glow.slice"(%arg1) {start = array<i64: 1, 0>} : (tensor<3x2xi8>) -> tensor<2x2xi8>
// CHECK: %[[X:.*]] = "glow.slice"(%[[C]]) {start = array<i64: 1, 0>} : (tensor<5x2xi8>) -> tensor<2x2xi8>
// CHECK: return %arg1, %[[S]], %[[X]]
func.func @slices(%a: tensor<2x2xi8> {glow.name = "a"}, %b: tensor<3x2xi8> {glow.name = "b"}) -> (tensor<3x2xi8> {glow.name = "whole"}, tensor<2x2xi8> {glow.name = "inside"}, tensor<2x2xi8> {glow.name = "across"}) {
  %c = "glow.concat"(%a, %b) {dim = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<2x2xi8>, tensor<3x2xi8>) -> tensor<5x2xi8>
  %whole = "glow.slice"(%c) {start = array<i64: 2, 0>} : (tensor<5x2xi8>) -> tensor<3x2xi8>
  %inside = "glow.slice"(%c) {start = array<i64: 3, 0>} : (tensor<5x2xi8>) -> tensor<2x2xi8>
  %across = "glow.slice"(%c) {start = array<i64: 1, 0>} : (tensor<5x2xi8>) -> tensor<2x2xi8>
  return %whole, %inside, %across : tensor<3x2xi8>, tensor<2x2xi8>, tensor<2x2xi8>
}
