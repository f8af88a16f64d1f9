// glow-schedule reorders ops so that the operand whose computation needs most memory runs first, and records
// the peak live activation bytes of both orders on the function.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-schedule)' | FileCheck %s

// Two branches built interleaved: program order keeps both 16 KiB intermediates alive at once (2 * 16384 +
// 256 bytes at the first matmul); the scheduler finishes one branch before starting the other (16384 + 2 * 256).
// CHECK-LABEL: func.func @branches
// CHECK-SAME: attributes {glow.schedule_peak_bytes = 16896 : i64, glow.topological_peak_bytes = 33024 : i64}
// CHECK: %[[A1:.*]] = "glow.exp"(%arg0)
// CHECK-NEXT: %[[W:.*]] = "glow.constant"
// CHECK-NEXT: %[[A2:.*]] = "glow.matmul"(%[[A1]], %[[W]])
// CHECK-NEXT: %[[B1:.*]] = "glow.tanh"(%arg0)
// CHECK-NEXT: %[[B2:.*]] = "glow.matmul"(%[[B1]], %[[W]])
// CHECK-NEXT: %[[Y:.*]] = "glow.add"(%[[A2]], %[[B2]])
// CHECK-NEXT: return %[[Y]]
func.func @branches(%x: tensor<64x64xf32> {glow.name = "x"}) -> (tensor<64x1xf32> {glow.name = "y"}) {
  %a1 = "glow.exp"(%x) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %b1 = "glow.tanh"(%x) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %w = "glow.constant"() {value = dense<0.5> : tensor<64x1xf32>} : () -> tensor<64x1xf32>
  %a2 = "glow.matmul"(%a1, %w) : (tensor<64x64xf32>, tensor<64x1xf32>) -> tensor<64x1xf32>
  %b2 = "glow.matmul"(%b1, %w) : (tensor<64x64xf32>, tensor<64x1xf32>) -> tensor<64x1xf32>
  %y = "glow.add"(%a2, %b2) : (tensor<64x1xf32>, tensor<64x1xf32>) -> tensor<64x1xf32>
  return %y : tensor<64x1xf32>
}

// Sizes follow element types (i8 and i1: one byte each); a reshape is a view and extends its source's life; a
// returned value lives in its output argument. Program order is kept when it is as good.
// CHECK-LABEL: func.func @types
// CHECK-SAME: attributes {glow.schedule_peak_bytes = 32 : i64, glow.topological_peak_bytes = 32 : i64}
// CHECK: "glow.neg"
// CHECK-NEXT: "glow.reshape"
// CHECK-NEXT: "glow.splat"
// CHECK-NEXT: "glow.cmp_lt"
func.func @types(%x: tensor<16xi8> {glow.name = "x"}) -> (tensor<4x4xi1> {glow.name = "y"}) {
  %n = "glow.neg"(%x) : (tensor<16xi8>) -> tensor<16xi8>
  %r = "glow.reshape"(%n) {dims = array<i64: 4, 4>} : (tensor<16xi8>) -> tensor<4x4xi8>
  %z = "glow.splat"() {value = 0 : i64} : () -> tensor<4x4xi8>
  %y = "glow.cmp_lt"(%r, %z) : (tensor<4x4xi8>, tensor<4x4xi8>) -> tensor<4x4xi1>
  return %y : tensor<4x4xi1>
}
