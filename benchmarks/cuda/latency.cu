// CUDA references for kompute-bench's cases (a) and (c) on NVIDIA machines:
// the round trip of one trivial kernel (launch, then wait on the host), and
// the cost per launch of 1000 dependent kernels (a stream serialises them),
// launched one by one and replayed as a CUDA graph.
//
// nvcc -O2 -arch=sm_90 latency.cu -o cuda-latency && ./cuda-latency [block]
// "block" makes the host wait with cudaDeviceScheduleBlockingSync (a
// blocking wait, like a fence wait); by default CUDA spins while it waits.
// "./cuda-latency warm SECONDS" only keeps the GPU busy that long (to raise
// its clock before a run of kompute-bench).
// Prints one line per measurement: "<variant> <case> <metric> <median>".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "Check.cuh"

// kompute-bench's kIncrement: one invocation increments one counter.
__global__ void
increment(unsigned* counter)
{
    counter[0] += 1u;
}

// Median over 7 samples of the seconds per unit of `work`, which does
// `units` units, after two unmeasured runs.
template <typename Work>
static double
perUnit(Work work, int units)
{
    std::vector<double> samples;
    for (int s = 0; s < 9; ++s) {
        auto start = std::chrono::steady_clock::now();
        work();
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (s >= 2) {
            samples.push_back(seconds / units);
        }
    }
    return median(samples);
}

// Keeps the GPU busy: it idles at a low clock and takes about a second of
// work to reach its full clock (docs/performance.md).
__global__ void
busy(unsigned* sink, long long cycles)
{
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        sink[0] += 1u;
    }
}

static void
warmUp(double seconds)
{
    unsigned* sink = nullptr;
    CHECK(cudaMalloc(&sink, sizeof(unsigned)));
    auto start = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
        busy<<<1024, 256>>>(sink, 10'000'000);
        CHECK(cudaDeviceSynchronize());
    }
    CHECK(cudaFree(sink));
}

int
main(int argc, char** argv)
{
    if (argc > 2 && std::strcmp(argv[1], "warm") == 0) {
        warmUp(std::atof(argv[2])); // "warm SECONDS": only that
        return 0;
    }
    bool blocking = argc > 1 && std::strcmp(argv[1], "block") == 0;
    if (blocking) {
        CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    }
    const char* variant = blocking ? "cuda_blocking_sync" : "cuda";
    unsigned* counter = nullptr;
    CHECK(cudaMalloc(&counter, sizeof(unsigned)));
    CHECK(cudaMemset(counter, 0, sizeof(unsigned)));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    const int evals = 2000;
    double roundTrip = perUnit(
      [&] {
          for (int i = 0; i < evals; ++i) {
              increment<<<1, 1, 0, stream>>>(counter);
              CHECK(cudaStreamSynchronize(stream));
          }
      },
      evals);
    std::printf("%s a_eval_roundtrip us_per_eval %.3f\n", variant, roundTrip * 1e6);

    const int launches = 1000;
    double perLaunch = perUnit(
      [&] {
          for (int i = 0; i < launches; ++i) {
              increment<<<1, 1, 0, stream>>>(counter);
          }
          CHECK(cudaStreamSynchronize(stream));
      },
      launches);
    std::printf("%s c_dispatch_dependent us_per_dispatch %.3f\n", variant, perLaunch * 1e6);

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < launches; ++i) {
        increment<<<1, 1, 0, stream>>>(counter);
    }
    CHECK(cudaStreamEndCapture(stream, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    double perReplayedLaunch = perUnit(
      [&] {
          CHECK(cudaGraphLaunch(exec, stream));
          CHECK(cudaStreamSynchronize(stream));
      },
      launches);
    std::printf("%s_graph c_dispatch_dependent us_per_dispatch %.3f\n", variant, perReplayedLaunch * 1e6);

    unsigned total = 0;
    CHECK(cudaMemcpy(&total, counter, sizeof(unsigned), cudaMemcpyDeviceToHost));
    unsigned expected = 9u * (evals + 2u * launches);
    if (total != expected) {
        std::fprintf(stderr, "the counter is %u, not %u\n", total, expected);
        return 1;
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(counter));
    return 0;
}
