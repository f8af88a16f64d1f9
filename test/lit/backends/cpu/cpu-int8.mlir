// glow-cpu-int8 turns the quantizer's requantized int8 product (convert_to(q : i8 -> i32) minus its zero point,
// times constant int8-valued weights, to f32, times a per-column multiplier, plus a bias) into one
// glow.cpu_int8_matmul on weights packed for vpdpbusd ([ceil(N/16), ceil(K/4), 64]) with the per-column
// correction (128 + z) * colsum(W) = (128 - 3) * [1 + 3 + 5, 2 + 4 + 6] = [1125, 1500]; glow-ir-to-linalg
// lowers it to the vpdpbusd intrinsic. A product whose weights' columns span more than 255 stays as it is.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-int8,glow-verify)' | FileCheck %s
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-int8,glow-lower,glow-irgen,glow-allocate,glow-ir-to-linalg)' | FileCheck %s --check-prefix=KERNEL

// CHECK-LABEL: func.func @fc
// CHECK-NOT: glow.matmul
// Lane 0 holds column 0's four K bytes (1, 3, 5 and a zero pad), lane 1 column 1's; lanes 2-15 are padding.
// CHECK: %[[W:.*]] = "glow.constant"() {value = dense<{{\[\[\[}}1, 3, 5, 0, 2, 4, 6, 0, 0, {{.*}}> : tensor<1x1x64xi8>}
// CHECK: %[[C:.*]] = "glow.constant"() {value = dense<[1125, 1500]> : tensor<2xi32>}
// CHECK: %[[M:.*]] = "glow.constant"() {value = dense<[5.000000e-01, 2.500000e-01]> : tensor<2xf32>}
// CHECK: %[[B:.*]] = "glow.constant"() {value = dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>}
// CHECK: %[[Y:.*]] = "glow.cpu_int8_matmul"(%[[Q:.*]], %[[W]], %[[C]], %[[M]], %[[B]]) {clip = 0.000000e+00 : f32, output_scale = 0.000000e+00 : f32, output_zero = 0 : i64, relu = false} : (tensor<4x3xi8>, tensor<1x1x64xi8>, tensor<2xi32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// CHECK: return %[[Y]]
// KERNEL-LABEL: func.func @fc
// KERNEL: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// KERNEL-SAME: (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
func.func @fc(%q: tensor<4x3xi8> {glow.name = "q"}) -> (tensor<4x2xf32> {glow.name = "y"}) {
  %wide = "glow.convert_to"(%q) : (tensor<4x3xi8>) -> tensor<4x3xi32>
  %z = "glow.splat"() {value = -3 : i64} : () -> tensor<4x3xi32>
  %centred = "glow.sub"(%wide, %z) : (tensor<4x3xi32>, tensor<4x3xi32>) -> tensor<4x3xi32>
  %w = "glow.constant"() {value = dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>} : () -> tensor<3x2xi32>
  %acc = "glow.matmul"(%centred, %w) : (tensor<4x3xi32>, tensor<3x2xi32>) -> tensor<4x2xi32>
  %f = "glow.convert_to"(%acc) : (tensor<4x2xi32>) -> tensor<4x2xf32>
  %m = "glow.constant"() {value = dense<[0.5, 0.25]> : tensor<2xf32>} : () -> tensor<2xf32>
  %mb = "glow.broadcast"(%m) {axis = 1 : i64} : (tensor<2xf32>) -> tensor<4x2xf32>
  %scaled = "glow.mul"(%f, %mb) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %b = "glow.constant"() {value = dense<[1.0, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bb = "glow.broadcast"(%b) {axis = 1 : i64} : (tensor<2xf32>) -> tensor<4x2xf32>
  %y = "glow.add"(%scaled, %bb) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// MatMul's batch dims folded into its rows (ONNX's QLinearMatMul of a [B, S, K] activation): q is reshaped as
// the matmul read it, the product back as the requantization reads it.
// CHECK-LABEL: func.func @rows
// CHECK-NOT: glow.matmul
// CHECK: %[[Q:.*]] = "glow.reshape"(%arg0) {dims = array<i64: 4, 3>} : (tensor<1x4x3xi8>) -> tensor<4x3xi8>
// CHECK: %[[P:.*]] = "glow.cpu_int8_matmul"(%[[Q]], {{.*}}) {{.*}} -> tensor<4x2xf32>
// CHECK: %[[Y:.*]] = "glow.reshape"(%[[P]]) {dims = array<i64: 1, 4, 2>}
// CHECK: return %[[Y]]
func.func @rows(%q: tensor<1x4x3xi8> {glow.name = "q"}) -> (tensor<1x4x2xf32> {glow.name = "y"}) {
  %wide = "glow.convert_to"(%q) : (tensor<1x4x3xi8>) -> tensor<1x4x3xi32>
  %z = "glow.splat"() {value = -3 : i64} : () -> tensor<1x4x3xi32>
  %centred = "glow.sub"(%wide, %z) : (tensor<1x4x3xi32>, tensor<1x4x3xi32>) -> tensor<1x4x3xi32>
  %flat = "glow.reshape"(%centred) {dims = array<i64: 4, 3>} : (tensor<1x4x3xi32>) -> tensor<4x3xi32>
  %w = "glow.constant"() {value = dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>} : () -> tensor<3x2xi32>
  %acc = "glow.matmul"(%flat, %w) : (tensor<4x3xi32>, tensor<3x2xi32>) -> tensor<4x2xi32>
  %back = "glow.reshape"(%acc) {dims = array<i64: 1, 4, 2>} : (tensor<4x2xi32>) -> tensor<1x4x2xi32>
  %f = "glow.convert_to"(%back) : (tensor<1x4x2xi32>) -> tensor<1x4x2xf32>
  %m = "glow.constant"() {value = dense<[0.5, 0.25]> : tensor<2xf32>} : () -> tensor<2xf32>
  %mb = "glow.broadcast"(%m) {axis = 2 : i64} : (tensor<2xf32>) -> tensor<1x4x2xf32>
  %y = "glow.mul"(%f, %mb) : (tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  return %y : tensor<1x4x2xf32>
}

// An integer bias inside the accumulation (ONNX's QLinearConv: float32(acc + bias) x multiplier) is taken off the
// correction the kernel subtracts: zero point 3 times the filters' column sums (3, 7), minus the bias (5, -7).
// CHECK-LABEL: func.func @conv_bias
// CHECK: %[[C:.*]] = "glow.constant"() {value = dense<[4, 28]> : tensor<2xi32>}
// CHECK: "glow.cpu_int8_conv_nhwc"({{.*}}, %[[C]], {{.*}})
// CHECK-NOT: glow.convolution
func.func @conv_bias(%x: tensor<1x2x2x2xui8> {glow.name = "x"}) -> (tensor<1x2x2x2xf32> {glow.name = "y"}) {
  %wide = "glow.convert_to"(%x) : (tensor<1x2x2x2xui8>) -> tensor<1x2x2x2xf32>
  %z = "glow.splat"() {value = 3.0 : f32} : () -> tensor<1x2x2x2xf32>
  %centred = "glow.sub"(%wide, %z) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %w = "glow.constant"() {value = dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]]> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
  %b = "glow.constant"() {value = dense<[5.0, -7.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %acc = "glow.convolution"(%centred, %w, %b) {dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %m = "glow.constant"() {value = dense<[0.5, 0.25]> : tensor<2xf32>} : () -> tensor<2xf32>
  %mb = "glow.broadcast"(%m) {axis = 1 : i64} : (tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %y = "glow.mul"(%acc, %mb) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// uint8 weights less a zero point (MatMulInteger's) leave int8's range: column 0, [200, 3, 5], is int8 W - 73
// ([127, -70, -68]) plus its offset 73, which one more packed row holds as i32 bytes (column 1 fits: offset 0); the
// correction (128 - 3) * colsum is of the weights themselves, [26000, 0]. The kernel sums each row's bytes
// (vpdpbusd against ones, then across the lanes) for the offsets.
// CHECK-LABEL: func.func @uint8_weights
// Printed as hex: 127 -70 -68 0 -10 4 6 0, zeros, then row 1's 73 (0x49) and zeros.
// CHECK: %[[W:.*]] = "glow.constant"() {value = dense<"0x7FBABC00F6040600{{0+}}49{{0+}}"> : tensor<1x2x64xi8>}
// CHECK: %[[C:.*]] = "glow.constant"() {value = dense<[26000, 0]> : tensor<2xi32>}
// CHECK: "glow.cpu_int8_matmul"(%{{.*}}, %[[W]], %[[C]], {{.*}}) {{.*}} -> tensor<4x2xf32>
// KERNEL-LABEL: func.func @uint8_weights
// KERNEL: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// KERNEL: vector.reduction <add>
func.func @uint8_weights(%q: tensor<4x3xi8> {glow.name = "q"}) -> (tensor<4x2xf32> {glow.name = "y"}) {
  %wide = "glow.convert_to"(%q) : (tensor<4x3xi8>) -> tensor<4x3xi32>
  %z = "glow.splat"() {value = -3 : i64} : () -> tensor<4x3xi32>
  %centred = "glow.sub"(%wide, %z) : (tensor<4x3xi32>, tensor<4x3xi32>) -> tensor<4x3xi32>
  %w = "glow.constant"() {value = dense<[[200, -10], [3, 4], [5, 6]]> : tensor<3x2xi32>} : () -> tensor<3x2xi32>
  %acc = "glow.matmul"(%centred, %w) : (tensor<4x3xi32>, tensor<3x2xi32>) -> tensor<4x2xi32>
  %f = "glow.convert_to"(%acc) : (tensor<4x2xi32>) -> tensor<4x2xf32>
  %m = "glow.splat"() {value = 0.5 : f32} : () -> tensor<4x2xf32>
  %y = "glow.mul"(%f, %m) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// CHECK-LABEL: func.func @wide_weights
// CHECK-NOT: glow.cpu_int8_matmul
// CHECK: "glow.matmul"
func.func @wide_weights(%q: tensor<4x3xi8> {glow.name = "q"}) -> (tensor<4x2xf32> {glow.name = "y"}) {
  %wide = "glow.convert_to"(%q) : (tensor<4x3xi8>) -> tensor<4x3xi32>
  %w = "glow.constant"() {value = dense<[[1, 2], [3, 4], [5, 600]]> : tensor<3x2xi32>} : () -> tensor<3x2xi32>
  %acc = "glow.matmul"(%wide, %w) : (tensor<4x3xi32>, tensor<3x2xi32>) -> tensor<4x2xi32>
  %f = "glow.convert_to"(%acc) : (tensor<4x2xi32>) -> tensor<4x2xf32>
  %m = "glow.splat"() {value = 0.5 : f32} : () -> tensor<4x2xf32>
  %y = "glow.mul"(%f, %m) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// An imported QDQ product: DequantizeLinear of uint8 activations (zero point 3, scale 0.5) times weights folded
// from DequantizeLinear, here per column 2 * [1, -1, 127] and 0.25 * [127, 4, 0]: the int8 steps are recovered,
// the multiplier is 0.5 * [2, 0.25], the correction (0 + 3) * colsum = [381, 393] (uint8 needs no offset).
// CHECK-LABEL: func.func @qdq
// CHECK: %[[C:.*]] = "glow.constant"() {value = dense<[381, 393]> : tensor<2xi32>}
// CHECK: %[[M:.*]] = "glow.constant"() {value = dense<[1.000000e+00, 1.250000e-01]> : tensor<2xf32>}
// CHECK: "glow.cpu_int8_matmul"(%arg0, %{{.*}}, %[[C]], %[[M]], %{{.*}}) {{{.*}}} : (tensor<4x3xui8>
func.func @qdq(%q: tensor<4x3xui8> {glow.name = "q"}) -> (tensor<4x2xf32> {glow.name = "y"}) {
  %wide = "glow.convert_to"(%q) : (tensor<4x3xui8>) -> tensor<4x3xf32>
  %z = "glow.splat"() {value = 3.0 : f32} : () -> tensor<4x3xf32>
  %centred = "glow.sub"(%wide, %z) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %s = "glow.splat"() {value = 0.5 : f32} : () -> tensor<4x3xf32>
  %x = "glow.mul"(%centred, %s) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %w = "glow.constant"() {value = dense<[[2.0, 31.75], [-2.0, 1.0], [254.0, 0.0]]> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  %y = "glow.matmul"(%x, %w) : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// The same product of a [1, 4, 3] activation whose rows the matmul reads through a reshape (a transformer's
// [B, S, K] tokens): q is reshaped as the matmul read it.
// CHECK-LABEL: func.func @qdq_rows
// CHECK-NOT: glow.matmul
// CHECK: %[[Q:.*]] = "glow.reshape"(%arg0) {dims = array<i64: 4, 3>} : (tensor<1x4x3xui8>) -> tensor<4x3xui8>
// CHECK: "glow.cpu_int8_matmul"(%[[Q]], {{.*}}) {{.*}} -> tensor<4x2xf32>
func.func @qdq_rows(%q: tensor<1x4x3xui8> {glow.name = "q"}) -> (tensor<4x2xf32> {glow.name = "y"}) {
  %wide = "glow.convert_to"(%q) : (tensor<1x4x3xui8>) -> tensor<1x4x3xf32>
  %z = "glow.splat"() {value = 3.0 : f32} : () -> tensor<1x4x3xf32>
  %centred = "glow.sub"(%wide, %z) : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
  %s = "glow.splat"() {value = 0.5 : f32} : () -> tensor<1x4x3xf32>
  %x = "glow.mul"(%centred, %s) : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
  %flat = "glow.reshape"(%x) {dims = array<i64: 4, 3>} : (tensor<1x4x3xf32>) -> tensor<4x3xf32>
  %w = "glow.constant"() {value = dense<[[2.0, 31.75], [-2.0, 1.0], [254.0, 0.0]]> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  %y = "glow.matmul"(%flat, %w) : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// A product whose result only feeds a relu and a uint8 QuantizeLinear (scale 0.25, zero point 130) computes
// that activation in its epilogue: one op with a uint8 result, the relu and the quantization chain gone.
// CHECK-LABEL: func.func @fused
// CHECK-NOT: glow.relu
// CHECK: %[[Y:.*]] = "glow.cpu_int8_matmul"({{.*}}) {clip = 0.000000e+00 : f32, output_scale = 2.500000e-01 : f32, output_zero = 130 : i64, relu = true} : ({{.*}}) -> tensor<4x2xui8>
// CHECK-NEXT: return %[[Y]]
func.func @fused(%q: tensor<4x3xi8> {glow.name = "q"}) -> (tensor<4x2xui8> {glow.name = "y"}) {
  %wide = "glow.convert_to"(%q) : (tensor<4x3xi8>) -> tensor<4x3xi32>
  %w = "glow.constant"() {value = dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>} : () -> tensor<3x2xi32>
  %acc = "glow.matmul"(%wide, %w) : (tensor<4x3xi32>, tensor<3x2xi32>) -> tensor<4x2xi32>
  %f = "glow.convert_to"(%acc) : (tensor<4x2xi32>) -> tensor<4x2xf32>
  %m = "glow.splat"() {value = 0.5 : f32} : () -> tensor<4x2xf32>
  %y = "glow.mul"(%f, %m) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %r = "glow.relu"(%y) : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %s = "glow.splat"() {value = 0.25 : f32} : () -> tensor<4x2xf32>
  %d = "glow.div"(%r, %s) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %n = "glow.round"(%d) : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %z = "glow.splat"() {value = 130.0 : f32} : () -> tensor<4x2xf32>
  %a = "glow.add"(%n, %z) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %lo = "glow.splat"() {value = 0.0 : f32} : () -> tensor<4x2xf32>
  %c1 = "glow.max"(%a, %lo) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %hi = "glow.splat"() {value = 255.0 : f32} : () -> tensor<4x2xf32>
  %c2 = "glow.min"(%c1, %hi) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %u = "glow.convert_to"(%c2) : (tensor<4x2xf32>) -> tensor<4x2xui8>
  return %u : tensor<4x2xui8>
}

// Dynamic quantization (onnxruntime's DynamicQuantizeLinear + MatMulInteger, quantize(dynamic=True)): the zero
// point and the scale are run-time rank-0 values, so they become operands of glow.cpu_int8_matmul_dynamic,
// whose correction operand is colsum(W) = [9, 12] and whose multiplier is the constant factor of the scale
// (s * 0.5); the reshapes around the 2-D matmul move to the uint8 activation and the f32 result.
// CHECK-LABEL: func.func @dynamic
// CHECK-NOT: glow.matmul
// CHECK: %[[Z:.*]] = "glow.convert_to"(%arg1) : (tensor<ui8>) -> tensor<i32>
// CHECK: %[[Q:.*]] = "glow.reshape"(%arg0) {dims = array<i64: 4, 3>} : (tensor<1x4x3xui8>) -> tensor<4x3xui8>
// CHECK: %[[C:.*]] = "glow.constant"() {value = dense<[9, 12]> : tensor<2xi32>}
// CHECK: %[[M:.*]] = "glow.constant"() {value = dense<5.000000e-01> : tensor<2xf32>}
// CHECK: %[[B:.*]] = "glow.constant"() {value = dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>}
// CHECK: %[[P:.*]] = "glow.cpu_int8_matmul_dynamic"(%[[Q]], %{{.*}}, %[[C]], %[[M]], %[[B]], %[[Z]], %arg2) {{{.*}}} : (tensor<4x3xui8>, tensor<1x1x64xi8>, tensor<2xi32>, tensor<2xf32>, tensor<2xf32>, tensor<i32>, tensor<f32>) -> tensor<4x2xf32>
// CHECK: %[[Y:.*]] = "glow.reshape"(%[[P]]) {dims = array<i64: 1, 4, 2>}
// CHECK: return %[[Y]]
// KERNEL-LABEL: func.func @dynamic
// KERNEL: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
func.func @dynamic(%q: tensor<1x4x3xui8> {glow.name = "q"}, %z: tensor<ui8> {glow.name = "z"}, %s: tensor<f32> {glow.name = "s"}) -> (tensor<1x4x2xf32> {glow.name = "y"}) {
  %zi = "glow.convert_to"(%z) : (tensor<ui8>) -> tensor<i32>
  %zb = "glow.broadcast"(%zi) {axis = 3 : i64} : (tensor<i32>) -> tensor<1x4x3xi32>
  %wide = "glow.convert_to"(%q) : (tensor<1x4x3xui8>) -> tensor<1x4x3xi32>
  %centred = "glow.sub"(%wide, %zb) : (tensor<1x4x3xi32>, tensor<1x4x3xi32>) -> tensor<1x4x3xi32>
  %rows = "glow.reshape"(%centred) {dims = array<i64: 4, 3>} : (tensor<1x4x3xi32>) -> tensor<4x3xi32>
  %w = "glow.constant"() {value = dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>} : () -> tensor<3x2xi32>
  %acc = "glow.matmul"(%rows, %w) : (tensor<4x3xi32>, tensor<3x2xi32>) -> tensor<4x2xi32>
  %back = "glow.reshape"(%acc) {dims = array<i64: 1, 4, 2>} : (tensor<4x2xi32>) -> tensor<1x4x2xi32>
  %f = "glow.convert_to"(%back) : (tensor<1x4x2xi32>) -> tensor<1x4x2xf32>
  %ws = "glow.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %m = "glow.mul"(%s, %ws) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %mb = "glow.broadcast"(%m) {axis = 3 : i64} : (tensor<f32>) -> tensor<1x4x2xf32>
  %scaled = "glow.mul"(%f, %mb) : (tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  %b = "glow.constant"() {value = dense<[1.0, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bb = "glow.broadcast"(%b) {axis = 2 : i64} : (tensor<2xf32>) -> tensor<1x4x2xf32>
  %y = "glow.add"(%scaled, %bb) : (tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  return %y : tensor<1x4x2xf32>
}

// A dynamically quantized convolution (onnxruntime's quantize_dynamic of a CNN: DynamicQuantizeLinear + ConvInteger):
// the correction z x colsum(W) (column sums 3, 7) and the multiplier s x 0.5 formed at run time, the padding a canvas
// of z.
// CHECK-LABEL: func.func @dynamic_conv
// CHECK-NOT: glow.convolution
// CHECK: %[[Z:.*]] = "glow.convert_to"(%arg1) : (tensor<ui8>) -> tensor<i32>
// CHECK: %[[ZV:.*]] = "glow.broadcast"(%[[Z]]) {axis = 1 : i64} : (tensor<i32>) -> tensor<2xi32>
// CHECK: %[[SUMS:.*]] = "glow.constant"() {value = dense<[3, 7]> : tensor<2xi32>}
// CHECK: %[[C:.*]] = "glow.mul"(%[[ZV]], %[[SUMS]])
// CHECK: %[[SV:.*]] = "glow.broadcast"(%arg2) {axis = 1 : i64} : (tensor<f32>) -> tensor<2xf32>
// CHECK: %[[M:.*]] = "glow.mul"(%[[SV]], {{.*}})
// CHECK: %[[CANVAS:.*]] = "glow.broadcast"(%arg1) {axis = 4 : i64} : (tensor<ui8>) -> tensor<1x4x4x2xui8>
// CHECK: %[[X:.*]] = "glow.insert_tensor"(%[[CANVAS]], {{.*}})
// CHECK: "glow.cpu_int8_conv_nhwc"(%[[X]], {{.*}}, %[[C]], %[[M]], {{.*}})
// KERNEL-LABEL: func.func @dynamic_conv
// KERNEL: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
func.func @dynamic_conv(%x: tensor<1x2x2x2xui8> {glow.name = "x"}, %z: tensor<ui8> {glow.name = "z"}, %s: tensor<f32> {glow.name = "s"}) -> (tensor<1x2x2x2xf32> {glow.name = "y"}) {
  %wide = "glow.convert_to"(%x) : (tensor<1x2x2x2xui8>) -> tensor<1x2x2x2xf64>
  %zf = "glow.convert_to"(%z) : (tensor<ui8>) -> tensor<f64>
  %zb = "glow.broadcast"(%zf) {axis = 4 : i64} : (tensor<f64>) -> tensor<1x2x2x2xf64>
  %centred = "glow.sub"(%wide, %zb) : (tensor<1x2x2x2xf64>, tensor<1x2x2x2xf64>) -> tensor<1x2x2x2xf64>
  %w = "glow.constant"() {value = dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]]> : tensor<2x2x1x1xf64>} : () -> tensor<2x2x1x1xf64>
  %b = "glow.constant"() {value = dense<0.0> : tensor<2xf64>} : () -> tensor<2xf64>
  %acc = "glow.convolution"(%centred, %w, %b) {dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x2x2xf64>, tensor<2x2x1x1xf64>, tensor<2xf64>) -> tensor<1x2x2x2xf64>
  %i = "glow.convert_to"(%acc) : (tensor<1x2x2x2xf64>) -> tensor<1x2x2x2xi32>
  %f = "glow.convert_to"(%i) : (tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xf32>
  %ws = "glow.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %m = "glow.mul"(%s, %ws) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %mb = "glow.broadcast"(%m) {axis = 4 : i64} : (tensor<f32>) -> tensor<1x2x2x2xf32>
  %y = "glow.mul"(%f, %mb) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// A dynamic quantization's range, a min or max over every axis, becomes the same reduction of the flat view
// along its one row (the CPU backend's vectorized row reduction); a reduction keeping an axis stays.
// CHECK-LABEL: func.func @extremes
// CHECK: %[[ROW:.*]] = "glow.reshape"(%arg0) {dims = array<i64: 1, 6>} : (tensor<2x3xf32>) -> tensor<1x6xf32>
// CHECK: %[[MAX:.*]] = "glow.batched_reduce_max"(%[[ROW]]) {axes = array<i64: 1>} : (tensor<1x6xf32>) -> tensor<1xf32>
// CHECK: %[[Y:.*]] = "glow.reshape"(%[[MAX]]) {dims = array<i64>} : (tensor<1xf32>) -> tensor<f32>
// CHECK: %[[KEPT:.*]] = "glow.batched_reduce_min"(%arg0) {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK: return %[[Y]], %[[KEPT]]
func.func @extremes(%x: tensor<2x3xf32> {glow.name = "x"}) -> (tensor<f32> {glow.name = "y"}, tensor<3xf32> {glow.name = "z"}) {
  %y = "glow.batched_reduce_max"(%x) {axes = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<f32>
  %z = "glow.batched_reduce_min"(%x) {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %y, %z : tensor<f32>, tensor<3xf32>
}

// A per-channel scale must run along the result's columns: s * m broadcast along the rows (axis 0) is not a
// per-column multiplier, and the product stays as it is.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK-NOT: glow.cpu_int8_matmul_dynamic
// CHECK: "glow.matmul"
func.func @dynamic_rows(%q: tensor<2x3xui8> {glow.name = "q"}, %z: tensor<i32> {glow.name = "z"}, %s: tensor<f32> {glow.name = "s"}) -> (tensor<2x2xf32> {glow.name = "y"}) {
  %zb = "glow.broadcast"(%z) {axis = 2 : i64} : (tensor<i32>) -> tensor<2x3xi32>
  %wide = "glow.convert_to"(%q) : (tensor<2x3xui8>) -> tensor<2x3xi32>
  %centred = "glow.sub"(%wide, %zb) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %w = "glow.constant"() {value = dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>} : () -> tensor<3x2xi32>
  %acc = "glow.matmul"(%centred, %w) : (tensor<2x3xi32>, tensor<3x2xi32>) -> tensor<2x2xi32>
  %f = "glow.convert_to"(%acc) : (tensor<2x2xi32>) -> tensor<2x2xf32>
  %sv = "glow.broadcast"(%s) {axis = 1 : i64} : (tensor<f32>) -> tensor<2xf32>
  %ws = "glow.constant"() {value = dense<[0.5, 0.25]> : tensor<2xf32>} : () -> tensor<2xf32>
  %m = "glow.mul"(%sv, %ws) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %mb = "glow.broadcast"(%m) {axis = 0 : i64} : (tensor<2xf32>) -> tensor<2x2xf32>
  %y = "glow.mul"(%f, %mb) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// An imported QDQ residual block (onnxruntime's quantize_static): add(DQ(Q(conv)), DQ(shortcut)) -> Q, the zero points
// of the relu'd activations 0 (no add in their QuantizeLinear). The convolution takes its Q -> DQ (product_scale),
// reads the uint8 shortcut as it is (addend_scale, addend_zero) and quantizes the sum: one op, uint8 in and out.
// CHECK-LABEL: func.func @qdq_residual
// CHECK-NOT: glow.add
// CHECK: %[[R:.*]] = "glow.transpose"(%arg1) {shuffle = array<i64: 0, 2, 3, 1>}
// CHECK: %[[Y:.*]] = "glow.cpu_int8_conv_nhwc_add"({{.*}}, %[[R]]) {addend_scale = 5.000000e-01 : f32, addend_zero = 10 : i64, clip = 0.000000e+00 : f32, dilation = array<i64: 1, 1>, kernels = array<i64: 1, 1>, output_scale = 5.000000e-01 : f32, output_zero = 3 : i64, product_scale = 2.500000e-01 : f32, product_zero = 0 : i64, relu = false, strides = array<i64: 1, 1>} : ({{.*}}, tensor<1x2x2x4xui8>) -> tensor<1x2x2x4xui8>
// CHECK-NOT: glow.round
// KERNEL-LABEL: func.func @qdq_residual
// KERNEL: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// KERNEL: math.roundeven
// KERNEL: arith.uitofp {{.*}} : vector<16xi8> to vector<16xf32>
func.func @qdq_residual(%x: tensor<1x4x2x2xui8> {glow.name = "x"}, %r: tensor<1x4x2x2xui8> {glow.name = "r"}) -> (tensor<1x4x2x2xui8> {glow.name = "y"}) {
  %xf = "glow.convert_to"(%x) : (tensor<1x4x2x2xui8>) -> tensor<1x4x2x2xf32>
  %xs = "glow.splat"() {value = 0.5 : f32} : () -> tensor<1x4x2x2xf32>
  %xd = "glow.mul"(%xf, %xs) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %w = "glow.constant"() {value = dense<[[[[127.0]], [[-1.0]], [[2.0]], [[3.0]]], [[[1.0]], [[127.0]], [[0.0]], [[-5.0]]], [[[-127.0]], [[4.0]], [[1.0]], [[0.0]]], [[[2.0]], [[2.0]], [[2.0]], [[127.0]]]]> : tensor<4x4x1x1xf32>} : () -> tensor<4x4x1x1xf32>
  %b = "glow.constant"() {value = dense<[1.0, 0.0, -1.0, 0.5]> : tensor<4xf32>} : () -> tensor<4xf32>
  %c = "glow.convolution"(%xd, %w, %b) {dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x2x2xf32>, tensor<4x4x1x1xf32>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
  %s1 = "glow.splat"() {value = 0.25 : f32} : () -> tensor<1x4x2x2xf32>
  %lo = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x4x2x2xf32>
  %hi = "glow.splat"() {value = 255.0 : f32} : () -> tensor<1x4x2x2xf32>
  %d1 = "glow.div"(%c, %s1) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %n1 = "glow.round"(%d1) : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %a1 = "glow.max"(%n1, %lo) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %b1 = "glow.min"(%a1, %hi) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %q1 = "glow.convert_to"(%b1) : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xui8>
  %f1 = "glow.convert_to"(%q1) : (tensor<1x4x2x2xui8>) -> tensor<1x4x2x2xf32>
  %p = "glow.mul"(%f1, %s1) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %rf = "glow.convert_to"(%r) : (tensor<1x4x2x2xui8>) -> tensor<1x4x2x2xf32>
  %rz = "glow.splat"() {value = 10.0 : f32} : () -> tensor<1x4x2x2xf32>
  %rc = "glow.sub"(%rf, %rz) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %rd = "glow.mul"(%rc, %xs) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %sum = "glow.add"(%p, %rd) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %d2 = "glow.div"(%sum, %xs) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %n2 = "glow.round"(%d2) : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %z2 = "glow.splat"() {value = 3.0 : f32} : () -> tensor<1x4x2x2xf32>
  %e2 = "glow.add"(%n2, %z2) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %a2 = "glow.max"(%e2, %lo) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %b2 = "glow.min"(%a2, %hi) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %y = "glow.convert_to"(%b2) : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xui8>
  return %y : tensor<1x4x2x2xui8>
}

// A max pool between an imported QDQ model's DequantizeLinear and a QuantizeLinear of the same scale and zero point
// pools the uint8 tensor itself (Q(max(DQ(q))) == max(q): both are monotone), windows clipped to the input.
// CHECK-LABEL: func.func @qdq_max_pool
// CHECK-NOT: glow.max_pool
// CHECK: %[[Q:.*]] = "glow.transpose"(%arg0) {shuffle = array<i64: 0, 2, 3, 1>}
// CHECK: "glow.cpu_max_pool_u8_nhwc"(%[[Q]]) {kernels = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x5x5x4xui8>) -> tensor<1x3x3x4xui8>
// CHECK-NOT: glow.round
// KERNEL-LABEL: func.func @qdq_max_pool
// KERNEL: arith.maxui {{.*}} : vector<64xi8>
func.func @qdq_max_pool(%q: tensor<1x4x5x5xui8> {glow.name = "q"}) -> (tensor<1x4x3x3xui8> {glow.name = "y"}) {
  %f = "glow.convert_to"(%q) : (tensor<1x4x5x5xui8>) -> tensor<1x4x5x5xf32>
  %z = "glow.splat"() {value = 7.0 : f32} : () -> tensor<1x4x5x5xf32>
  %c = "glow.sub"(%f, %z) : (tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  %s = "glow.splat"() {value = 0.5 : f32} : () -> tensor<1x4x5x5xf32>
  %x = "glow.mul"(%c, %s) : (tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  %p = "glow.max_pool"(%x) {kernels = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>) -> tensor<1x4x3x3xf32>
  %s2 = "glow.splat"() {value = 0.5 : f32} : () -> tensor<1x4x3x3xf32>
  %d = "glow.div"(%p, %s2) : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %n = "glow.round"(%d) : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %z2 = "glow.splat"() {value = 7.0 : f32} : () -> tensor<1x4x3x3xf32>
  %a = "glow.add"(%n, %z2) : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %lo = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x4x3x3xf32>
  %c1 = "glow.max"(%a, %lo) : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %hi = "glow.splat"() {value = 255.0 : f32} : () -> tensor<1x4x3x3xf32>
  %c2 = "glow.min"(%c1, %hi) : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %y = "glow.convert_to"(%c2) : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xui8>
  return %y : tensor<1x4x3x3xui8>
}

// A uint8 quantization that no epilogue takes becomes one cpu_quantize_u8 pass, in the graph's layout: the
// transposes glow-cpu-layout puts around a pool or float convolution computed in NHWC move through it (it is
// elementwise) in glow-sink-transpose, so that the uint8 result is what gets transposed where a transpose stays
// (a value computed from an NCHW input), not the f32 input (sink-transpose.mlir, @quantized_island).
// CHECK-LABEL: func.func @quantize_pool
// CHECK-NOT: glow.div
// CHECK-NOT: glow.transpose
// CHECK: %[[Q:.*]] = "glow.cpu_quantize_u8"(%{{.*}}) {output_scale = 5.000000e-01 : f32, output_zero = 3.000000e+00 : f32} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xui8>
// CHECK: return %[[Q]]
func.func @quantize_pool(%x: tensor<1x4x4x4xf32> {glow.name = "x"}) -> (tensor<1x4x2x2xui8> {glow.name = "y"}) {
  %p = "glow.avg_pool"(%x) {countIncludePads = true, kernels = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32>
  %r = "glow.relu"(%p) : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %s = "glow.splat"() {value = 0.5 : f32} : () -> tensor<1x4x2x2xf32>
  %d = "glow.div"(%r, %s) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %n = "glow.round"(%d) : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %z = "glow.splat"() {value = 3.0 : f32} : () -> tensor<1x4x2x2xf32>
  %a = "glow.add"(%n, %z) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %lo = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x4x2x2xf32>
  %c1 = "glow.max"(%a, %lo) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %hi = "glow.splat"() {value = 255.0 : f32} : () -> tensor<1x4x2x2xf32>
  %c2 = "glow.min"(%c1, %hi) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %u = "glow.convert_to"(%c2) : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xui8>
  return %u : tensor<1x4x2x2xui8>
}

// CHECK-LABEL: func.func @quantize_input
// CHECK-NOT: glow.transpose
// CHECK: %[[Q:.*]] = "glow.cpu_quantize_u8"(%{{.*}}) {output_scale = 5.000000e-01 : f32, output_zero = 3.000000e+00 : f32} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xui8>
// CHECK: return %[[Q]]
func.func @quantize_input(%x: tensor<1x4x2x2xf32> {glow.name = "x"}) -> (tensor<1x4x2x2xui8> {glow.name = "y"}) {
  %r = "glow.relu"(%x) : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %s = "glow.splat"() {value = 0.5 : f32} : () -> tensor<1x4x2x2xf32>
  %d = "glow.div"(%r, %s) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %n = "glow.round"(%d) : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %z = "glow.splat"() {value = 3.0 : f32} : () -> tensor<1x4x2x2xf32>
  %a = "glow.add"(%n, %z) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %lo = "glow.splat"() {value = 0.0 : f32} : () -> tensor<1x4x2x2xf32>
  %c1 = "glow.max"(%a, %lo) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %hi = "glow.splat"() {value = 255.0 : f32} : () -> tensor<1x4x2x2xf32>
  %c2 = "glow.min"(%c1, %hi) : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %u = "glow.convert_to"(%c2) : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xui8>
  return %u : tensor<1x4x2x2xui8>
}
