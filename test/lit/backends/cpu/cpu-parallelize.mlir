// glow-cpu-parallelize on scheduled kernels (as glow-cpu-schedule leaves them): a large matmul tile nest runs
// its two output-tile loops as one collapsed OpenMP loop on 2 threads, with the reduction (the K loop) whole
// in each iteration; a nest whose outer loop is a reduction, a kernel too small to be worth a fork and a loop
// of calls that all write one buffer stay serial; a loop of calls that write disjoint tiles forks once.
// The cost rule's estimates (parallel.py) decide the kernels 6 to 9: BERT's 16x128x128 matmul (16384 FMA
// instructions, 2.3 us) stays serial where its 16x128x512 one (9.2 us) splits; an add of a bias to 512 rows of
// 128 floats (0.6 us of arithmetic, but 512 KiB moved: 5.8 us) splits where the same add on 64 rows stays serial.
// Between a loop of channel-tile calls and its kernel's row loop, as evenly balanced, the bytes each thread
// moves decide (@model keeps its tiles, @convolution splits rows); a kernel that one loop runs whole keeps
// every loop that calls it on tiles. Each region carries `glow.split`, what it splits.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-parallelize{threads=2})' | FileCheck %s
// glow-to-llvm then lowers the region's values to LLVM types (convert-openmp-to-llvm): no cast is left.
// RUN: glow-opt %s --pass-pipeline='builtin.module(glow-cpu-parallelize{threads=2},glow-to-llvm)' | FileCheck %s --check-prefix=LLVM
// LLVM-LABEL: llvm.func @model(
// LLVM:         omp.parallel num_threads(
// LLVM:           omp.loop_nest ({{.*}}) : i64 =
// LLVM:             llvm.call @__glow_kernel5(
// LLVM-NOT:     unrealized_conversion_cast

// CHECK-LABEL: func.func private @__glow_kernel0(
// CHECK:         %[[N:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK:         omp.parallel num_threads(%[[N]] : i32) {
// CHECK-NEXT:      omp.wsloop {
// CHECK-NEXT:        omp.loop_nest (%[[I:.*]], %[[J:.*]]) : index = (%{{.*}}, %{{.*}}) to (%c64{{.*}}, %c64{{.*}}) step (%c1{{.*}}, %c16{{.*}}) collapse(2) {
// CHECK-NOT:           memref.alloca_scope
// CHECK:               scf.for {{.*}} iter_args
// CHECK:                 vector.fma
// CHECK:               vector.store {{.*}}[%[[I]], %[[J]]]
// CHECK:               omp.yield
// What the region splits, for the profiler: 64 rows by 4 column tiles of the written buffer.
// CHECK:           omp.terminator
// CHECK-NEXT:    } {glow.split = {dims = ["d0 of 64x64", "d1 of 64x64"], trips = array<i64: 64, 4>}}
func.func private @__glow_kernel0(%a: memref<64x128xf32>, %b: memref<128x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c64 step %c16 {
      %init = vector.load %c[%i, %j] : memref<64x64xf32>, vector<16xf32>
      %acc = scf.for %k = %c0 to %c128 step %c1 iter_args(%x = %init) -> (vector<16xf32>) {
        %s = memref.load %a[%i, %k] : memref<64x128xf32>
        %v = vector.load %b[%k, %j] : memref<128x64xf32>, vector<16xf32>
        %sv = vector.broadcast %s : f32 to vector<16xf32>
        %y = vector.fma %sv, %v, %x : vector<16xf32>
        scf.yield %y : vector<16xf32>
      }
      vector.store %acc, %c[%i, %j] : memref<64x64xf32>, vector<16xf32>
    }
  }
  return
}

// The outer loop is the reduction: every iteration writes the same accumulator tile.
// CHECK-LABEL: func.func private @__glow_kernel1(
// CHECK-NOT:     omp.
// CHECK:         return
func.func private @__glow_kernel1(%a: memref<1024x64xf32>, %c: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  scf.for %k = %c0 to %c1024 step %c1 {
    scf.for %j = %c0 to %c64 step %c16 {
      %x = vector.load %c[%j] : memref<64xf32>, vector<16xf32>
      %v = vector.load %a[%k, %j] : memref<1024x64xf32>, vector<16xf32>
      %y = arith.addf %x, %v : vector<16xf32>
      vector.store %y, %c[%j] : memref<64xf32>, vector<16xf32>
    }
  }
  return
}

// Parallel, but 8 x 16 outputs of 8 products each: far less work than a fork costs.
// CHECK-LABEL: func.func private @__glow_kernel2(
// CHECK-NOT:     omp.
// CHECK:         return
func.func private @__glow_kernel2(%a: memref<8x16xf32>, %c: memref<8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %v = vector.load %a[%i, %c0] : memref<8x16xf32>, vector<16xf32>
    %y = arith.mulf %v, %v : vector<16xf32>
    vector.store %y, %c[%i, %c0] : memref<8x16xf32>, vector<16xf32>
  }
  return
}

// A loop of calls whose kernel writes the same buffer on every iteration (its second argument, not a view
// that moves with the loop) stays serial.
// CHECK-LABEL: func.func private @__glow_kernel3(
// CHECK-NOT:     omp.
// CHECK:         return
func.func private @__glow_kernel3(%x: memref<4096x64xf32>, %acc: memref<1x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4096 = arith.constant 4096 : index
  scf.for %i = %c0 to %c4096 step %c1 {
    %row = memref.subview %x[%i, 0] [1, 64] [1, 1] : memref<4096x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
    func.call @__glow_kernel4(%row, %acc) : (memref<1x64xf32, strided<[64, 1], offset: ?>>, memref<1x64xf32>) -> ()
  }
  return
}

// CHECK-LABEL: func.func private @__glow_kernel4(
func.func private @__glow_kernel4(%row: memref<1x64xf32, strided<[64, 1], offset: ?>>, %acc: memref<1x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.for %j = %c0 to %c64 step %c16 {
    %a = vector.load %row[%c0, %j] : memref<1x64xf32, strided<[64, 1], offset: ?>>, vector<16xf32>
    %b = vector.load %acc[%c0, %j] : memref<1x64xf32>, vector<16xf32>
    %y = arith.addf %a, %b : vector<16xf32>
    vector.store %y, %acc[%c0, %j] : memref<1x64xf32>, vector<16xf32>
  }
  return
}

// A kernel called once per channel tile from the model's function (a convolution's channel-tile loop): the
// loop of calls forks once for all 8 tiles, and the kernel, run whole by one thread per call, stays serial
// although its own row loop is parallel and large enough.
// CHECK-LABEL: func.func private @__glow_kernel5(
// CHECK-NOT:     omp.
// CHECK:         return
func.func private @__glow_kernel5(%x: memref<512x64xf32>, %y: memref<512x16xf32, strided<[128, 1], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  scf.for %i = %c0 to %c512 step %c1 {
    %init = arith.constant dense<0.0> : vector<16xf32>
    %acc = scf.for %k = %c0 to %c64 step %c1 iter_args(%s = %init) -> (vector<16xf32>) {
      %a = memref.load %x[%i, %k] : memref<512x64xf32>
      %av = vector.broadcast %a : f32 to vector<16xf32>
      %t = arith.addf %s, %av : vector<16xf32>
      scf.yield %t : vector<16xf32>
    }
    vector.store %acc, %y[%i, %c0] : memref<512x16xf32, strided<[128, 1], offset: ?>>, vector<16xf32>
  }
  return
}

// BERT's attention projections (16 rows, 128 outputs, K = 128): 1.1 us per thread plus a 1.4 us fork is more
// than 2.3 us on one. Its memory time is 0.9 us: B (64 KiB), read once per row, counts once.
// CHECK-LABEL: func.func private @__glow_kernel6(
// CHECK-NOT:     omp.
// CHECK:         return
func.func private @__glow_kernel6(%a: memref<16x128xf32>, %b: memref<128x128xf32>, %c: memref<16x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c128 step %c16 {
      %init = vector.load %c[%i, %j] : memref<16x128xf32>, vector<16xf32>
      %acc = scf.for %k = %c0 to %c128 step %c1 iter_args(%x = %init) -> (vector<16xf32>) {
        %s = memref.load %a[%i, %k] : memref<16x128xf32>
        %v = vector.load %b[%k, %j] : memref<128x128xf32>, vector<16xf32>
        %sv = vector.broadcast %s : f32 to vector<16xf32>
        %y = vector.fma %sv, %v, %x : vector<16xf32>
        scf.yield %y : vector<16xf32>
      }
      vector.store %acc, %c[%i, %j] : memref<16x128xf32>, vector<16xf32>
    }
  }
  return
}

// Its feed-forward matmul, 4 times larger (512 outputs): split.
// CHECK-LABEL: func.func private @__glow_kernel7(
// CHECK:         omp.parallel
// CHECK:           omp.loop_nest ({{.*}}) : index = ({{.*}}) to (%c16{{.*}}, %c512{{.*}}) step ({{.*}}) collapse(2) {
func.func private @__glow_kernel7(%a: memref<16x128xf32>, %b: memref<128x512xf32>, %c: memref<16x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %c512 = arith.constant 512 : index
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c512 step %c16 {
      %init = vector.load %c[%i, %j] : memref<16x512xf32>, vector<16xf32>
      %acc = scf.for %k = %c0 to %c128 step %c1 iter_args(%x = %init) -> (vector<16xf32>) {
        %s = memref.load %a[%i, %k] : memref<16x128xf32>
        %v = vector.load %b[%k, %j] : memref<128x512xf32>, vector<16xf32>
        %sv = vector.broadcast %s : f32 to vector<16xf32>
        %y = vector.fma %sv, %v, %x : vector<16xf32>
        scf.yield %y : vector<16xf32>
      }
      vector.store %acc, %c[%i, %j] : memref<16x512xf32>, vector<16xf32>
    }
  }
  return
}

// Memory-bound: x + bias over 512 rows of 128 floats, 4096 vector adds (0.6 us, serial by arithmetic alone) but
// 256 KiB read and 256 KiB written (the bias, read on every row, counts its 512 bytes once): 5.8 us, split.
// CHECK-LABEL: func.func private @__glow_kernel8(
// CHECK:         omp.parallel
// CHECK:           omp.loop_nest ({{.*}}) : index = ({{.*}}) to (%c512{{.*}}, %c128{{.*}}) step ({{.*}}) collapse(2) {
func.func private @__glow_kernel8(%x: memref<512x128xf32>, %bias: memref<128xf32>, %z: memref<512x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %c512 = arith.constant 512 : index
  scf.for %i = %c0 to %c512 step %c1 {
    scf.for %j = %c0 to %c128 step %c16 {
      %v = vector.load %x[%i, %j] : memref<512x128xf32>, vector<16xf32>
      %b = vector.load %bias[%j] : memref<128xf32>, vector<16xf32>
      %y = arith.addf %v, %b : vector<16xf32>
      vector.store %y, %z[%i, %j] : memref<512x128xf32>, vector<16xf32>
    }
  }
  return
}

// The same add on 64 rows moves 64 KiB: 0.7 us, serial.
// CHECK-LABEL: func.func private @__glow_kernel9(
// CHECK-NOT:     omp.
// CHECK:         return
func.func private @__glow_kernel9(%x: memref<64x128xf32>, %bias: memref<128xf32>, %z: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c128 step %c16 {
      %v = vector.load %x[%i, %j] : memref<64x128xf32>, vector<16xf32>
      %b = vector.load %bias[%j] : memref<128xf32>, vector<16xf32>
      %y = arith.addf %v, %b : vector<16xf32>
      vector.store %y, %z[%i, %j] : memref<64x128xf32>, vector<16xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @model(
// CHECK:         omp.parallel
// CHECK:           omp.loop_nest (%[[T:.*]]) : index = (%c0{{.*}}) to (%c8{{.*}}) step (%c1{{.*}}) {
// CHECK:             memref.subview %{{.*}}[0, %{{.*}}] [512, 16]
// CHECK:             func.call @__glow_kernel5(
// The loop of calls walks the column tiles of the buffer its kernel writes a view of. It wins over the kernel's
// row loop, which splits as evenly (8 tiles, 512 rows over 2 threads): each thread reads half of %x either way
// from its own L2 or all of it, half from the other core (1.4 us more), against 7 forks more.
// CHECK:           omp.terminator
// CHECK-NEXT:    } {glow.split = {dims = ["d1 of 512x128"], trips = array<i64: 8>}}
func.func @model(%x: memref<512x64xf32>, %y: memref<512x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %t = %c0 to %c8 step %c1 {
    %offset = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    %tile = memref.subview %y[0, %offset] [512, 16] [1, 1] : memref<512x128xf32> to memref<512x16xf32, strided<[128, 1], offset: ?>>
    func.call @__glow_kernel5(%x, %tile) : (memref<512x64xf32>, memref<512x16xf32, strided<[128, 1], offset: ?>>) -> ()
  }
  return
}

// A convolution-like loop of 2 channel tiles around a kernel whose row loop splits as evenly (1024 rows): the
// kernel splits its rows, and the loop of calls stays serial. Split by tiles, each thread would read all of the
// 1 MiB input, half of it written by the other core (21 us at the rate beyond L2); split by rows, each reads
// its half, and all of the 32 KiB of weights (a global), for one more fork (1.4 us).
// CHECK-LABEL: func.func private @__glow_kernel10(
// CHECK:         omp.parallel
// CHECK:           omp.loop_nest ({{.*}}) : index = ({{.*}}) to (%c1024{{.*}}) step ({{.*}}) {
// CHECK:           omp.terminator
// CHECK-NEXT:    } {glow.split = {dims = ["d0 of 1024x16"], trips = array<i64: 1024>}}
memref.global "private" constant @weights : memref<2x256x16xf32> = dense<1.0>
func.func private @__glow_kernel10(%x: memref<1024x256xf32>, %w: memref<256x16xf32, strided<[16, 1], offset: ?>>,
                                   %y: memref<1024x16xf32, strided<[32, 1], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  %init = arith.constant dense<0.0> : vector<16xf32>
  scf.for %i = %c0 to %c1024 step %c1 {
    %acc = scf.for %k = %c0 to %c256 step %c1 iter_args(%s = %init) -> (vector<16xf32>) {
      %a = memref.load %x[%i, %k] : memref<1024x256xf32>
      %b = vector.load %w[%k, %c0] : memref<256x16xf32, strided<[16, 1], offset: ?>>, vector<16xf32>
      %av = vector.broadcast %a : f32 to vector<16xf32>
      %t = vector.fma %av, %b, %s : vector<16xf32>
      scf.yield %t : vector<16xf32>
    }
    vector.store %acc, %y[%i, %c0] : memref<1024x16xf32, strided<[32, 1], offset: ?>>, vector<16xf32>
  }
  return
}

// CHECK-LABEL: func.func @convolution(
// CHECK-NOT:     omp.
// CHECK:         scf.for
// CHECK:           func.call @__glow_kernel10(
func.func @convolution(%x: memref<1024x256xf32>, %y: memref<1024x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %w = memref.get_global @weights : memref<2x256x16xf32>
  scf.for %t = %c0 to %c2 step %c1 {
    %wt = memref.subview %w[%t, 0, 0] [1, 256, 16] [1, 1, 1] : memref<2x256x16xf32> to memref<256x16xf32, strided<[16, 1], offset: ?>>
    %offset = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    %yt = memref.subview %y[0, %offset] [1024, 16] [1, 1] : memref<1024x32xf32> to memref<1024x16xf32, strided<[32, 1], offset: ?>>
    func.call @__glow_kernel10(%x, %wt, %yt) : (memref<1024x256xf32>, memref<256x16xf32, strided<[16, 1], offset: ?>>, memref<1024x16xf32, strided<[32, 1], offset: ?>>) -> ()
  }
  return
}

// The same kernel called from two loops of channel tiles, one that would leave the split to the kernel's rows
// (as above) and one whose tiles come from 1 MiB of weights, which every thread would read whole if it split
// by rows: that loop splits its tiles, so the kernel runs whole on one thread per call, and the first loop
// splits its tiles too rather than run serial.
// CHECK-LABEL: func.func private @__glow_kernel11(
// CHECK-NOT:     omp.
// CHECK:         return
memref.global "private" constant @many_weights : memref<64x256x16xf32> = dense<1.0>
func.func private @__glow_kernel11(%x: memref<1024x256xf32>, %w: memref<256x16xf32, strided<[16, 1], offset: ?>>,
                                   %y: memref<1024x16xf32, strided<[32, 1], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  %init = arith.constant dense<0.0> : vector<16xf32>
  scf.for %i = %c0 to %c1024 step %c1 {
    %acc = scf.for %k = %c0 to %c256 step %c1 iter_args(%s = %init) -> (vector<16xf32>) {
      %a = memref.load %x[%i, %k] : memref<1024x256xf32>
      %b = vector.load %w[%k, %c0] : memref<256x16xf32, strided<[16, 1], offset: ?>>, vector<16xf32>
      %av = vector.broadcast %a : f32 to vector<16xf32>
      %t = vector.fma %av, %b, %s : vector<16xf32>
      scf.yield %t : vector<16xf32>
    }
    vector.store %acc, %y[%i, %c0] : memref<1024x16xf32, strided<[32, 1], offset: ?>>, vector<16xf32>
  }
  return
}

// CHECK-LABEL: func.func @small_weights(
// CHECK:         omp.parallel
// CHECK:           func.call @__glow_kernel11(
func.func @small_weights(%x: memref<1024x256xf32>, %y: memref<1024x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %w = memref.get_global @weights : memref<2x256x16xf32>
  scf.for %t = %c0 to %c2 step %c1 {
    %wt = memref.subview %w[%t, 0, 0] [1, 256, 16] [1, 1, 1] : memref<2x256x16xf32> to memref<256x16xf32, strided<[16, 1], offset: ?>>
    %offset = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    %yt = memref.subview %y[0, %offset] [1024, 16] [1, 1] : memref<1024x32xf32> to memref<1024x16xf32, strided<[32, 1], offset: ?>>
    func.call @__glow_kernel11(%x, %wt, %yt) : (memref<1024x256xf32>, memref<256x16xf32, strided<[16, 1], offset: ?>>, memref<1024x16xf32, strided<[32, 1], offset: ?>>) -> ()
  }
  return
}

// CHECK-LABEL: func.func @large_weights(
// CHECK:         omp.parallel
// CHECK:           func.call @__glow_kernel11(
func.func @large_weights(%x: memref<1024x256xf32>, %y: memref<1024x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %w = memref.get_global @many_weights : memref<64x256x16xf32>
  scf.for %t = %c0 to %c2 step %c1 {
    %wt = memref.subview %w[%t, 0, 0] [1, 256, 16] [1, 1, 1] : memref<64x256x16xf32> to memref<256x16xf32, strided<[16, 1], offset: ?>>
    %offset = affine.apply affine_map<(d0) -> (d0 * 16)>(%t)
    %yt = memref.subview %y[0, %offset] [1024, 16] [1, 1] : memref<1024x32xf32> to memref<1024x16xf32, strided<[32, 1], offset: ?>>
    func.call @__glow_kernel11(%x, %wt, %yt) : (memref<1024x256xf32>, memref<256x16xf32, strided<[16, 1], offset: ?>>, memref<1024x16xf32, strided<[32, 1], offset: ?>>) -> ()
  }
  return
}
