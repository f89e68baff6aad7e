// Lets the kernel sources compile as plain C++ (g++), for the CPU parity build (host.cpp):
// the CUDA qualifiers become nothing / `inline`, so each function is the same code on both.
#pragma once

#define __device__
#define __host__
#define __global__
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
