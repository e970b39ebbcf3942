// CUDA references for kompute-bench on NVIDIA machines: pinned host<->device
// copies (the best transfer the machine gives), pageable ones (what a CUDA
// program pays from its own memory, the counterpart of a copy through a
// tensor's host view), and device-to-device copies by cudaMemcpy and by a
// plain copy kernel (the device's copy bandwidth, counting bytes read and
// written).
//
// nvcc -O2 -arch=sm_90 bandwidth.cu -o cuda-bandwidth && ./cuda-bandwidth
// Prints one line per measurement: "cuda <case> <metric> <median>".
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "Check.cuh"

// One int4 per thread, the counterpart of kompute-bench's copy shader.
__global__ void
copyKernel(const int4* source, int4* target, size_t count)
{
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < count) {
        target[i] = source[i];
    }
}

// Median seconds of `work` between two events, after one warm-up run.
template <typename Work>
static double
timed(Work work, int repetitions)
{
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    work();
    std::vector<double> seconds;
    for (int i = 0; i < repetitions; ++i) {
        CHECK(cudaEventRecord(start));
        work();
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        seconds.push_back(ms / 1e3);
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    return median(seconds);
}

static double
timedKernelCopy(void* dst, const void* src, size_t bytes, int repetitions)
{
    size_t count = bytes / sizeof(int4);
    unsigned blocks = unsigned((count + 255) / 256);
    return timed(
      [&] {
          copyKernel<<<blocks, 256>>>(static_cast<const int4*>(src), static_cast<int4*>(dst), count);
          CHECK(cudaGetLastError());
      },
      repetitions);
}

static double
timedCopy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, int repetitions)
{
    return timed([&] { CHECK(cudaMemcpy(dst, src, bytes, kind)); }, repetitions);
}

int
main()
{
    const size_t sizes[] = { 1ull << 20, 16ull << 20, 256ull << 20, 1ull << 30 };
    const char* names[] = { "1MiB", "16MiB", "256MiB", "1GiB" };
    for (int s = 0; s < 4; ++s) {
        size_t bytes = sizes[s];
        void* host = nullptr;
        void* device = nullptr;
        CHECK(cudaMallocHost(&host, bytes));
        CHECK(cudaMalloc(&device, bytes));
        std::memset(host, 1, bytes);
        double up = timedCopy(device, host, bytes, cudaMemcpyHostToDevice, 9);
        double down = timedCopy(host, device, bytes, cudaMemcpyDeviceToHost, 9);
        std::printf("cuda d_sync_%s_to_device GB/s %.3f\n", names[s], bytes / up / 1e9);
        std::printf("cuda d_sync_%s_to_host GB/s %.3f\n", names[s], bytes / down / 1e9);
        CHECK(cudaFreeHost(host));
        std::vector<char> pageable(bytes, 1);
        up = timedCopy(device, pageable.data(), bytes, cudaMemcpyHostToDevice, 9);
        down = timedCopy(pageable.data(), device, bytes, cudaMemcpyDeviceToHost, 9);
        std::printf("cuda_pageable d_sync_%s_to_device GB/s %.3f\n", names[s], bytes / up / 1e9);
        std::printf("cuda_pageable d_sync_%s_to_host GB/s %.3f\n", names[s], bytes / down / 1e9);
        CHECK(cudaFree(device));
    }
    size_t bytes = 1ull << 30;
    void* a = nullptr;
    void* b = nullptr;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMemset(a, 1, bytes));
    double copy = timedCopy(b, a, bytes, cudaMemcpyDeviceToDevice, 9);
    std::printf("cuda g_copy_shader_bandwidth GB/s %.3f\n", 2.0 * bytes / copy / 1e9);
    double kernel = timedKernelCopy(b, a, bytes, 9);
    std::printf("cuda_kernel g_copy_shader_bandwidth GB/s %.3f\n", 2.0 * bytes / kernel / 1e9);
    for (size_t part : { 16ull << 20, 64ull << 20, 256ull << 20 }) {
        double t = timedKernelCopy(b, a, part, 9);
        std::printf("cuda_kernel_%lluMiB g_copy_shader_bandwidth GB/s %.3f\n",
                    (unsigned long long)(part >> 20), 2.0 * part / t / 1e9);
    }
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    return 0;
}
