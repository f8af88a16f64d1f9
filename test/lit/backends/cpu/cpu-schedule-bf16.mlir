// glow-cpu-schedule on the native bf16 products (backends/cpu/bf16_recipes.py): a matmul and a CPU
// convolution on bf16 factors with f32 results and constant weights run as vdpbf16ps kernels
// (x86vector.avx512.dot) on weights packed pair-interleaved into [ceil(O / 16 nv)][KH * KW * ceil(C / 2)][nv][32]
// (nv: the register tile's vectors): the matmul's 40 x 20 weights as 1 x 20 x 2 x 32, the convolution's
// 3 x 3 x 5 x 8 filter as 1 x 27 x 1 x 32 (C = 5:
// three pairs per window position, the last one [x, 0], an interleave with zero). The convolution starts
// from its bias and its ReLU stays an elementwise kernel; each kernel is a private function (one per
// shape), called in the product's place, and no linalg product is left.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-DAG: memref.global "private" constant @__glow_bf16_packed_1x20x2x32 : memref<1x20x2x32xbf16>
// CHECK-DAG: memref.global "private" constant @__glow_bf16_packed_1x27x1x32 : memref<1x27x1x32xbf16>

// CHECK-LABEL: func.func @products(
// CHECK-NOT:     linalg.matmul
// CHECK:         call @[[MATMUL:__glow_bf16_[0-9a-f]+]](%arg0, %{{.*}}, %arg2) : (memref<6x40xbf16>, memref<1x20x2x32xbf16>, memref<6x20xf32>) -> ()
// CHECK-NOT:     linalg.conv
// CHECK:         call @[[CONV:__glow_bf16_[0-9a-f]+]](%arg1, %{{.*}}, %{{.*}}, %arg3) : (memref<1x6x6x5xbf16>, memref<1x27x1x32xbf16>, memref<8xf32>, memref<1x4x4x8xf32>) -> ()
// CHECK:         call @__glow_kernel
// CHECK-NOT:     linalg.conv
// CHECK:         return

// CHECK:       func.func private @[[MATMUL]](
// CHECK:         scf.for {{.*}} iter_args
// CHECK:           vector.load {{.*}} : memref<1x20x2x32xbf16>, vector<32xbf16>
// CHECK:           vector.load {{.*}} : memref<6x40xbf16>, vector<2xbf16>
// CHECK:           vector.broadcast {{.*}} : vector<1xi32> to vector<16xi32>
// CHECK:           x86vector.avx512.dot {{.*}} : vector<32xbf16> -> vector<16xf32>
// CHECK:         vector.maskedstore

// CHECK:       func.func private @[[CONV]](
// CHECK:         vector.maskedload {{.*}} : memref<8xf32>, vector<16xi1>, vector<16xf32>
// CHECK:         x86vector.avx512.dot
// CHECK:         vector.interleave {{.*}} : vector<1xbf16> -> vector<2xbf16>
// CHECK:         x86vector.avx512.dot
// CHECK:         vector.maskedstore
module {
  memref.global "private" constant @w : memref<40x20xbf16> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @f : memref<3x3x5x8xbf16> = dense<2.500000e-01> {alignment = 64 : i64}
  memref.global "private" constant @b : memref<8xf32> = dense<1.000000e+00> {alignment = 64 : i64}
  func.func @products(%a: memref<6x40xbf16> {glow.name = "a"}, %x: memref<1x6x6x5xbf16> {glow.name = "x"}, %c: memref<6x20xf32> {glow.name = "c", glow.output}, %y: memref<1x4x4x8xf32> {glow.name = "y", glow.output}) {
    %0 = memref.get_global @w : memref<40x20xbf16>
    "glow_ir.matmul"(%c, %a, %0) {roles = ["out", "in", "in"]} : (memref<6x20xf32>, memref<6x40xbf16>, memref<40x20xbf16>) -> ()
    %1 = memref.get_global @f : memref<3x3x5x8xbf16>
    %2 = memref.get_global @b : memref<8xf32>
    "glow_ir.cpu_conv_nhwc"(%y, %x, %1, %2) {activation = "relu", activationArgs = array<f32>, dilation = array<i64: 1, 1>, group = 1 : i64, kernels = array<i64: 3, 3>, roles = ["out", "in", "in", "in"], strides = array<i64: 1, 1>} : (memref<1x4x4x8xf32>, memref<1x6x6x5xbf16>, memref<3x3x5x8xbf16>, memref<8xf32>) -> ()
    return
  }
}
