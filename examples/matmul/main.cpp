// Matrix multiplication C = A x B of square float matrices, two ways: a
// naive shader (one invocation per output element, reading A and B from
// device memory) and a tiled one (each workgroup stages 16x16 tiles of A and
// B in shared memory). Both are checked against the host and timed with GPU
// timestamps.
//
// Usage: kompute_matmul [size]   (default 256; a multiple of 16)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <kompute/Kompute.hpp>

static const char* kNaiveShader = R"(
#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(set = 0, binding = 0) readonly buffer MatrixA { float a[]; };
layout(set = 0, binding = 1) readonly buffer MatrixB { float b[]; };
layout(set = 0, binding = 2) writeonly buffer MatrixC { float c[]; };
layout(push_constant) uniform Size { uint n; };

void main()
{
    uint row = gl_GlobalInvocationID.y;
    uint column = gl_GlobalInvocationID.x;
    if (row >= n || column >= n) {
        return;
    }
    float sum = 0.0;
    for (uint k = 0; k < n; ++k) {
        sum += a[row * n + k] * b[k * n + column];
    }
    c[row * n + column] = sum;
}
)";

static const char* kTiledShader = R"(
#version 450
#define TILE 16
layout(local_size_x = TILE, local_size_y = TILE) in;
layout(set = 0, binding = 0) readonly buffer MatrixA { float a[]; };
layout(set = 0, binding = 1) readonly buffer MatrixB { float b[]; };
layout(set = 0, binding = 2) writeonly buffer MatrixC { float c[]; };
layout(push_constant) uniform Size { uint n; };

shared float tileA[TILE][TILE];
shared float tileB[TILE][TILE];

void main()
{
    uint localRow = gl_LocalInvocationID.y;
    uint localColumn = gl_LocalInvocationID.x;
    uint row = gl_WorkGroupID.y * TILE + localRow;
    uint column = gl_WorkGroupID.x * TILE + localColumn;
    float sum = 0.0;
    for (uint tile = 0; tile < n; tile += TILE) {
        tileA[localRow][localColumn] = a[row * n + tile + localColumn];
        tileB[localRow][localColumn] = b[(tile + localRow) * n + column];
        barrier();
        for (uint k = 0; k < TILE; ++k) {
            sum += tileA[localRow][k] * tileB[k][localColumn];
        }
        barrier();
    }
    c[row * n + column] = sum;
}
)";

struct Timing
{
    double milliseconds;
    double maxError;
};

static Timing
run(kp::Manager& mgr,
    const char* name,
    const char* source,
    const std::vector<std::shared_ptr<kp::Memory>>& params,
    const std::shared_ptr<kp::TensorT<float>>& c,
    uint32_t n,
    const std::vector<float>& expected)
{
    constexpr int kRepetitions = 5;
    uint32_t groups = n / 16;
    auto algorithm = mgr.algorithm<float, uint32_t>(
      params, kp::Shader::compileSource(source), { groups, groups, 1 }, {}, { n });
    // One timestamp before and one after the dispatch.
    auto sequence = mgr.sequence(0, 1);
    sequence->record<kp::OpAlgoDispatch>(algorithm);
    std::vector<double> times;
    for (int i = 0; i < kRepetitions; ++i) {
        sequence->eval();
        auto ns = sequence->getTimestampsNs();
        times.push_back((ns[1] - ns[0]) / 1e6);
    }
    mgr.sequence()->eval<kp::OpSyncLocal>({ c });
    double maxError = 0.0;
    std::vector<float> result = c->vector();
    for (size_t i = 0; i < result.size(); ++i) {
        maxError = std::max(maxError, double(std::fabs(result[i] - expected[i])));
    }
    std::sort(times.begin(), times.end());
    double median = times[times.size() / 2];
    double gflops = 2.0 * n * n * double(n) / (median * 1e6);
    std::cout << name << ": median " << median << " ms over " << kRepetitions << " runs, " << gflops
              << " GFLOP/s, max |error| " << maxError << "\n";
    return { median, maxError };
}

int
main(int argc, char** argv)
{
    uint32_t n = argc > 1 ? static_cast<uint32_t>(std::stoul(argv[1])) : 256;
    if (n == 0 || n % 16 != 0) {
        std::cerr << "The size must be a positive multiple of 16\n";
        return 2;
    }

    std::mt19937 random(1);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> a(size_t(n) * n), b(size_t(n) * n);
    for (auto& value : a) value = uniform(random);
    for (auto& value : b) value = uniform(random);

    // The host reference, in double precision.
    std::vector<float> expected(size_t(n) * n);
    for (uint32_t row = 0; row < n; ++row) {
        for (uint32_t column = 0; column < n; ++column) {
            double sum = 0.0;
            for (uint32_t k = 0; k < n; ++k) {
                sum += double(a[size_t(row) * n + k]) * b[size_t(k) * n + column];
            }
            expected[size_t(row) * n + column] = float(sum);
        }
    }

    kp::Manager mgr;
    std::cout << "Device: " << mgr.getDeviceProperties().deviceName.data() << ", " << n << "x" << n
              << " matrices\n";
    auto tensorA = mgr.tensor(a);
    auto tensorB = mgr.tensor(b);
    auto tensorC = mgr.tensor(std::vector<float>(size_t(n) * n, 0.0f));
    std::vector<std::shared_ptr<kp::Memory>> params = { tensorA, tensorB, tensorC };
    mgr.sequence()->eval<kp::OpSyncDevice>(params);

    // Float sums in another order than the host's: allow for rounding.
    double tolerance = 1e-4 * n;
    Timing naive = run(mgr, "naive", kNaiveShader, params, tensorC, n, expected);
    Timing tiled = run(mgr, "tiled", kTiledShader, params, tensorC, n, expected);
    std::cout << "tiled / naive speed: " << naive.milliseconds / tiled.milliseconds << "x\n";
    bool correct = naive.maxError < tolerance && tiled.maxError < tolerance;
    std::cout << (correct ? "Both match the host result\n" : "MISMATCH against the host result\n");
    return correct ? 0 : 1;
}
