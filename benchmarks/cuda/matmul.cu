// CUDA references for kompute-bench's gemm and matvec cases (and for the
// kernel probe): cuBLAS GEMM at 8192^3 in f16 and bf16 (f32 accumulation,
// cublasGemmEx) and f32 (SGEMM with tensor-op math off), the LLM prefill
// product 512 x 14336 x 4096 (f16), the peak of the mma.sync instructions a
// Vulkan cooperative matrix compiles to (m16n8k16, f16 and bf16: the
// ceiling of any Vulkan GEMM here, below Hopper's wgmma that cuBLAS uses),
// a mat-vec over f16 weights (a plain warp-per-row kernel and cuBLAS), and
// the device's read bandwidth.
//
// nvcc -O3 -arch=sm_90 matmul.cu -lcublas -o cuda-matmul && ./cuda-matmul
// Prints one line per measurement: "cuda <case> <metric> <median>".
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "Check.cuh"

#define CHECK_BLAS(call)                                                                   \
    do {                                                                                   \
        cublasStatus_t status = (call);                                                    \
        if (status != CUBLAS_STATUS_SUCCESS) {                                             \
            std::fprintf(stderr, "%s failed: status %d\n", #call, int(status));            \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

template <typename Work>
static double
medianSeconds(Work work, int repetitions)
{
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < 3; ++i) {
        work();
    }
    CHECK(cudaDeviceSynchronize());
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
    CHECK(cudaGetLastError());
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    std::sort(seconds.begin(), seconds.end());
    return seconds[seconds.size() / 2];
}

// Random values in [-1, 1) of any of the three types (never zeros: they
// run faster than real data).
__global__ void
fillKernel(void* data, size_t count, int type, uint32_t seed)
{
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i < count; i += size_t(gridDim.x) * blockDim.x) {
        uint32_t h = uint32_t(i) * 2654435761u ^ seed;
        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        float v = (h & 0xFFFFFF) / float(1 << 23) - 1.0f;
        if (type == 0) {
            static_cast<float*>(data)[i] = v;
        } else if (type == 1) {
            static_cast<__half*>(data)[i] = __float2half(v);
        } else {
            static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16(v);
        }
    }
}

static void*
randomBuffer(size_t count, int type, uint32_t seed)
{
    size_t bytes = count * (type == 0 ? 4 : 2);
    void* p = nullptr;
    CHECK(cudaMalloc(&p, bytes));
    fillKernel<<<1024, 256>>>(p, count, type, seed);
    CHECK(cudaGetLastError());
    return p;
}

// Row-major C[m][n] = A[m][k] * B[k][n] (or B^T for transB, B stored [n][k]),
// through cuBLAS's column-major view: C^T = op(B)^T A^T.
static double
cublasGemm(cublasHandle_t handle, int m, int n, int k, cudaDataType type, bool transB, int repetitions)
{
    int typeCode = type == CUDA_R_32F ? 0 : type == CUDA_R_16F ? 1 : 2;
    void* a = randomBuffer(size_t(m) * k, typeCode, 1);
    void* b = randomBuffer(size_t(k) * n, typeCode, 2);
    float* c = nullptr;
    CHECK(cudaMalloc(&c, size_t(m) * n * 4));
    float alpha = 1, beta = 0;
    double s = medianSeconds(
      [&] {
          if (type == CUDA_R_32F) {
              CHECK_BLAS(cublasSgemm(handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha,
                                     static_cast<float*>(b), transB ? k : n, static_cast<float*>(a), k, &beta, c, n));
          } else {
              CHECK_BLAS(cublasGemmEx(handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, type,
                                      transB ? k : n, a, type, k, &beta, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT));
          }
      },
      repetitions);
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaFree(c));
    return 2.0 * m * n * k / s / 1e12;
}

// 8 independent m16n8k16 multiply-adds per iteration per warp, registers only.
template <bool Bf16>
__global__ void
mmaPeakKernel(float* out, int iterations)
{
    uint32_t a[4], b[2];
    for (int i = 0; i < 4; ++i) {
        a[i] = 0x3C003C00u ^ (threadIdx.x * 7 + i);
    }
    b[0] = 0x3C003C00u ^ threadIdx.x;
    b[1] = 0x3C003C00u ^ (threadIdx.x * 3);
    float c[8][4] = {};
    for (int it = 0; it < iterations; ++it) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            if (Bf16) {
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                             "{%8,%9}, {%0,%1,%2,%3};"
                             : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
            } else {
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                             "{%8,%9}, {%0,%1,%2,%3};"
                             : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
            }
        }
    }
    float sum = 0;
    for (int j = 0; j < 8; ++j) {
        sum += c[j][0] + c[j][1] + c[j][2] + c[j][3];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

template <bool Bf16>
static double
mmaPeak(int sms)
{
    int blocks = sms * 4, threads = 256, iterations = 4096;
    float* out = nullptr;
    CHECK(cudaMalloc(&out, size_t(blocks) * threads * 4));
    double s = medianSeconds([&] { mmaPeakKernel<Bf16><<<blocks, threads>>>(out, iterations); }, 9);
    CHECK(cudaFree(out));
    double mmas = double(blocks) * (threads / 32) * iterations * 8;
    return mmas * 2.0 * 16 * 8 * 16 / s / 1e12;
}

// y[r] = sum_k W[r][k] x[k]: one warp per row, 16-byte loads of W.
__global__ void
matVecKernel(const __half* w, const float* x, float* y, int rows, int k)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= rows) {
        return;
    }
    const uint4* row = reinterpret_cast<const uint4*>(w + size_t(warp) * k);
    float sum = 0;
    for (int i = lane; i < k / 8; i += 32) {
        uint4 packed = row[i];
        const __half2* h = reinterpret_cast<const __half2*>(&packed);
        const float4* xv = reinterpret_cast<const float4*>(x + i * 8);
        float4 x0 = __ldg(xv), x1 = __ldg(xv + 1);
        float2 w0 = __half22float2(h[0]), w1 = __half22float2(h[1]), w2 = __half22float2(h[2]),
               w3 = __half22float2(h[3]);
        sum += w0.x * x0.x + w0.y * x0.y + w1.x * x0.z + w1.y * x0.w + w2.x * x1.x + w2.y * x1.y + w3.x * x1.z +
               w3.y * x1.w;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        sum += __shfl_xor_sync(0xFFFFFFFFu, sum, offset);
    }
    if (lane == 0) {
        y[warp] = sum;
    }
}

static void
matVec(cublasHandle_t handle, int rows, int k)
{
    __half* w = static_cast<__half*>(randomBuffer(size_t(rows) * k, 1, 3));
    float* x = static_cast<float*>(randomBuffer(k, 0, 4));
    __half* xh = static_cast<__half*>(randomBuffer(k, 1, 4));
    float* y = nullptr;
    CHECK(cudaMalloc(&y, size_t(rows) * 4));
    double bytes = double(rows) * k * 2;
    double s = medianSeconds([&] { matVecKernel<<<(rows * 32 + 255) / 256, 256>>>(w, x, y, rows, k); }, 51);
    std::printf("cuda matvec_%dx%d_f16 GB/s %.1f\n", rows, k, bytes / s / 1e9);
    float alpha = 1, beta = 0;
    s = medianSeconds(
      [&] {
          CHECK_BLAS(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, rows, 1, k, &alpha, w, CUDA_R_16F, k, xh,
                                  CUDA_R_16F, k, &beta, y, CUDA_R_32F, rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      },
      51);
    std::printf("cuda_cublas matvec_%dx%d_f16 GB/s %.1f\n", rows, k, bytes / s / 1e9);
    CHECK(cudaFree(w));
    CHECK(cudaFree(x));
    CHECK(cudaFree(xh));
    CHECK(cudaFree(y));
}

__global__ void
readKernel(const uint4* source, size_t count, uint32_t* sink)
{
    uint4 acc = make_uint4(0, 0, 0, 0);
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
        uint4 v = source[i];
        acc.x ^= v.x;
        acc.y ^= v.y;
        acc.z ^= v.z;
        acc.w ^= v.w;
    }
    if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678u) {
        sink[0] = 1;
    }
}

int
main()
{
    cudaDeviceProp properties;
    CHECK(cudaGetDeviceProperties(&properties, 0));
    std::printf("cuda device %s, %d SMs, L2 %d MB\n", properties.name, properties.multiProcessorCount,
                properties.l2CacheSize >> 20);
    int sms = properties.multiProcessorCount;

    // Read bandwidth first (also warms the clocks up).
    size_t bytes = 2ull << 30;
    void* source = randomBuffer(bytes / 4, 0, 9);
    uint32_t* sink = nullptr;
    CHECK(cudaMalloc(&sink, 4));
    for (int perSm : { 4, 8, 16 }) {
        double s = medianSeconds(
          [&] { readKernel<<<sms * perSm, 512>>>(static_cast<const uint4*>(source), bytes / 16, sink); }, 15);
        std::printf("cuda_%dper_sm read_bandwidth GB/s %.1f\n", perSm, bytes / s / 1e9);
    }
    CHECK(cudaFree(source));
    CHECK(cudaFree(sink));

    cublasHandle_t handle;
    CHECK_BLAS(cublasCreate(&handle));
    CHECK_BLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH)); // no TF32 for SGEMM
    std::printf("cuda mma_sync_m16n8k16_f16 TFLOP/s %.1f\n", mmaPeak<false>(sms));
    std::printf("cuda mma_sync_m16n8k16_bf16 TFLOP/s %.1f\n", mmaPeak<true>(sms));
    std::printf("cuda_cublas gemm_8192_f16 TFLOP/s %.1f\n", cublasGemm(handle, 8192, 8192, 8192, CUDA_R_16F, false, 15));
    std::printf("cuda_cublas gemm_8192_bf16 TFLOP/s %.1f\n", cublasGemm(handle, 8192, 8192, 8192, CUDA_R_16BF, false, 15));
    std::printf("cuda_cublas gemm_8192_f32 TFLOP/s %.1f\n", cublasGemm(handle, 8192, 8192, 8192, CUDA_R_32F, false, 7));
    std::printf("cuda_cublas gemm_prefill_512x14336x4096_f16 TFLOP/s %.1f\n",
                cublasGemm(handle, 512, 14336, 4096, CUDA_R_16F, true, 21));
    matVec(handle, 14336, 4096);
    matVec(handle, 4096, 14336);
    CHECK_BLAS(cublasDestroy(handle));
    return 0;
}
