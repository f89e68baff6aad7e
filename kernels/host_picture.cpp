// The grayscale picture (picture.cuh) compiled as plain C++: the CPU backend's gray84 and the
// host twin of the nesle_gray84 kernel.
#include "host_shim.h"
#include "types.h"
#include "picture.cuh"
