// glow-cpu-nbits turns glow.matmul_nbits (onnxruntime's MatMulNBits: W [K, N] as 4-bit values in blocks of 16
// along K, [N, blocks, 8] bytes) of an f32 activation and constant weights into glow.cpu_matmul_nbits on the
// kernel's packing: [ceil(N/16), bytes, 16] (lane l of byte row j is column l's byte j: column 0's bytes 0x21,
// 0x43 sit in lane 0 of rows 0 and 1, column 1's 0x65, 0x87 in lane 1; rows 2-7 the block's bytes past K = 4), scales and zero points
// [ceil(N/16), blocks, 16], 0 past N. glow-ir-to-linalg lowers it to a loop over K's bytes that zero-extends 16
// of them, shifts, masks and converts each 4-bit value and multiply-adds it (these 3 rows: into per-block sums,
// scaled once per block after the rows' sums of the block's activations). A product of a run-time weight stays
// as it is.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-nbits,glow-verify)' | FileCheck %s
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-nbits,glow-lower,glow-irgen,glow-allocate,glow-ir-to-linalg)' | FileCheck %s --check-prefix=KERNEL
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-nbits,glow-lower,glow-fuse-activations,glow-verify)' | FileCheck %s --check-prefix=FUSE

// CHECK-LABEL: func.func @decode
// CHECK-NOT: glow.matmul_nbits
// CHECK: %[[W:.*]] = "glow.constant"() {value = dense<"0x2165{{0+}}4387{{0+}}"> : tensor<1x8x16xui8>}
// CHECK: %[[S:.*]] = "glow.constant"() {value = dense<{{\[\[\[}}5.000000e-01, 2.500000e-01, 0.000000e+00, {{.*}}> : tensor<1x1x16xf32>}
// CHECK: %[[Z:.*]] = "glow.constant"() {value = dense<{{\[\[\[}}8.000000e+00, 7.000000e+00, 0.000000e+00, {{.*}}> : tensor<1x1x16xf32>}
// CHECK: %[[B:.*]] = "glow.constant"() {value = dense<0.000000e+00> : tensor<2xf32>}
// CHECK: %[[Y:.*]] = "glow.cpu_matmul_nbits"(%arg0, %[[W]], %[[S]], %[[Z]], %[[B]]) {activation = "none", activationArgs = array<f32>, bits = 4 : i64, columns = 2 : i64} : (tensor<3x4xf32>, tensor<1x8x16xui8>, tensor<1x1x16xf32>, tensor<1x1x16xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// CHECK: return %[[Y]]
// KERNEL-LABEL: func.func @decode
// KERNEL: vector.reduction <add>
// KERNEL: scf.for
// KERNEL: vector.load {{.*}} : memref<1x8x16xi8>, vector<16xi8>
// KERNEL: arith.extui {{.*}} : vector<16xi8> to vector<16xi32>
// KERNEL: arith.andi
// KERNEL: arith.sitofp {{.*}} : vector<16xi32> to vector<16xf32>
// KERNEL: math.fma
// KERNEL: arith.shrui
// The bias is added before the store.
// KERNEL: arith.addf
// KERNEL: vector.maskedstore
func.func @decode(%a: tensor<3x4xf32> {glow.name = "a"}) -> (tensor<3x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<[[[33, 67, 0, 0, 0, 0, 0, 0]], [[101, 135, 0, 0, 0, 0, 0, 0]]]> : tensor<2x1x8xui8>} : () -> tensor<2x1x8xui8>
  %s = "glow.constant"() {value = dense<[[0.5], [0.25]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
  %z = "glow.constant"() {value = dense<[[8.0], [7.0]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
  %y = "glow.matmul_nbits"(%a, %w, %s, %z) {bits = 4 : i64} : (tensor<3x4xf32>, tensor<2x1x8xui8>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// Zero points all equal (a symmetric export's 8) are one rank-0 constant.
// CHECK-LABEL: func.func @symmetric
// CHECK: %[[Z:.*]] = "glow.constant"() {value = dense<8.000000e+00> : tensor<f32>}
// CHECK: "glow.cpu_matmul_nbits"(%arg0, %{{.*}}, %{{.*}}, %[[Z]], %{{.*}}) {{.*}} : (tensor<3x4xf32>, tensor<1x8x16xui8>, tensor<1x1x16xf32>, tensor<f32>, tensor<2xf32>) -> tensor<3x2xf32>
// KERNEL-LABEL: func.func @symmetric
// KERNEL: memref.load {{.*}} : memref<f32>
// KERNEL: vector.broadcast
func.func @symmetric(%a: tensor<3x4xf32> {glow.name = "a"}) -> (tensor<3x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<[[[33, 67, 0, 0, 0, 0, 0, 0]], [[101, 135, 0, 0, 0, 0, 0, 0]]]> : tensor<2x1x8xui8>} : () -> tensor<2x1x8xui8>
  %s = "glow.constant"() {value = dense<[[0.5], [0.25]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
  %z = "glow.splat"() {value = 8.0 : f32} : () -> tensor<2x1xf32>
  %y = "glow.matmul_nbits"(%a, %w, %s, %z) {bits = 4 : i64} : (tensor<3x4xf32>, tensor<2x1x8xui8>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// A bias add (broadcast along the rows) and a relu after the product fold into it: bias [1, 2] + [0, 0].
// FUSE-LABEL: func.func @bias_relu
// FUSE-NOT: glow.add
// FUSE: %[[B:.*]] = "glow.constant"() {value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>}
// FUSE: %[[Y:.*]] = "glow.cpu_matmul_nbits"(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[B]]) {activation = "relu", {{.*}}}
// FUSE-NOT: glow.max
// FUSE: return %[[Y]]
func.func @bias_relu(%a: tensor<3x4xf32> {glow.name = "a"}) -> (tensor<3x2xf32> {glow.name = "y"}) {
  %w = "glow.constant"() {value = dense<[[[33, 67, 0, 0, 0, 0, 0, 0]], [[101, 135, 0, 0, 0, 0, 0, 0]]]> : tensor<2x1x8xui8>} : () -> tensor<2x1x8xui8>
  %s = "glow.constant"() {value = dense<[[0.5], [0.25]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
  %z = "glow.splat"() {value = 8.0 : f32} : () -> tensor<2x1xf32>
  %y = "glow.matmul_nbits"(%a, %w, %s, %z) {bits = 4 : i64} : (tensor<3x4xf32>, tensor<2x1x8xui8>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<3x2xf32>
  %b = "glow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bb = "glow.broadcast"(%b) {axis = 1 : i64} : (tensor<2xf32>) -> tensor<3x2xf32>
  %sum = "glow.add"(%y, %bb) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %r = "glow.relu"(%sum) : (tensor<3x2xf32>) -> tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @runtime_weight
// CHECK: glow.matmul_nbits
// CHECK-NOT: glow.cpu_matmul_nbits
func.func @runtime_weight(%a: tensor<3x4xf32> {glow.name = "a"}, %w: tensor<2x1x8xui8> {glow.name = "w"}) -> (tensor<3x2xf32> {glow.name = "y"}) {
  %s = "glow.constant"() {value = dense<[[0.5], [0.25]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
  %z = "glow.splat"() {value = 8.0 : f32} : () -> tensor<2x1xf32>
  %y = "glow.matmul_nbits"(%a, %w, %s, %z) {bits = 4 : i64} : (tensor<3x4xf32>, tensor<2x1x8xui8>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}
