// glow-to-llvm passes each memref of static shape, strides and offset to a private function (an outlined kernel)
// as one pointer; a memref of dynamic offset keeps its descriptor. The callee adds the static offset itself.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-to-llvm)' | FileCheck %s

// CHECK-LABEL: llvm.func @static_kernel(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %[[Y:.*]]: !llvm.ptr) attributes {llvm.bareptr
// CHECK: %[[D0:.*]] = llvm.insertvalue %[[Y]], %{{.*}}[1]
// CHECK-NEXT: %[[OFFSET:.*]] = llvm.mlir.constant(8 : index)
// CHECK-NEXT: llvm.insertvalue %[[OFFSET]], %[[D0]][2]
func.func private @static_kernel(%x: memref<4x8xf32>, %y: memref<8xf32, strided<[1], offset: 8>>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0, %c0] : memref<4x8xf32>
  memref.store %v, %y[%c0] : memref<8xf32, strided<[1], offset: 8>>
  return
}

// CHECK-LABEL: llvm.func @dynamic_kernel(
// CHECK-SAME: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
func.func private @dynamic_kernel(%y: memref<8xf32, strided<[1], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  memref.store %one, %y[%c0] : memref<8xf32, strided<[1], offset: ?>>
  return
}

// CHECK-LABEL: llvm.func @model(
// CHECK: llvm.call @static_kernel(%{{[^,]*}}, %{{[^,]*}}) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK: llvm.call @dynamic_kernel(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
func.func @model(%x: memref<4x8xf32> {glow.name = "x"}, %y: memref<16xf32> {glow.name = "y", glow.output}) {
  %tail = memref.subview %y[8] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1], offset: 8>>
  call @static_kernel(%x, %tail) : (memref<4x8xf32>, memref<8xf32, strided<[1], offset: 8>>) -> ()
  %any = memref.cast %tail : memref<8xf32, strided<[1], offset: 8>> to memref<8xf32, strided<[1], offset: ?>>
  call @dynamic_kernel(%any) : (memref<8xf32, strided<[1], offset: ?>>) -> ()
  return
}
