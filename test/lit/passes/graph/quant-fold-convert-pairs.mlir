// glow-quant-fold-convert-pairs removes convert_to(convert_to(x: T -> W) -> T) where W holds every value of T
// (int8 -> f32 -> int8, f16 -> f32 -> f16, bf16 -> f32 -> bf16), and keeps a narrowing round trip but of a
// float that is an integer in the integer type's range (a QuantizeLinear's clamp of a rounded value).
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-quant-fold-convert-pairs)' | FileCheck %s

// CHECK-LABEL: func.func @exact
// CHECK-NOT: glow.convert_to
// CHECK: return %arg0, %arg1, %arg2
func.func @exact(%q: tensor<4xi8> {glow.name = "q"}, %h: tensor<4xf16> {glow.name = "h"}, %b: tensor<4xbf16> {glow.name = "b"})
    -> (tensor<4xi8> {glow.name = "q2"}, tensor<4xf16> {glow.name = "h2"}, tensor<4xbf16> {glow.name = "b2"}) {
  %0 = "glow.convert_to"(%q) : (tensor<4xi8>) -> tensor<4xf32>
  %1 = "glow.convert_to"(%0) : (tensor<4xf32>) -> tensor<4xi8>
  %2 = "glow.convert_to"(%h) : (tensor<4xf16>) -> tensor<4xf32>
  %3 = "glow.convert_to"(%2) : (tensor<4xf32>) -> tensor<4xf16>
  %4 = "glow.convert_to"(%b) : (tensor<4xbf16>) -> tensor<4xf32>
  %5 = "glow.convert_to"(%4) : (tensor<4xf32>) -> tensor<4xbf16>
  return %1, %3, %5 : tensor<4xi8>, tensor<4xf16>, tensor<4xbf16>
}

// The inner conversion stays while something else uses it.
// CHECK-LABEL: func.func @shared
// CHECK: %[[W:.*]] = "glow.convert_to"(%arg0) : (tensor<4xi8>) -> tensor<4xf32>
// CHECK-NOT: glow.convert_to
// CHECK: return %arg0, %[[W]]
func.func @shared(%q: tensor<4xi8> {glow.name = "q"}) -> (tensor<4xi8> {glow.name = "a"}, tensor<4xf32> {glow.name = "b"}) {
  %0 = "glow.convert_to"(%q) : (tensor<4xi8>) -> tensor<4xf32>
  %1 = "glow.convert_to"(%0) : (tensor<4xf32>) -> tensor<4xi8>
  return %1, %0 : tensor<4xi8>, tensor<4xf32>
}

// Narrowing first loses values: f32 -> f16 -> f32, i32 -> f32 -> i32 and i64 -> f64 -> i64 (53 bits of
// significand; numpy calls that cast safe) are kept.
// CHECK-LABEL: func.func @lossy
// CHECK-COUNT-6: glow.convert_to
func.func @lossy(%x: tensor<4xf32> {glow.name = "x"}, %i: tensor<4xi32> {glow.name = "i"}, %l: tensor<4xi64> {glow.name = "l"}) -> (tensor<4xf32> {glow.name = "a"}, tensor<4xi32> {glow.name = "b"}, tensor<4xi64> {glow.name = "c"}) {
  %0 = "glow.convert_to"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  %1 = "glow.convert_to"(%0) : (tensor<4xf16>) -> tensor<4xf32>
  %2 = "glow.convert_to"(%i) : (tensor<4xi32>) -> tensor<4xf32>
  %3 = "glow.convert_to"(%2) : (tensor<4xf32>) -> tensor<4xi32>
  %4 = "glow.convert_to"(%l) : (tensor<4xi64>) -> tensor<4xf64>
  %5 = "glow.convert_to"(%4) : (tensor<4xf64>) -> tensor<4xi64>
  return %1, %3, %5 : tensor<4xf32>, tensor<4xi32>, tensor<4xi64>
}

// A QuantizeLinear (round, zero point, clamp to int8) read straight back by a DequantizeLinear: the clamped
// float is an int8 value, so f32 -> i8 -> f32 goes. Not so for a clamp past int8's range or of an unrounded value.
// CHECK-LABEL: func.func @quantized
// CHECK:         %[[Q:.*]] = "glow.min"
// CHECK:         %[[WIDE:.*]] = "glow.min"
// CHECK:         %[[FRACTION:.*]] = "glow.min"
// CHECK-NOT:     "glow.convert_to"(%[[Q]])
// CHECK:         "glow.convert_to"(%[[WIDE]]) : (tensor<4xf32>) -> tensor<4xi8>
// CHECK:         "glow.convert_to"(%[[FRACTION]]) : (tensor<4xf32>) -> tensor<4xi8>
// CHECK:         return %[[Q]],
func.func @quantized(%x: tensor<4xf32> {glow.name = "x"}) -> (tensor<4xf32> {glow.name = "a"}, tensor<4xf32> {glow.name = "b"}, tensor<4xf32> {glow.name = "c"}) {
  %r = "glow.round"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %z = "glow.splat"() {value = -3.0 : f32} : () -> tensor<4xf32>
  %s = "glow.add"(%r, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %lo = "glow.splat"() {value = -128.0 : f32} : () -> tensor<4xf32>
  %hi = "glow.splat"() {value = 127.0 : f32} : () -> tensor<4xf32>
  %big = "glow.splat"() {value = 300.0 : f32} : () -> tensor<4xf32>
  %m = "glow.max"(%s, %lo) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %q = "glow.min"(%m, %hi) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %wide = "glow.min"(%m, %big) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %mx = "glow.max"(%x, %lo) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %fraction = "glow.min"(%mx, %hi) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %0 = "glow.convert_to"(%q) : (tensor<4xf32>) -> tensor<4xi8>
  %1 = "glow.convert_to"(%0) : (tensor<4xi8>) -> tensor<4xf32>
  %2 = "glow.convert_to"(%wide) : (tensor<4xf32>) -> tensor<4xi8>
  %3 = "glow.convert_to"(%2) : (tensor<4xi8>) -> tensor<4xf32>
  %4 = "glow.convert_to"(%fraction) : (tensor<4xf32>) -> tensor<4xi8>
  %5 = "glow.convert_to"(%4) : (tensor<4xi8>) -> tensor<4xf32>
  return %1, %3, %5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
