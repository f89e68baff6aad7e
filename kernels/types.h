// Fixed-width integer types for the kernels. NVRTC ships no standard headers, so the kernels
// declare their own; the sizes hold on every CUDA target and on x86-64/aarch64 hosts.
#pragma once

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed char i8;
typedef short i16;
typedef int i32;

static_assert(sizeof(u16) == 2 && sizeof(u32) == 4 && sizeof(u64) == 8, "fixed-width types");

// Function qualifiers. `NESLE_FN` (inlined) for small helpers; `NESLE_DEV` (never inlined) for
// the big per-cycle pieces (ppu_tick, bus_read, ...): inlining those into every one of the
// ~300 bus-access sites of the CPU made ptxas take 6 minutes per architecture.
// host_shim.h defines the CUDA qualifiers away for the host parity build.
#define NESLE_FN __device__ __forceinline__
#define NESLE_DEV __device__ __noinline__

// Unroll the next loop (constant trip count): nvcc does so by itself, g++ -O2 does not, and
// the host build stands in for the GPU code in Ir measurements.
#ifdef __CUDACC__
#define NESLE_UNROLL _Pragma("unroll")
#else
#define NESLE_UNROLL _Pragma("GCC unroll 8")
#endif

// Keep the next loop rolled: rare code whose unrolled copy would sit in a hot function's
// instruction-cache lines (kernel-notes #92).
#ifdef __CUDACC__
#define NESLE_NO_UNROLL _Pragma("unroll 1")
#else
#define NESLE_NO_UNROLL
#endif

// Computes `x` here, before what follows: an empty asm that takes it keeps the compiler from
// sinking a load that is only used on one side of a later branch into that side (kernel-notes
// #100). No instruction results; the host build has no need of it.
#ifdef __CUDACC__
#define NESLE_KEEP_HERE(x) asm volatile("" ::"r"((u32)(x)))
#else
#define NESLE_KEEP_HERE(x) ((void)(x))
#endif

// Index of the lowest set bit of `x` (x != 0).
#ifdef __CUDA_ARCH__
#define nes_ctz64(x) ((u32)(__ffsll((long long)(x)) - 1))
#else
#define nes_ctz64(x) ((u32)__builtin_ctzll(x))
#endif

// Warp-level scheduling for nes_run_frame (kernel-notes #20) on sm_80 and later
// (`__reduce_min_sync`): 2, the default, ranks by stack depth then PC (measured best on protocol
// B), 1 by PC alone, 0 turns it off. Elsewhere, and in the host build (one env at a time), every
// thread simply runs its own instruction stream.
#ifndef NESLE_PC_VOTE
#define NESLE_PC_VOTE 2
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && defined(NESLE_PC_VOTE) && NESLE_PC_VOTE
#define NESLE_WARP_VOTE 1
#else
#define NESLE_WARP_VOTE 0
#endif

// Parts of a frame with a block barrier after each, in the warp vote's builds (nes_run_frame,
// kernel-notes #40): 8 measured best on protocol B with 256-thread blocks, 12 with the quiet
// path over the whole episode (#124, #125: B +3.3..3.5%, A -1% against 8; 4 and 32 far worse,
// 16 as good as 8), and again on the shorter rounds of #138 (#142: 10 parts B -8%, 16 B -5%)
// and with the blocks grouped by PC (#183: 8 parts B -2.5%, 10 -6.4%, 16 -8.1%); 1 turns it off.
#ifndef NESLE_PHASES
#define NESLE_PHASES 12
#endif
// How many parts a warp may run ahead of its block's slowest warp (kernel-notes #187): 0, a
// block barrier after each part; 1 (sm_80 and later), a warp that has finished part h waits
// only until every warp has finished part h - 1, so a warp done early starts the next part
// instead of idling. With 1, NESLE_PHASES must be a multiple of 4 (console.cuh).
#ifndef NESLE_SLACK
#define NESLE_SLACK 1
#endif
