// SPDX-License-Identifier: Apache-2.0
// The matrix cases: gemm (8192^3 in f16, bf16 and f32, and an LLM prefill
// product 512 x 14336 x 4096 with f16, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K
// weights), gemm_llm (the prompt step's four products of a Llama-8B layer
// with the runner's epilogues) and matvec (the 14336 x 4096 and 4096 x 14336 weights of a
// Llama-8B layer in the same types, as decode multiplies them). Each product is checked against
// a host loop on sampled entries ("ok", or the case fails), then timed back
// to back with GPU timestamps: TFLOP/s, or GB/s over the weight bytes and
// their share of the device's read bandwidth measured here.
//
// CUDA's figures join the table when KOMPUTE_BENCH_CUDA_RESULTS names the
// output of benchmarks/cuda/matmul.cu from the same machine: cuBLAS for each
// GEMM, the mma.sync peak (the ceiling of Vulkan cooperative matrices on
// Hopper), CUDA's mat-vec and read bandwidth.
#include "KernelTiming.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace bench {

namespace {

using Tensors = std::vector<std::shared_ptr<kp::Memory>>;

enum class Type
{
    F32,
    F16,
    BF16,
    Q8_0,
    Q4_0,
    Q4_K,
    Q5_K,
    Q6_K,
};

const char*
typeName(Type t)
{
    switch (t) {
        case Type::F32: return "f32";
        case Type::F16: return "f16";
        case Type::BF16: return "bf16";
        case Type::Q8_0: return "q8_0";
        case Type::Q4_0: return "q4_0";
        case Type::Q4_K: return "q4_k";
        case Type::Q5_K: return "q5_k";
        case Type::Q6_K: return "q6_k";
    }
    return "?";
}

kp::WeightFormat
formatOf(Type t)
{
    switch (t) {
        case Type::Q8_0: return kp::WeightFormat::eQ8_0;
        case Type::Q4_0: return kp::WeightFormat::eQ4_0;
        case Type::Q4_K: return kp::WeightFormat::eQ4_K;
        case Type::Q5_K: return kp::WeightFormat::eQ5_K;
        case Type::Q6_K: return kp::WeightFormat::eQ6_K;
        default: return kp::WeightFormat::eNone;
    }
}

/** A tensor of `values` stored as `type` (eStorage-free: eDevice with a
 * host view for the check), and the values as the device holds them. */
std::shared_ptr<kp::Tensor>
operand(kp::Manager& mgr, Type type, const std::vector<float>& values, std::vector<float>& stored)
{
    switch (type) {
        case Type::F32: stored = values; return mgr.tensorT<float>(values);
        case Type::F16: {
            std::vector<kp::float16_t> h(values.begin(), values.end());
            stored.assign(h.begin(), h.end());
            return mgr.tensorT<kp::float16_t>(h);
        }
        case Type::BF16: {
            std::vector<kp::bfloat16_t> b(values.begin(), values.end());
            stored.assign(b.begin(), b.end());
            return mgr.tensorT<kp::bfloat16_t>(b);
        }
        default: {
            auto bytes = kp::quantize(formatOf(type), values.data(), values.size());
            stored = kp::dequantize(formatOf(type), bytes.data(), values.size() / kp::blockWeights(formatOf(type)));
            return mgr.tensorT<uint8_t>(bytes);
        }
    }
}

double
operandBytes(Type type, double count)
{
    switch (type) {
        case Type::F32: return 4 * count;
        case Type::F16:
        case Type::BF16: return 2 * count;
        default: return count / kp::blockWeights(formatOf(type)) * kp::blockBytes(formatOf(type));
    }
}

/** CUDA's figures from KOMPUTE_BENCH_CUDA_RESULTS ("variant case metric
 * value" lines), added as variants of the matching cases. */
void
addCudaFigures(Context& context, const std::string& prefix)
{
    const char* path = std::getenv("KOMPUTE_BENCH_CUDA_RESULTS");
    if (!path) {
        return;
    }
    std::ifstream file(path);
    std::string line;
    double readBandwidth = 0;
    while (std::getline(file, line)) {
        std::istringstream words(line);
        std::string variant, name, metric;
        double value = 0;
        if (!(words >> variant >> name >> metric >> value) || variant.rfind("cuda", 0) != 0) {
            continue;
        }
        if (name == "read_bandwidth") {
            readBandwidth = std::max(readBandwidth, value);
            continue;
        }
        if (name.rfind(prefix, 0) == 0) {
            auto& m = context.add(name, variant, metric, true);
            m.samples.push_back(value);
            m.notes["source"] = path;
        } else if (prefix == "gemm" && name.rfind("mma_sync", 0) == 0) {
            // The ceiling of the cooperative-matrix cases of that type.
            std::string type = name.substr(name.rfind('_') + 1);
            auto& m = context.add("gemm_8192_" + type, "cuda_mma_sync_peak", metric, true);
            m.samples.push_back(value);
            m.notes["source"] = path;
        }
    }
    if (prefix == "matvec" && readBandwidth > 0) {
        auto& m = context.add("matvec_read_bandwidth", "cuda", "GB/s", true);
        m.samples.push_back(readBandwidth);
    }
}

struct GemmShape
{
    std::string name;
    uint32_t m, n, k;
    bool transB;
    Type a, b;
};

} // namespace

BENCH_CASE("gemm", "OpMatMul GEMM: 8192^3 f16, bf16, f32 (f32 accumulation) and the prefill 512x14336x4096 with f16/Q8_0/Q4_0/Q4_K/Q5_K/Q6_K weights (TFLOP/s)")
{
    kp::Manager& mgr = context.manager();
    uint32_t big = context.quick() ? 256 : 8192;
    uint32_t tokens = context.quick() ? 64 : 512, in = context.quick() ? 256 : 4096, out = context.quick() ? 512 : 14336;
    std::string square = std::to_string(big);
    std::string prefill = "prefill_" + std::to_string(tokens) + "x" + std::to_string(out) + "x" + std::to_string(in);
    std::vector<GemmShape> shapes = {
        { "gemm_" + square + "_f16", big, big, big, false, Type::F16, Type::F16 },
        { "gemm_" + square + "_bf16", big, big, big, false, Type::BF16, Type::BF16 },
        { "gemm_" + square + "_f32", big, big, big, false, Type::F32, Type::F32 },
        { "gemm_" + prefill + "_f16", tokens, out, in, true, Type::F32, Type::F16 },
        { "gemm_" + prefill + "_q8_0", tokens, out, in, true, Type::F32, Type::Q8_0 },
        { "gemm_" + prefill + "_q4_0", tokens, out, in, true, Type::F32, Type::Q4_0 },
        { "gemm_" + prefill + "_q4_k", tokens, out, in, true, Type::F32, Type::Q4_K },
        { "gemm_" + prefill + "_q5_k", tokens, out, in, true, Type::F32, Type::Q5_K },
        { "gemm_" + prefill + "_q6_k", tokens, out, in, true, Type::F32, Type::Q6_K },
    };
    for (const auto& s : shapes) {
        std::vector<float> aValues, bValues;
        auto a = operand(mgr, s.a, randomFloats(size_t(s.m) * s.k, 1, -1.0f, 1.0f), aValues);
        auto b = operand(mgr, s.b, randomFloats(size_t(s.k) * s.n, 2, -1.0f, 1.0f), bValues);
        auto c = mgr.tensorT<float>(size_t(s.m) * s.n);
        kp::MatMulParams p;
        p.m = s.m;
        p.n = s.n;
        p.k = s.k;
        p.transB = s.transB;
        p.formatB = formatOf(s.b);
        auto op = std::make_shared<kp::OpMatMul>(Tensors{ a, b, c }, p);
        mgr.sequence()->record<kp::OpSyncDevice>({ a, b })->record(op)->record<kp::OpSyncLocal>({ c })->eval();

        // Sampled entries against a double-precision loop on the operands as
        // the kernel multiplies them (the cooperative-matrix paths round f32
        // to f16).
        bool roundsToF16 = op->path() == "coopmat-nv" || op->path() == "coopmat-khr";
        auto seen = [&](Type t, float v) { return roundsToF16 && t == Type::F32 ? float(kp::float16_t(v)) : v; };
        const float* result = c->data();
        double worst = 0;
        std::mt19937 engine(3);
        for (int sample = 0; sample < 48; ++sample) {
            uint32_t i = sample == 0 ? s.m - 1 : engine() % s.m, j = sample == 0 ? s.n - 1 : engine() % s.n;
            double sum = 0, magnitude = 0;
            for (uint32_t kk = 0; kk < s.k; ++kk) {
                double x = seen(s.a, aValues[size_t(i) * s.k + kk]);
                double y = seen(s.b, s.transB ? bValues[size_t(j) * s.k + kk] : bValues[size_t(kk) * s.n + j]);
                sum += x * y;
                magnitude += std::fabs(x * y);
            }
            double error = std::fabs(result[size_t(i) * s.n + j] - sum) / magnitude;
            if (!(error <= 1e-4)) {
                throw std::runtime_error(s.name + ": C[" + std::to_string(i) + "][" + std::to_string(j) + "] = " +
                                         std::to_string(result[size_t(i) * s.n + j]) + ", expected " +
                                         std::to_string(sum) + " (path " + op->path() + ")");
            }
            worst = std::max(worst, error);
        }
        std::cout << "  " << s.name << ": ok on " << op->path() << " (largest error " << worst << " of sum |a b|)\n";
        auto& tflops = context.add(s.name, "kompute", "TFLOP/s", true);
        tflops.notes["path"] = op->path();
        tflops.notes["check"] = "ok";
        measureOps(context, tflops, { op }, 2.0 * s.m * s.n * s.k / 1e12);
    }
    addCudaFigures(context, "gemm");
}

// The prompt step's products as kompute-llm records them (Llama-8B, 512
// tokens): A the f16 rows the runner hands its products, B a layer's
// weights, C and the epilogues as the runner's: attn_qkv (f32 C),
// attn_output and ffn_down adding into the residual (beta = 1, f32 C), and
// gate and up as one product with the SwiGLU in its epilogue (swigluC, f16
// C). Each in GGUF's Q8_0 and Q4_0 and in their grouped forms (Q8_0X8,
// Q4_0X8: kp::groupBlocks, as the runner stores what
// kp::preferredWeightFormat answers grouped), and f16: the bare products of
// "gemm" and of kompute-kernel-probe ran Q8_0X8 faster than Q8_0 where the
// runner's pp512 ran it slower (docs/performance.md, twelfth session).
BENCH_CASE("gemm_llm",
           "OpMatMul as the LLM runner's prompt step records it: Llama-8B's qkv, attn_output (+=), gate_up with the "
           "SwiGLU epilogue (f16 C) and ffn_down (+=) at 512 tokens of f16 rows, f16/Q8_0/Q8_0X8/Q4_0/Q4_0X8 weights "
           "(TFLOP/s)")
{
    kp::Manager& mgr = context.manager();
    uint32_t tokens = context.quick() ? 64 : 512, d = context.quick() ? 256 : 4096, ff = context.quick() ? 512 : 14336;
    struct Product
    {
        const char* name;
        uint32_t n, k;
        bool accumulate, swiglu;
    };
    const Product products[] = { { "qkv", d * 3 / 2, d, false, false },
                                 { "attn_output", d, d, true, false },
                                 { "gate_up", ff, d, false, true },
                                 { "ffn_down", d, ff, true, false } };
    struct Weights
    {
        const char* name;
        Type stored;     // the values' format
        bool grouped;    // stored as groupBlocks makes it
    };
    const Weights weights[] = {
        { "f16", Type::F16, false },   { "q8_0", Type::Q8_0, false }, { "q8_0x8", Type::Q8_0, true },
        { "q4_0", Type::Q4_0, false }, { "q4_0x8", Type::Q4_0, true },
    };
    for (const Product& pr : products) {
        uint32_t bRows = pr.swiglu ? 2 * pr.n : pr.n; // gate rows, then up rows
        std::vector<float> aValues, bValues;
        auto a = operand(mgr, Type::F16, randomFloats(size_t(tokens) * pr.k, 11, -1.0f, 1.0f), aValues);
        std::vector<float> cStart = randomFloats(size_t(tokens) * pr.n, 13, -1.0f, 1.0f);
        for (const Weights& w : weights) {
            auto b = operand(mgr, w.stored, randomFloats(size_t(bRows) * pr.k, 12, -0.1f, 0.1f), bValues);
            kp::WeightFormat format = formatOf(w.stored);
            if (w.grouped) {
                format = kp::groupedFormat(format);
                b = mgr.tensorT<uint8_t>(kp::groupBlocks(formatOf(w.stored), b->data<uint8_t>(), b->size()));
            }
            std::shared_ptr<kp::Tensor> c;
            if (pr.swiglu) {
                c = mgr.tensorT<kp::float16_t>(size_t(tokens) * pr.n);
            } else {
                c = mgr.tensorT<float>(cStart);
            }
            kp::MatMulParams p;
            p.m = tokens;
            p.n = pr.n;
            p.k = pr.k;
            p.transB = true;
            p.beta = pr.accumulate ? 1.0f : 0.0f;
            p.formatB = format;
            p.swigluC = pr.swiglu;
            p.upRowB = pr.swiglu ? pr.n : 0;
            auto op = std::make_shared<kp::OpMatMul>(Tensors{ a, b, c }, p);
            mgr.sequence()->record<kp::OpSyncDevice>({ a, b, c })->record(op)->record<kp::OpSyncLocal>({ c })->eval();

            // Sampled entries against a double-precision loop (A is f16
            // already; B as dequantized).
            std::string name = std::string("gemm_llm_") + pr.name + "_" + w.name;
            std::mt19937 engine(5);
            double worst = 0;
            for (int sample = 0; sample < 32; ++sample) {
                uint32_t i = sample == 0 ? tokens - 1 : engine() % tokens, j = sample == 0 ? pr.n - 1 : engine() % pr.n;
                auto dot = [&](uint32_t row, double& magnitude) {
                    double sum = 0;
                    for (uint32_t kk = 0; kk < pr.k; ++kk) {
                        double x = aValues[size_t(i) * pr.k + kk], y = bValues[size_t(row) * pr.k + kk];
                        sum += x * y;
                        magnitude += std::fabs(x * y);
                    }
                    return sum;
                };
                // The allowed error: 1e-4 of the sums' magnitudes (f32
                // accumulation of rounded products), carried through the
                // SwiGLU, plus f16 C's rounding of the result.
                double expected = 0, got = 0, allowed = 0;
                if (pr.swiglu) {
                    double mg = 0, mu = 0;
                    double g = dot(j, mg), u = dot(pr.n + j, mu);
                    double silu = g / (1.0 + std::exp(-g));
                    expected = silu * u;
                    allowed = 1e-4 * (mg * std::fabs(u) * 1.1 + mu * std::fabs(silu)) + 1e-3 * std::fabs(expected) + 1e-7;
                    got = float(c->data<kp::float16_t>()[size_t(i) * pr.n + j]);
                } else {
                    double magnitude = 0;
                    double start = pr.accumulate ? cStart[size_t(i) * pr.n + j] : 0.0;
                    expected = dot(j, magnitude) + start;
                    allowed = 1e-4 * (magnitude + std::fabs(start));
                    got = c->data<float>()[size_t(i) * pr.n + j];
                }
                double error = std::fabs(got - expected) / allowed;
                if (!(error <= 1.0)) {
                    throw std::runtime_error(name + ": C[" + std::to_string(i) + "][" + std::to_string(j) +
                                             "] = " + std::to_string(got) + ", expected " + std::to_string(expected) +
                                             " (path " + op->path() + ")");
                }
                worst = std::max(worst, error);
            }
            std::cout << "  " << name << ": ok on " << op->path() << " (largest error " << worst << " of the allowed)\n";
            auto& tflops = context.add(name, "kompute", "TFLOP/s", true);
            tflops.notes["path"] = op->path();
            tflops.notes["check"] = "ok";
            measureOps(context, tflops, { op }, 2.0 * tokens * bRows * pr.k / 1e12);
        }
    }
}

namespace {

// The device's read bandwidth: 16-byte loads over 1 GiB, nothing written.
const char* kReadShader = R"(
#version 450
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Source { uvec4 source[]; };
layout(binding = 1) buffer Sink { uint sink[]; };
void main()
{
    uvec4 acc = uvec4(0);
    uint stride = gl_NumWorkGroups.x * 256u;
    for (uint i = gl_GlobalInvocationID.x; i < source.length(); i += stride) {
        acc ^= source[i];
    }
    if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678u) {
        sink[0] = 1u;
    }
}
)";

double
readBandwidth(Context& context)
{
    kp::Manager& mgr = context.manager();
    uint64_t bytes = context.quick() ? (16ull << 20) : (1ull << 30);
    bytes = std::min<uint64_t>(bytes, mgr.getDeviceProperties().limits.maxStorageBufferRange / 16 * 16);
    auto source = mgr.tensorT<uint32_t>(bytes / 4, kp::Memory::MemoryTypes::eStorage);
    auto sink = mgr.tensorT<uint32_t>(1, kp::Memory::MemoryTypes::eStorage);
    auto algorithm = mgr.algorithm({ source, sink }, compile(kReadShader), kp::Workgroup{ 132 * 16, 1, 1 });
    auto& m = context.add("matvec_read_bandwidth", "kompute", "GB/s", true);
    m.notes["what"] = "a shader reading 16-byte words of " + std::to_string(bytes >> 20) + " MiB";
    measureOps(context, m, { std::make_shared<kp::OpAlgoDispatch>(algorithm) }, double(bytes) / 1e9);
    return m.median();
}

} // namespace

BENCH_CASE("matvec", "OpMatMul mat-vec (decode): 14336x4096 and 4096x14336 weights in f16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K (GB/s over the weight bytes)")
{
    kp::Manager& mgr = context.manager();
    double read = readBandwidth(context);
    uint32_t scale = context.quick() ? 16 : 1;
    for (auto shape : std::vector<std::pair<uint32_t, uint32_t>>{ { 14336, 4096 }, { 4096, 14336 } }) {
        uint32_t n = shape.first / scale, k = shape.second / scale;
        for (Type w : { Type::F16, Type::Q8_0, Type::Q4_0, Type::Q4_K, Type::Q5_K, Type::Q6_K }) {
            if (formatOf(w) != kp::WeightFormat::eNone && k % kp::blockWeights(formatOf(w)) != 0) {
                continue; // --quick's k = 896: not whole super-blocks
            }
            std::string name = "matvec_" + std::to_string(n) + "x" + std::to_string(k) + "_" + typeName(w);
            std::vector<float> xValues, wValues, unused;
            auto x = operand(mgr, Type::F32, randomFloats(k, 4, -1.0f, 1.0f), xValues);
            auto y = mgr.tensorT<float>(n);
            // Copies of the weights, each multiplied in turn: more than twice
            // the 60 MB L2 of an H200 between two uses of one copy.
            double bytes = operandBytes(w, double(n) * k);
            uint32_t copies = context.quick() ? 1 : std::min<uint32_t>(8, uint32_t(std::ceil(160e6 / bytes)));
            auto weights = randomFloats(size_t(n) * k, 5, -1.0f, 1.0f);
            std::vector<std::shared_ptr<kp::OpBase>> ops;
            kp::MatMulParams p;
            p.m = 1;
            p.n = n;
            p.k = k;
            p.transB = true;
            p.formatB = formatOf(w);
            std::shared_ptr<kp::OpMatMul> first;
            for (uint32_t copy = 0; copy < copies; ++copy) {
                auto b = operand(mgr, w, weights, copy == 0 ? wValues : unused);
                mgr.sequence()->eval<kp::OpSyncDevice>({ b });
                auto op = std::make_shared<kp::OpMatMul>(Tensors{ x, b, y }, p);
                first = first ? first : op;
                ops.push_back(op);
            }
            mgr.sequence()->record<kp::OpSyncDevice>({ x })->record(first)->record<kp::OpSyncLocal>({ y })->eval();
            const float* result = y->data();
            double worst = 0;
            double tolerance = first->path() == "matvec-int-dot" ? 1.0 / 127 : 1e-4;
            for (uint32_t j = 0; j < n; ++j) {
                double sum = 0, magnitude = 0;
                for (uint32_t kk = 0; kk < k; ++kk) {
                    double v = double(wValues[size_t(j) * k + kk]) * xValues[kk];
                    sum += v;
                    magnitude += std::fabs(v);
                }
                double error = std::fabs(result[j] - sum) / magnitude;
                if (!(error <= tolerance)) {
                    throw std::runtime_error(name + ": y[" + std::to_string(j) + "] = " + std::to_string(result[j]) +
                                             ", expected " + std::to_string(sum) + " (path " + first->path() + ")");
                }
                worst = std::max(worst, error);
            }
            std::cout << "  " << name << ": ok on " << first->path() << " (largest error " << worst
                      << " of sum |w x|)\n";
            auto& gbs = context.add(name, "kompute", "GB/s", true);
            gbs.notes["path"] = first->path();
            gbs.notes["check"] = "ok";
            gbs.notes["moved"] = "the weights, read once (" + std::to_string(copies) + " copies in turn)";
            measureOps(context, gbs, ops, bytes / 1e9, std::max<uint32_t>(5, copies));
            auto& share = context.add(name, "kompute", "%_of_read_bw", true);
            for (double sample : gbs.samples) {
                share.samples.push_back(100.0 * sample / read);
            }
            share.notes["read_bandwidth_GB/s"] = std::to_string(read);
        }
    }
    addCudaFigures(context, "matvec");
}

} // namespace bench
