// CUDA references for kompute-bench on NVIDIA machines: pinned host<->device
// copies (the best transfer the machine gives) and a device-to-device copy
// (the device's copy bandwidth, counting bytes read and written).
//
// nvcc -O2 -arch=sm_90 bandwidth.cu -o cuda-bandwidth && ./cuda-bandwidth
// Prints one line per measurement: "cuda <case> <metric> <median>".
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

static double
timedCopy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, int repetitions)
{
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    CHECK(cudaMemcpy(dst, src, bytes, kind)); // warm-up
    std::vector<double> seconds;
    for (int i = 0; i < repetitions; ++i) {
        CHECK(cudaEventRecord(start));
        CHECK(cudaMemcpy(dst, src, bytes, kind));
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
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    return 0;
}
