// glow-ir-to-linalg's roi_align (codegen/roi_align.py): with an adaptive grid (sampling_ratio 0) a first pass
// over the boxes finds the most samples a cell takes, which sizes one row table and one column table on the
// stack; per box the tables are filled (a pixel pair and a weight pair per sample), then each channel's cell
// sums its samples in a register, read from the image the box names (clamped into the batch), and divides by
// the count. With a fixed ratio the tables have that many samples a cell and there is no first pass. The CPU
// backend's NHWC form reads a vector of channels per sample.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-ir-to-linalg)' | FileCheck %s

// CHECK-LABEL: func.func @adaptive(
// CHECK:         %[[MOST:.*]]:2 = scf.for %{{.*}} = %c0{{.*}} to %c5{{.*}} step %c1{{.*}} iter_args({{.*}}) -> (index, index)
// CHECK:           math.ceil %{{.*}} : f32
// CHECK:           arith.fptosi %{{.*}} : f32 to i64
// CHECK:           arith.maxsi
// CHECK:         memref.alloca(%{{.*}}) : memref<?x2xindex>
// CHECK:         memref.alloca(%{{.*}}) : memref<?x2xf32>
// CHECK:         scf.for %[[BOX:.*]] = %c0{{.*}} to %c5{{.*}} step %c1
// CHECK:           %[[IMAGE:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK:           arith.minsi %[[IMAGE]], %c1
// CHECK:           memref.store %{{.*}} : memref<?x2xindex>
// CHECK:           memref.store %{{.*}} : memref<?x2xf32>
// CHECK:           scf.for %[[K:.*]] = %c0{{.*}} to %c3{{.*}} step %c1
// CHECK:             %[[SUM:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32)
// CHECK:               scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32)
// CHECK-COUNT-4:         memref.load %arg0[%{{.*}}, %[[K]], %{{.*}}, %{{.*}}] : memref<2x3x10x12xf32>
// CHECK:             %[[AVG:.*]] = arith.divf %[[SUM]], %{{.*}} : f32
// CHECK:             memref.store %[[AVG]], %arg3[%[[BOX]], %[[K]], %{{.*}}, %{{.*}}] : memref<5x3x2x4xf32>
func.func @adaptive(%x: memref<2x3x10x12xf32> {glow.name = "x"}, %rois: memref<5x4xf32> {glow.name = "rois"},
                    %bi: memref<5xi64> {glow.name = "bi"}, %y: memref<5x3x2x4xf32> {glow.name = "y", glow.output}) {
  "glow_ir.roi_align"(%y, %x, %rois, %bi) {roles = ["out", "in", "in", "in"], output_size = array<i64: 2, 4>,
      sampling_ratio = 0 : i64, spatial_scale = 5.000000e-01 : f32, half_pixel = true, mode = "avg"}
      : (memref<5x3x2x4xf32>, memref<2x3x10x12xf32>, memref<5x4xf32>, memref<5xi64>) -> ()
  return
}

// CHECK-LABEL: func.func @fixed_max(
// CHECK-NOT:     math.ceil
// CHECK:         memref.alloca(%{{.*}}) : memref<?x2xindex>
// CHECK:         scf.for
// CHECK:           arith.maximumf
// CHECK-NOT:       arith.divf %{{.*}}, %{{.*}} : f64
// CHECK:           memref.store %{{.*}}, %arg3[{{.*}}] : memref<5x3x2x4xf64>
func.func @fixed_max(%x: memref<2x3x10x12xf64> {glow.name = "x"}, %rois: memref<5x4xf64> {glow.name = "rois"},
                     %bi: memref<5xi64> {glow.name = "bi"}, %y: memref<5x3x2x4xf64> {glow.name = "y", glow.output}) {
  "glow_ir.roi_align"(%y, %x, %rois, %bi) {roles = ["out", "in", "in", "in"], output_size = array<i64: 2, 4>,
      sampling_ratio = 2 : i64, spatial_scale = 1.000000e+00 : f32, half_pixel = false, mode = "max"}
      : (memref<5x3x2x4xf64>, memref<2x3x10x12xf64>, memref<5x4xf64>, memref<5xi64>) -> ()
  return
}

// The CPU backend's NHWC form: each sample reads 16 channels at once, the last 4 channels one by one.
// CHECK-LABEL: func.func @channels_last(
// CHECK:         scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step %c16
// CHECK:           vector.broadcast %{{.*}} : f32 to vector<16xf32>
// CHECK:           vector.load %arg0[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<2x10x12x20xf32>, vector<16xf32>
// CHECK:           vector.store %{{.*}}, %arg3[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<5x2x4x20xf32>, vector<16xf32>
// CHECK:         scf.for %{{.*}} = %c16{{.*}} to %c20{{.*}} step %c1
// CHECK:           memref.load %arg0[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<2x10x12x20xf32>
func.func @channels_last(%x: memref<2x10x12x20xf32> {glow.name = "x"}, %rois: memref<5x4xf32> {glow.name = "rois"},
                         %bi: memref<5xi64> {glow.name = "bi"}, %y: memref<5x2x4x20xf32> {glow.name = "y", glow.output}) {
  "glow_ir.cpu_roi_align_nhwc"(%y, %x, %rois, %bi) {roles = ["out", "in", "in", "in"], output_size = array<i64: 2, 4>,
      sampling_ratio = 2 : i64, spatial_scale = 5.000000e-01 : f32, half_pixel = true, mode = "avg"}
      : (memref<5x2x4x20xf32>, memref<2x10x12x20xf32>, memref<5x4xf32>, memref<5xi64>) -> ()
  return
}
