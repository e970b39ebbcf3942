// SPDX-License-Identifier: Apache-2.0
// The kernel library's cases: softmax, rmsnorm, attention decode,
// attention prefill (TFLOP/s, see its case) and the small operations of a
// decode step (decode_ops, in microseconds). Each
// runs the operation 5 times back to back with GPU timestamps around each,
// reports GB/s over the bytes the operation must move and that figure as a
// share of the device's measured copy bandwidth (case g's "kompute" figure
// when case g ran in this process, else an OpCopy of 512 MiB measured here),
// and checks the result against a host loop ("ok", or the case fails).
#include "KernelTiming.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>
#include <stdexcept>

namespace bench {

namespace {

using Tensors = std::vector<std::shared_ptr<kp::Memory>>;

/** The device's copy bandwidth (bytes read + written per second, GB/s). */
double
copyBandwidth(Context& context)
{
    for (const auto& m : context.measurements()) {
        if (m.caseName == "g_copy_shader_bandwidth" && m.variant == "kompute" && m.metric == "GB/s" &&
            !m.samples.empty()) {
            return m.median();
        }
    }
    static double measured = 0.0;
    if (measured == 0.0) {
        kp::Manager& mgr = context.manager();
        uint64_t bytes = context.quick() ? (16ull << 20) : (512ull << 20);
        bytes = std::min<uint64_t>(bytes, mgr.getDeviceProperties().limits.maxStorageBufferRange / 16 * 16);
        auto source = mgr.tensorT<uint32_t>(std::vector<uint32_t>(bytes / 4, 7u), kp::Memory::MemoryTypes::eStorage);
        auto target = mgr.tensorT<uint32_t>(bytes / 4, kp::Memory::MemoryTypes::eStorage);
        Measurement copy;
        measureOp(context, copy, std::make_shared<kp::OpCopy>(Tensors{ source, target }), 2.0 * double(bytes));
        measured = copy.median();
        auto& m = context.add("kernels_copy_reference", "kompute_opcopy", "GB/s", true);
        m.samples = copy.samples;
        m.notes["moved"] = std::to_string(bytes) + " bytes read + written (the kernels' bandwidth reference)";
    }
    return measured;
}

/** Adds the share of the copy bandwidth as a measurement of its own. */
void
addShare(Context& context, const std::string& caseName, const std::string& variant, const Measurement& gbs)
{
    double reference = copyBandwidth(context);
    auto& share = context.add(caseName, variant, "%_of_copy_bw", true);
    for (double sample : gbs.samples) {
        share.samples.push_back(100.0 * sample / reference);
    }
    share.notes["copy_bandwidth_GB/s"] = std::to_string(reference);
}

void
expectClose(const std::vector<float>& got,
            const std::vector<float>& expected,
            double tolerance,
            const std::string& what)
{
    double worst = 0.0;
    for (size_t i = 0; i < expected.size(); ++i) {
        double error = std::fabs(double(got[i]) - expected[i]) / (std::fabs(expected[i]) + 1.0);
        if (!(error <= tolerance)) { // NaN fails too
            throw std::runtime_error(what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                                     ", expected " + std::to_string(expected[i]));
        }
        worst = std::max(worst, error);
    }
    std::cout << "  " << what << ": ok (largest relative error " << worst << ")\n";
}

struct RowShape
{
    uint32_t rows, cols;
    std::string name() const { return std::to_string(rows) + "x" + std::to_string(cols); }
};

std::vector<RowShape>
rowShapes(bool quick)
{
    return quick ? std::vector<RowShape>{ { 32, 4096 }, { 256, 4096 } }
                 : std::vector<RowShape>{ { 32, 4096 }, { 4096, 4096 } };
}

/** The row kernels' case: x (eDevice) -> op -> y, checked, then timed. */
template<typename MakeOp, typename Reference>
void
rowCase(Context& context, const char* caseName, MakeOp makeOp, Reference reference)
{
    kp::Manager& mgr = context.manager();
    for (const auto& shape : rowShapes(context.quick())) {
        size_t n = size_t(shape.rows) * shape.cols;
        auto input = randomFloats(n, shape.rows, -4.0f, 4.0f);
        auto x = mgr.tensorT<float>(input);
        auto y = mgr.tensorT<float>(n);
        auto op = makeOp(x, y, shape);
        auto check = mgr.sequence();
        check->record<kp::OpSyncDevice>({ x });
        check->record(op);
        check->record<kp::OpSyncLocal>({ y });
        check->eval();
        expectClose(y->vector(), reference(input, shape), 1e-4, std::string(caseName) + " " + shape.name());
        std::string variant = "kompute_f32_" + shape.name();
        auto& gbs = context.add(caseName, variant, "GB/s", true);
        gbs.notes["moved"] = "x read + y written, f32";
        gbs.notes["path"] = op->path();
        gbs.notes["check"] = "ok";
        measureOp(context, gbs, op, 2.0 * n * sizeof(float));
        addShare(context, caseName, variant, gbs);
    }
}

/** GPU microseconds of each run of `ops` (groups of ops.size() operations
 * run back to back, each waiting for the previous: the cost of dependent
 * dispatches included), as measurement `variant` of `caseName`. */
void
addMicroseconds(Context& context,
                const std::string& caseName,
                const std::string& variant,
                const std::vector<std::shared_ptr<kp::OpBase>>& ops,
                const std::string& path,
                const std::string& check = "ok")
{
    Measurement perOp;
    uint32_t groups = 5;
    measureOps(context, perOp, ops, 1.0, groups * static_cast<uint32_t>(ops.size())); // samples: 1 / seconds
    auto& us = context.add(caseName, variant, "us", false);
    us.notes["path"] = path;
    us.notes["check"] = check;
    us.notes["ops"] = std::to_string(ops.size());
    for (size_t first = 0; first + ops.size() <= perOp.samples.size(); first += ops.size()) {
        double total = 0.0;
        for (size_t i = first; i < first + ops.size(); ++i) {
            total += 1e6 / perOp.samples[i];
        }
        us.samples.push_back(total);
    }
}

} // namespace

BENCH_CASE("decode_ops",
           "The small operations of a Llama-8B decode step, GPU us each: RMSNorm of one 4096 row, the argmax of "
           "128256 logits, OpRoPECache (32 + 8 + 8 heads of 128, f16 cache of 4096) against OpRoPE + 2 OpSetRows")
{
    kp::Manager& mgr = context.manager();
    const uint32_t d = 4096, vocab = 128256, heads = 32, kvHeads = 8, D = 128, capacity = 4096;

    auto weights = randomFloats(d, 1, 0.5f, 1.5f);
    auto row = randomFloats(d, 2, -4.0f, 4.0f);
    auto w = mgr.tensorT<float>(weights);
    auto x = mgr.tensorT<float>(row);
    auto y = mgr.tensorT<float>(d);
    auto norm = std::make_shared<kp::OpRMSNorm>(Tensors{ x, w, y }, kp::RMSNormParams{ 1, d, 1e-6f });
    mgr.sequence()->record<kp::OpSyncDevice>({ x, w })->record(norm)->record<kp::OpSyncLocal>({ y })->eval();
    {
        double squares = 0;
        for (float v : row) {
            squares += double(v) * v;
        }
        double inverse = 1.0 / std::sqrt(squares / d + 1e-6);
        std::vector<float> expected(d);
        for (uint32_t c = 0; c < d; ++c) {
            expected[c] = float(row[c] * inverse * weights[c]);
        }
        expectClose(y->vector(), expected, 1e-4, "rmsnorm 1x4096");
    }
    addMicroseconds(context, "decode_ops", "rmsnorm_1x4096", { norm }, norm->path());

    auto logits = randomFloats(vocab, 3, -8.0f, 8.0f);
    uint32_t best = uint32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    auto l = mgr.tensorT<float>(logits);
    auto index = mgr.tensorT<uint32_t>(std::vector<uint32_t>{ 0 });
    kp::ReduceParams argmaxParams;
    argmaxParams.op = kp::ReduceOp::eArgmax;
    argmaxParams.cols = vocab;
    auto argmax = std::make_shared<kp::OpReduce>(Tensors{ l, index }, argmaxParams);
    mgr.sequence()->record<kp::OpSyncDevice>({ l })->record(argmax)->record<kp::OpSyncLocal>({ index })->eval();
    if (index->vector()[0] != best) {
        throw std::runtime_error("argmax 1x128256: " + std::to_string(index->vector()[0]) + ", expected " +
                                 std::to_string(best));
    }
    std::cout << "  argmax 1x128256: ok\n";
    addMicroseconds(context, "decode_ops", "argmax_1x128256", { argmax }, argmax->path());
    argmaxParams.argmaxGroups = 1; // one workgroup reads it all: the path before issue 19
    auto oneGroup = std::make_shared<kp::OpReduce>(Tensors{ l, index }, argmaxParams);
    addMicroseconds(context, "decode_ops", "argmax_1x128256_one_workgroup", { oneGroup }, oneGroup->path(),
                    "the same index as the default path: checked by test_kernels_rows");

    const uint32_t qkvWidth = (heads + 2 * kvHeads) * D;
    auto qkvValues = randomFloats(qkvWidth, 4, -1.0f, 1.0f);
    auto qkv = mgr.tensorT<float>(qkvValues);
    auto positions = mgr.tensorT<uint32_t>(std::vector<uint32_t>{ 1000 });
    auto makeCache = [&] {
        return mgr.tensor(capacity * kvHeads * D, 2, kp::Memory::DataTypes::eHalf, kp::Memory::MemoryTypes::eStorage);
    };
    auto keys = makeCache();
    auto values = makeCache();
    kp::RoPECacheParams fused;
    fused.heads = heads;
    fused.kvHeads = kvHeads;
    fused.headDim = D;
    fused.theta = 500000.0f;
    auto ropeCache = std::make_shared<kp::OpRoPECache>(Tensors{ qkv, positions, keys, values }, fused);
    mgr.sequence()->eval<kp::OpSyncDevice>({ qkv, positions });
    addMicroseconds(context, "decode_ops", "rope_cache_fused", { ropeCache }, ropeCache->path(),
                    "checked by test_kernels_rope (bit for bit the unfused ops)");

    kp::RoPEParams rope;
    rope.heads = heads + kvHeads;
    rope.headDim = D;
    rope.theta = 500000.0f;
    rope.xRowStride = rope.yRowStride = qkvWidth;
    kp::SetRowsParams set;
    set.cols = kvHeads * D;
    set.srcRowStride = qkvWidth;
    set.srcOffset = heads * D;
    kp::SetRowsParams setValues = set;
    setValues.srcOffset += kvHeads * D;
    std::vector<std::shared_ptr<kp::OpBase>> unfused = {
        std::make_shared<kp::OpRoPE>(Tensors{ qkv, positions, qkv }, rope),
        std::make_shared<kp::OpSetRows>(Tensors{ qkv, keys, positions }, set),
        std::make_shared<kp::OpSetRows>(Tensors{ qkv, values, positions }, setValues),
    };
    addMicroseconds(context, "decode_ops", "rope_then_2_setrows", unfused, "element-wise", "checked by test_kernels_attention");
}

BENCH_CASE("softmax", "OpSoftmax over rows of 4096 f32 (GB/s over read + write)")
{
    rowCase(
      context,
      "softmax",
      [&](auto& x, auto& y, const RowShape& shape) {
          kp::SoftmaxParams params;
          params.rows = shape.rows;
          params.cols = shape.cols;
          return std::make_shared<kp::OpSoftmax>(Tensors{ x, y }, params);
      },
      [](const std::vector<float>& x, const RowShape& shape) {
          std::vector<float> y(x.size());
          for (uint32_t r = 0; r < shape.rows; ++r) {
              const float* row = x.data() + size_t(r) * shape.cols;
              double m = *std::max_element(row, row + shape.cols);
              double sum = 0;
              for (uint32_t c = 0; c < shape.cols; ++c) {
                  sum += std::exp(row[c] - m);
              }
              for (uint32_t c = 0; c < shape.cols; ++c) {
                  y[size_t(r) * shape.cols + c] = float(std::exp(row[c] - m) / sum);
              }
          }
          return y;
      });
}

BENCH_CASE("rmsnorm", "OpRMSNorm over rows of 4096 f32 with an f32 weight (GB/s over read + write)")
{
    kp::Manager& mgr = context.manager();
    auto weights = randomFloats(4096, 1, 0.5f, 1.5f);
    auto w = mgr.tensorT<float>(weights);
    mgr.sequence()->eval<kp::OpSyncDevice>({ w });
    rowCase(
      context,
      "rmsnorm",
      [&](auto& x, auto& y, const RowShape& shape) {
          return std::make_shared<kp::OpRMSNorm>(Tensors{ x, w, y }, kp::RMSNormParams{ shape.rows, shape.cols, 1e-6f });
      },
      [&](const std::vector<float>& x, const RowShape& shape) {
          std::vector<float> y(x.size());
          for (uint32_t r = 0; r < shape.rows; ++r) {
              const float* row = x.data() + size_t(r) * shape.cols;
              double squares = 0;
              for (uint32_t c = 0; c < shape.cols; ++c) {
                  squares += double(row[c]) * row[c];
              }
              double inverse = 1.0 / std::sqrt(squares / shape.cols + 1e-6);
              for (uint32_t c = 0; c < shape.cols; ++c) {
                  y[size_t(r) * shape.cols + c] = float(row[c] * inverse * weights[c]);
              }
          }
          return y;
      });
}

/** Attention of one query row (q: heads x D) over positions 0..last of f16
 * caches [position][kvHeads][D], in double: heads x D outputs. */
std::vector<float>
hostAttentionRow(const float* q,
                 const std::vector<kp::float16_t>& k,
                 const std::vector<kp::float16_t>& v,
                 uint32_t last,
                 uint32_t heads,
                 uint32_t kvHeads,
                 uint32_t D)
{
    std::vector<float> out(size_t(heads) * D);
    for (uint32_t h = 0; h < heads; ++h) {
        uint32_t g = h / (heads / kvHeads);
        std::vector<double> s(last + 1);
        double m = -INFINITY;
        for (uint32_t p = 0; p <= last; ++p) {
            double dot = 0;
            for (uint32_t d = 0; d < D; ++d) {
                dot += double(q[h * D + d]) * float(k[(size_t(p) * kvHeads + g) * D + d]);
            }
            s[p] = dot / std::sqrt(double(D));
            m = std::max(m, s[p]);
        }
        double sum = 0;
        for (double& e : s) {
            e = std::exp(e - m);
            sum += e;
        }
        for (uint32_t d = 0; d < D; ++d) {
            double acc = 0;
            for (uint32_t p = 0; p <= last; ++p) {
                acc += s[p] * float(v[(size_t(p) * kvHeads + g) * D + d]);
            }
            out[h * D + d] = float(acc / sum);
        }
    }
    return out;
}

/** Sets KOMPUTE_ENV_DISABLE to `groups` for its lifetime (read when an
 * operation is built). */
class DisabledPaths
{
  public:
    explicit DisabledPaths(const char* groups)
    {
        const char* previous = std::getenv(kName);
        mHad = previous != nullptr;
        mSaved = mHad ? previous : "";
        std::string value = mHad && !mSaved.empty() ? mSaved + "," + groups : groups;
        setenv(kName, value.c_str(), 1);
    }
    ~DisabledPaths() { mHad ? setenv(kName, mSaved.c_str(), 1) : unsetenv(kName); }
    DisabledPaths(const DisabledPaths&) = delete;
    DisabledPaths& operator=(const DisabledPaths&) = delete;

  private:
    static constexpr const char* kName = "KOMPUTE_ENV_DISABLE";
    bool mHad = false;
    std::string mSaved;
};

BENCH_CASE("attention",
           "OpAttention decode: 32 heads, 8 KV heads, head 128, f16 cache of 4096 positions, contexts 128 and 4096 "
           "(GB/s over the context's KV bytes, us per call; the split kernel of before issue 19 beside it)")
{
    kp::Manager& mgr = context.manager();
    const uint32_t heads = 32, kvHeads = 8, D = 128;
    const uint32_t capacity = context.quick() ? 256 : 4096;
    size_t cacheElements = size_t(capacity) * kvHeads * D;
    auto qv = randomFloats(heads * D, 1, -1.0f, 1.0f);
    auto kv = randomFloats(cacheElements, 2, -1.0f, 1.0f);
    auto vv = randomFloats(cacheElements, 3, -1.0f, 1.0f);
    auto q = mgr.tensorT<float>(qv);
    std::vector<kp::float16_t> k16(kv.begin(), kv.end()), v16(vv.begin(), vv.end());
    auto k = mgr.tensorT<kp::float16_t>(k16);
    auto v = mgr.tensorT<kp::float16_t>(v16);
    auto positions = mgr.tensorT<uint32_t>(std::vector<uint32_t>{ capacity - 1 });
    auto out = mgr.tensorT<float>(heads * D);
    mgr.sequence()->eval<kp::OpSyncDevice>({ q, k, v });
    kp::AttentionParams params;
    params.heads = heads;
    params.kvHeads = kvHeads;
    params.headDim = D;
    params.kvCapacity = capacity; // as the LLM runner: the length is the position read on the device
    const Tensors tensors = { q, k, v, positions, out };

    for (uint32_t length : { 128u, capacity }) {
        positions->setData(std::vector<uint32_t>{ length - 1 });
        mgr.sequence()->eval<kp::OpSyncDevice>({ positions });
        // The host reference, on the f16-rounded cache.
        std::vector<float> expected = hostAttentionRow(qv.data(), k16, v16, length - 1, heads, kvHeads, D);
        double kvBytes = 2.0 * length * kvHeads * D * sizeof(kp::float16_t);
        std::string base = "kompute_decode_f16_ctx" + std::to_string(length);
        // The default; the subgroup kernel's fewest positions per workgroup
        // (decodeChunk) beside it; the split kernel, by default and by its
        // chunk sizes (positions per workgroup) where the context is long.
        struct Variant
        {
            std::string suffix;
            uint32_t chunk;
            bool split;
        };
        std::vector<Variant> variants = { { "", 0, false } };
        if (!context.quick()) {
            for (uint32_t chunk : { 64u, 256u }) {
                variants.push_back({ "_chunk" + std::to_string(chunk), chunk, false });
            }
        }
        variants.push_back({ "_split", 0, true });
        if (!context.quick() && length == capacity) {
            for (uint32_t chunk : { 64u, 256u }) {
                variants.push_back({ "_split_chunk" + std::to_string(chunk), chunk, true });
            }
        }
        for (const auto& variant : variants) {
            kp::AttentionParams chosen = params;
            chosen.decodeChunk = variant.chunk;
            std::shared_ptr<kp::OpAttention> op;
            {
                std::optional<DisabledPaths> splitKernel;
                if (variant.split) {
                    splitKernel.emplace("attention-decode-flash"); // the split kernel, as before issue 19
                }
                op = std::make_shared<kp::OpAttention>(tensors, chosen);
            }
            mgr.sequence()->record(op)->record<kp::OpSyncLocal>({ out })->eval();
            std::string name = base + variant.suffix;
            expectClose(out->vector(), expected, 1e-4, "attention " + name + " (" + op->path() + ")");
            auto& gbs = context.add("attention", name, "GB/s", true);
            gbs.notes["moved"] = "K and V of the context read once (2 x context x 8 x 128 x 2 bytes)";
            gbs.notes["path"] = op->path();
            gbs.notes["check"] = "ok";
            measureOp(context, gbs, op, kvBytes);
            addShare(context, "attention", name, gbs);
            auto& us = context.add("attention", name, "us", false);
            us.notes["path"] = op->path();
            for (double sample : gbs.samples) {
                us.samples.push_back(kvBytes / (sample * 1e3));
            }
        }
    }
}


BENCH_CASE("attention_prefill", "OpAttention prefill: 32 heads, 8 KV heads, head 128, f16 cache, causal, 512 and 4096 "
                                "tokens from position 0 (TFLOP/s counting causal work: 4 x 128 x 32 x n(n+1)/2)")
{
    kp::Manager& mgr = context.manager();
    const uint32_t heads = 32, kvHeads = 8, D = 128;
    std::vector<uint32_t> sizes = context.quick() ? std::vector<uint32_t>{ 128 } : std::vector<uint32_t>{ 512, 4096 };
    for (uint32_t n : sizes) {
        size_t cacheElements = size_t(n) * kvHeads * D;
        auto qv = randomFloats(size_t(n) * heads * D, 4, -1.0f, 1.0f);
        auto kv = randomFloats(cacheElements, 5, -1.0f, 1.0f);
        auto vv = randomFloats(cacheElements, 6, -1.0f, 1.0f);
        std::vector<kp::float16_t> k16(kv.begin(), kv.end()), v16(vv.begin(), vv.end());
        auto q = mgr.tensorT<float>(qv);
        auto k = mgr.tensorT<kp::float16_t>(k16);
        auto v = mgr.tensorT<kp::float16_t>(v16);
        std::vector<uint32_t> rowPositions(n);
        for (uint32_t r = 0; r < n; ++r) {
            rowPositions[r] = r;
        }
        auto positions = mgr.tensorT<uint32_t>(rowPositions);
        auto out = mgr.tensorT<float>(size_t(n) * heads * D);
        mgr.sequence()->record<kp::OpSyncDevice>({ q, k, v, positions })->eval();

        // The host reference on sampled rows (first, tile edges, middle, last).
        std::vector<uint32_t> sampled = { 0, 1, 15, 16, 63, 64, n / 2 + 7, n - 2, n - 1 };
        std::vector<float> expected;
        for (uint32_t r : sampled) {
            auto row = hostAttentionRow(qv.data() + size_t(r) * heads * D, k16, v16, r, heads, kvHeads, D);
            expected.insert(expected.end(), row.begin(), row.end());
        }
        // f16 q and weights on the cooperative-matrix path: 2e-3.
        auto check = [&](const std::shared_ptr<kp::OpAttention>& op, const std::string& what) -> std::string {
            mgr.sequence()->record(op)->record<kp::OpSyncLocal>({ out })->eval();
            std::vector<float> all = out->vector();
            std::vector<float> got;
            for (uint32_t r : sampled) {
                got.insert(got.end(), all.begin() + size_t(r) * heads * D, all.begin() + size_t(r + 1) * heads * D);
            }
            try {
                expectClose(got, expected, 2e-3, what);
                return "ok";
            } catch (const std::exception& e) {
                std::cout << "  " << e.what() << "\n";
                return std::string("FAILED: ") + e.what();
            }
        };
        double flops = 4.0 * D * heads * (double(n) * (n + 1) / 2);
        kp::AttentionParams params;
        params.rows = n;
        params.heads = heads;
        params.kvHeads = kvHeads;
        params.headDim = D;
        params.kvCapacity = n;
        Tensors tensors{ q, k, v, positions, out };
        auto measure = [&](const std::shared_ptr<kp::OpAttention>& op, const std::string& variant, uint32_t runs) {
            auto& m = context.add("attention_prefill", variant, "TFLOP/s", true);
            m.notes["path"] = op->path();
            m.notes["work"] = "causal: 4 x 128 x 32 x n(n+1)/2 flops";
            m.notes["check"] = check(op, variant);
            measureOps(context, m, { op }, flops / 1e12, runs);
        };
        std::string base = "kompute_prefill_f16_n" + std::to_string(n);
        // The default (the cooperative-matrix kernel on NVIDIA devices, the
        // SIMT one elsewhere), and the SIMT kernel beside it where they
        // differ.
        auto chosen = std::make_shared<kp::OpAttention>(tensors, params);
        measure(chosen, base, n > 1024 ? 1 : 5);
        if (chosen->path() != "prefill-tiled") {
            DisabledPaths simt("attention-coopmat");
            measure(std::make_shared<kp::OpAttention>(tensors, params), base + "_simt", n > 1024 ? 1 : 5);
        }
        // The cooperative-matrix path's variants (where it runs): cache
        // positions per tile, subgroups per workgroup, K/V prefetch.
        kp::AttentionParams asked = params;
        asked.prefillKvTile = 32;
        if (context.quick() || std::make_shared<kp::OpAttention>(tensors, asked)->path().rfind("prefill-coopmat", 0) != 0) {
            continue;
        }
        for (uint32_t kvTile : { 32u, 64u }) {
            for (uint32_t subgroups : { 1u, 2u, 4u, 8u }) {
                for (bool prefetch : { false, true }) {
                    kp::AttentionParams tuned = params;
                    tuned.prefillKvTile = kvTile;
                    tuned.prefillSubgroups = subgroups;
                    tuned.prefillPrefetch = prefetch;
                    std::shared_ptr<kp::OpAttention> op;
                    try {
                        op = std::make_shared<kp::OpAttention>(tensors, tuned);
                    } catch (const kp::Error& e) {
                        std::cout << "  c" << kvTile << " s" << subgroups << (prefetch ? " prefetch" : "")
                                  << ": " << e.what() << "\n";
                        continue;
                    }
                    measure(op,
                            base + "_c" + std::to_string(kvTile) + "_s" + std::to_string(subgroups) +
                              (prefetch ? "_prefetch" : ""),
                            5);
                }
            }
        }
    }
}

} // namespace bench
