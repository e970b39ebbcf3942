// What the CUDA reference programs share: CHECK(call) ends the program with
// the error's name when a CUDA call fails, and the median of samples.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                  \
    do {                                                                             \
        cudaError_t error = (call);                                                  \
        if (error != cudaSuccess) {                                                  \
            std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(error)); \
            std::exit(1);                                                            \
        }                                                                            \
    } while (0)

static double
median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}
