// glow-cpu-schedule on NHWC pools: the fill that starts each pool's output (-inf for a max pool, 0 for a sum)
// is fused into the pool's kernel, the window loop of each output tile starting from a constant vector in
// registers, instead of being a kernel (a pass over the output) of its own.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg,glow-cpu-schedule)' | FileCheck %s

// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK-SAME:    %[[X:.*]]: memref<1x9x9x32xf32>, %{{.*}}: memref<3x3xf32>, %[[Y:.*]]: memref<1x4x4x32xf32>)
// CHECK:         %[[NEG:.*]] = arith.constant dense<0xFF800000> : vector<4x32xf32>
// CHECK:         scf.for
// CHECK-NOT:       vector.transfer_read %[[Y]]
// CHECK:           scf.for {{.*}} iter_args(%{{.*}} = %[[NEG]])
// CHECK:             vector.transfer_read %[[X]]
// CHECK:             arith.maximumf
// CHECK:           vector.transfer_write {{.*}}, %[[Y]]
// CHECK-NOT:   linalg.
// CHECK-LABEL: func.func private @__glow_kernel1(
// CHECK:         %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<2x16xf32>
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]])
// CHECK:         arith.addf

// Two kernels only (the average pool's division is the third): no fill of its own.
// CHECK-LABEL: func.func @pools(
// CHECK-NOT:     linalg.fill
// CHECK:         call @__glow_kernel0(
// CHECK-NOT:     linalg.fill
// CHECK:         call @__glow_kernel1(
// CHECK-NOT:     linalg.fill
// CHECK:         return
module {
  func.func @pools(%arg0: memref<1x9x9x32xf32> {glow.name = "x"}, %arg1: memref<1x4x4x32xf32> {glow.name = "y", glow.output}, %arg2: memref<1x6x6x16xf32> {glow.name = "u"}, %arg3: memref<1x3x2x16xf32> {glow.name = "v", glow.output}) {
    "glow_ir.cpu_max_pool_nhwc"(%arg1, %arg0) {kernels = array<i64: 3, 3>, roles = ["out", "in"], strides = array<i64: 2, 2>} : (memref<1x4x4x32xf32>, memref<1x9x9x32xf32>) -> ()
    "glow_ir.cpu_avg_pool_nhwc"(%arg3, %arg2) {kernels = array<i64: 2, 3>, roles = ["out", "in"], strides = array<i64: 2, 3>} : (memref<1x3x2x16xf32>, memref<1x6x6x16xf32>) -> ()
    return
  }
}
