// glow-to-llvm{profile=1}, the profiling compile variant: every call of an outlined function from the entry, and
// every loop nest left in the entry, is timed between two clock reads into a counters global (one column per
// site), a read-and-reset function is added, and the module lists each site (the callee, or `<entry>:<op>:<k>`)
// with the node names of its location, fused ones whole (outline.py gives each call the locations of the ops it
// replaced: a function called twice names the nodes of each call), and what each site splits across threads
// (none here: single-threaded code; to-llvm-profile-threads.mlir has threads). Without the option none of it
// is there.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-to-llvm{profile=1})' | FileCheck %s
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-to-llvm)' | FileCheck %s --check-prefix=PLAIN
// PLAIN-NOT: glow_profile
// PLAIN-NOT: clock_gettime

// CHECK: module attributes {glow.profile_kernels = {{\[\[}}"__glow_kernel0", "conv1", "relu1"], ["__glow_kernel0", "conv2"], ["__glow_loops_model_0", "transpose"], ["model:scf.for:3", "softmax"]], glow.profile_splits = {{\[\[}}], [], [], []]}
// CHECK-DAG: llvm.func @clock_gettime(i32, !llvm.ptr) -> i32
// CHECK-DAG: llvm.mlir.global private @glow_profile_counters(dense<0> : tensor<3x4xi64>)
// CHECK-LABEL: llvm.func @glow_profile_read
// CHECK-LABEL: llvm.func @_mlir_ciface_glow_profile_read
// CHECK-LABEL: llvm.func @model
// CHECK: %[[START:.*]] = llvm.call @glow_profile_now()
// CHECK: llvm.call @__glow_kernel0
// CHECK: %[[STOP:.*]] = llvm.call @glow_profile_now()
// CHECK: llvm.sub %[[STOP]], %[[START]]
// CHECK: llvm.call @glow_profile_now()
// CHECK: llvm.call @__glow_kernel0
// CHECK: llvm.call @glow_profile_now()
// CHECK: llvm.call @glow_profile_now()
// CHECK: llvm.call @__glow_loops_model_0
// CHECK: llvm.call @glow_profile_now()
// CHECK: llvm.call @glow_profile_now()
// CHECK: llvm.intr.exp
// CHECK: llvm.call @glow_profile_now()

func.func private @__glow_kernel0(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index loc("conv1")
  %v = memref.load %x[%c0] : memref<4xf32> loc(fused["conv1", "relu1"])
  memref.store %v, %y[%c0] : memref<4xf32> loc("relu1")
  return
}

func.func private @__glow_loops_model_0(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c1 = arith.constant 1 : index loc("transpose")
  %v = memref.load %x[%c1] : memref<4xf32> loc("transpose")
  memref.store %v, %y[%c1] : memref<4xf32> loc("transpose")
  return
}

func.func @model(%x: memref<4xf32> {glow.name = "x"}, %y: memref<4xf32> {glow.name = "y", glow.output},
                 %arena: memref<16xi8> {glow.arena}) attributes {glow.arena_bytes = 16 : i64, llvm.emit_c_interface} {
  call @__glow_kernel0(%x, %y) : (memref<4xf32>, memref<4xf32>) -> () loc(fused["conv1", "relu1"])
  call @__glow_kernel0(%y, %y) : (memref<4xf32>, memref<4xf32>) -> () loc("conv2")
  call @__glow_loops_model_0(%y, %y) : (memref<4xf32>, memref<4xf32>) -> () loc("transpose")
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %y[%i] : memref<4xf32> loc("softmax")
    %e = math.exp %v : f32 loc("softmax")
    memref.store %e, %y[%i] : memref<4xf32> loc("softmax")
  } loc("softmax")
  return
}
