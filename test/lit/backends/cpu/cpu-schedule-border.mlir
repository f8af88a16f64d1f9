// glow-cpu-schedule shrinks the fill of a padded buffer to its border where the buffer's next use is a view of
// its interior that an op then writes whole without reading it (@padded: a copy into the interior, as an
// input is copied into the stem's padded buffer; the four slabs around the 4x4 interior are filled, at a
// dynamic offset so that the top and bottom rows are one kernel and the left and right columns another). A
// fill whose interior is then read (@accumulated: the generic adds to it) or whose buffer is read first
// (@read_first) stays whole. @padded_pixels: a buffer of 32-channel pixels (glow-cpu-pad-channels) whose first 16
// channels a depthwise convolution reads: the slabs are filled within those 16 channels only, and no fill touches
// channels 16 .. 31, which nothing reads.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-schedule)' | FileCheck %s

// CHECK-LABEL: func.func @padded(
// CHECK-SAME:    %[[X:.*]]: memref<1x4x4x16xf32>, %[[B:.*]]: memref<1x6x6x16xf32>
// CHECK:         memref.subview %[[B]][0, 0, 0, 0] [1, 1, 6, 16]
// CHECK:         call @[[ROWS:__glow_kernel[0-9]+]](
// CHECK:         memref.subview %[[B]][0, 5, 0, 0] [1, 1, 6, 16]
// CHECK:         call @[[ROWS]](
// CHECK:         memref.subview %[[B]][0, 1, 0, 0] [1, 4, 1, 16]
// CHECK:         call @[[COLUMNS:__glow_kernel[0-9]+]](
// CHECK:         memref.subview %[[B]][0, 1, 5, 0] [1, 4, 1, 16]
// CHECK:         call @[[COLUMNS]](
// CHECK-NOT:     call @{{.*}}(%[[B]])
// CHECK:         return

// CHECK-LABEL: func.func @padded_pixels(
// CHECK:         %[[P:.*]] = memref.alloc() {{.*}}: memref<1x6x6x32xf32>
// CHECK:         memref.subview %[[P]][0, 0, 0, 0] [1, 1, 6, 16]
// CHECK:         memref.subview %[[P]][0, 5, 0, 0] [1, 1, 6, 16]
// CHECK:         memref.subview %[[P]][0, 1, 0, 0] [1, 4, 1, 16]
// CHECK:         memref.subview %[[P]][0, 1, 5, 0] [1, 4, 1, 16]
// CHECK-NOT:     memref.subview %[[P]][0, 1, 1, 16]
// CHECK-NOT:     call @{{.*}}(%[[P]])
// CHECK:         return

// CHECK-LABEL: func.func @accumulated(
// CHECK-SAME:    %{{.*}}: memref<1x4x4x16xf32>, %[[B:.*]]: memref<1x6x6x16xf32>
// CHECK:         call @{{.*}}(%[[B]]) : (memref<1x6x6x16xf32>) -> ()
// CHECK-NOT:     memref.subview %[[B]][0, 0, 0, 0] [1, 1, 6, 16]

// CHECK-LABEL: func.func @read_first(
// CHECK-SAME:    %{{.*}}: memref<1x4x4x16xf32>, %[[B:.*]]: memref<1x6x6x16xf32>
// CHECK:         call @{{.*}}(%[[B]]) : (memref<1x6x6x16xf32>) -> ()
// CHECK-NOT:     memref.subview %[[B]][0, 0, 0, 0] [1, 1, 6, 16]
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
module {
  func.func @padded(%x: memref<1x4x4x16xf32>, %b: memref<1x6x6x16xf32>) {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%b : memref<1x6x6x16xf32>)
    %in = memref.subview %b[0, 1, 1, 0] [1, 4, 4, 16] [1, 1, 1, 1] : memref<1x6x6x16xf32> to memref<1x4x4x16xf32, strided<[576, 96, 16, 1], offset: 112>>
    linalg.copy ins(%x : memref<1x4x4x16xf32>) outs(%in : memref<1x4x4x16xf32, strided<[576, 96, 16, 1], offset: 112>>)
    return
  }
  func.func @padded_pixels(%x: memref<1x4x4x16xf32>, %w: memref<3x3x16xf32>, %y: memref<1x4x4x16xf32>) {
    %zero = arith.constant 0.0 : f32
    %b = memref.alloc() {alignment = 64 : i64} : memref<1x6x6x32xf32>
    linalg.fill ins(%zero : f32) outs(%b : memref<1x6x6x32xf32>)
    %in = memref.subview %b[0, 1, 1, 0] [1, 4, 4, 16] [1, 1, 1, 1] : memref<1x6x6x32xf32> to memref<1x4x4x16xf32, strided<[1152, 192, 32, 1], offset: 224>>
    linalg.copy ins(%x : memref<1x4x4x16xf32>) outs(%in : memref<1x4x4x16xf32, strided<[1152, 192, 32, 1], offset: 224>>)
    %all = memref.subview %b[0, 0, 0, 0] [1, 6, 6, 16] [1, 1, 1, 1] : memref<1x6x6x32xf32> to memref<1x6x6x16xf32, strided<[1152, 192, 32, 1]>>
    linalg.fill ins(%zero : f32) outs(%y : memref<1x4x4x16xf32>)
    linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%all, %w : memref<1x6x6x16xf32, strided<[1152, 192, 32, 1]>>, memref<3x3x16xf32>) outs(%y : memref<1x4x4x16xf32>)
    return
  }
  func.func @accumulated(%x: memref<1x4x4x16xf32>, %b: memref<1x6x6x16xf32>) {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%b : memref<1x6x6x16xf32>)
    %in = memref.subview %b[0, 1, 1, 0] [1, 4, 4, 16] [1, 1, 1, 1] : memref<1x6x6x16xf32> to memref<1x4x4x16xf32, strided<[576, 96, 16, 1], offset: 112>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x4x4x16xf32>) outs(%in : memref<1x4x4x16xf32, strided<[576, 96, 16, 1], offset: 112>>) {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
    return
  }
  func.func @read_first(%x: memref<1x4x4x16xf32>, %b: memref<1x6x6x16xf32>) {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%b : memref<1x6x6x16xf32>)
    %corner = memref.subview %b[0, 0, 0, 0] [1, 4, 4, 16] [1, 1, 1, 1] : memref<1x6x6x16xf32> to memref<1x4x4x16xf32, strided<[576, 96, 16, 1]>>
    linalg.copy ins(%corner : memref<1x4x4x16xf32, strided<[576, 96, 16, 1]>>) outs(%x : memref<1x4x4x16xf32>)
    %in = memref.subview %b[0, 1, 1, 0] [1, 4, 4, 16] [1, 1, 1, 1] : memref<1x6x6x16xf32> to memref<1x4x4x16xf32, strided<[576, 96, 16, 1], offset: 112>>
    linalg.copy ins(%x : memref<1x4x4x16xf32>) outs(%in : memref<1x4x4x16xf32, strided<[576, 96, 16, 1], offset: 112>>)
    return
  }
}
