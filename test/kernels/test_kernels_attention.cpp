// SPDX-License-Identifier: Apache-2.0
// The transformer kernels: OpRoPE (both layouts, partial rotation, strides),
// OpSetRows (the KV-cache write with casts) and OpAttention (decode and
// prefill paths, grouped-query heads, causal limits from positions, f16 and
// f32 caches, both reduction paths), against host loops; a recorded decode
// step re-run with new positions; and the argument checks.
#include "KernelTestSupport.hpp"

#include <algorithm>
#include <cmath>

namespace kp_test {
namespace {

class TransformerKernelTest : public KomputeTest
{
  protected:
    /** AttentionMatchesTheHostOnEveryPath's cases with one cache type, with
     * the subgroup kernels (disabled null) or without them. */
    void attentionOnEveryPath(DataTypes cacheType, const char* disabled);
};

std::vector<float>
hostRoPE(const std::vector<float>& x,
         const std::vector<uint32_t>& positions,
         const kp::RoPEParams& p,
         uint32_t stride,
         const std::vector<float>& factors = {})
{
    std::vector<float> y = x;
    uint32_t dims = p.ropeDims == 0 ? p.headDim : p.ropeDims;
    for (uint32_t r = 0; r < p.rows; ++r) {
        for (uint32_t h = 0; h < p.heads; ++h) {
            size_t base = p.xOffset + size_t(r) * stride + h * p.headDim;
            for (uint32_t i = 0; i < dims / 2; ++i) {
                double angle = positions[r] * double(p.freqScale) * std::pow(double(p.theta), -2.0 * i / dims);
                if (!factors.empty()) {
                    angle /= factors[i];
                }
                uint32_t a = p.mode == kp::RoPEMode::eNeoX ? i : 2 * i;
                uint32_t b = p.mode == kp::RoPEMode::eNeoX ? i + dims / 2 : 2 * i + 1;
                double xa = x[base + a];
                double xb = x[base + b];
                y[base + a] = float(xa * std::cos(angle) - xb * std::sin(angle));
                y[base + b] = float(xa * std::sin(angle) + xb * std::cos(angle));
            }
        }
    }
    return y;
}

TEST_F(TransformerKernelTest, RoPEBothLayoutsPartialAndStrided)
{
    for (kp::RoPEMode mode : { kp::RoPEMode::eNormal, kp::RoPEMode::eNeoX }) {
        for (DataTypes type : { DataTypes::eFloat, DataTypes::eHalf }) {
            for (uint32_t ropeDims : { 0u, 4u }) {
                SCOPED_TRACE(std::string(mode == kp::RoPEMode::eNeoX ? "neox " : "normal ") + shortName(type) +
                             " ropeDims=" + std::to_string(ropeDims));
                kp::RoPEParams p;
                p.rows = 5;
                p.heads = 3;
                p.headDim = 8;
                p.ropeDims = ropeDims;
                p.theta = 500000.0f;
                p.freqScale = 0.5f;
                p.mode = mode;
                p.xRowStride = 3 * 8 + 6; // a row of a fused buffer
                p.yRowStride = p.xRowStride;
                p.xOffset = 2;
                p.yOffset = 2;
                p.positionsOffset = 1;
                std::vector<uint32_t> positions = { 99, 0, 1, 7, 100, 1023 };
                auto values = roundTo(type, randomValues(2 + p.rows * p.xRowStride, 1));
                auto x = floatTensor(mgr(), type, values);
                auto pos = mgr().tensorT<uint32_t>(positions);
                // In place: x is y.
                runOp(mgr(), { x, pos }, std::make_shared<kp::OpRoPE>(Tensors{ x, pos, x }, p), { x });
                std::vector<uint32_t> rowPositions(positions.begin() + 1, positions.end());
                auto expected = roundTo(type, hostRoPE(values, rowPositions, p, p.xRowStride));
                EXPECT_TRUE(near(floatsOf(*x), expected, std::max(tolerance(type), 1e-4f), 1.0f));
            }
        }
    }
}

TEST_F(TransformerKernelTest, RoPEWithFrequencyFactors)
{
    // Llama 3.1's rope_freqs: pair i turns by its angle over factors[i].
    for (kp::RoPEMode mode : { kp::RoPEMode::eNormal, kp::RoPEMode::eNeoX }) {
        for (DataTypes type : { DataTypes::eFloat, DataTypes::eHalf }) {
            SCOPED_TRACE(std::string(mode == kp::RoPEMode::eNeoX ? "neox " : "normal ") + shortName(type));
            kp::RoPEParams p;
            p.rows = 4;
            p.heads = 3;
            p.headDim = 16;
            p.ropeDims = 12;
            p.theta = 500000.0f;
            p.mode = mode;
            p.xRowStride = 3 * 16 + 4;
            p.yRowStride = p.xRowStride;
            p.freqFactorsOffset = 2;
            std::vector<uint32_t> positions = { 0, 5, 300, 8191 };
            std::vector<float> factors = { 9.0f, 9.0f, 1.0f, 1.0f, 1.5f, 3.0f, 8.0f, 8.0f };
            auto values = roundTo(type, randomValues(p.rows * p.xRowStride, 21));
            auto x = floatTensor(mgr(), type, values);
            auto pos = mgr().tensorT<uint32_t>(positions);
            auto f = floatTensor(mgr(), DataTypes::eFloat, factors);
            runOp(mgr(), { x, pos, f }, std::make_shared<kp::OpRoPE>(Tensors{ x, pos, x, f }, p), { x });
            std::vector<float> used(factors.begin() + 2, factors.end());
            auto expected = roundTo(type, hostRoPE(values, positions, p, p.xRowStride, used));
            // Angles in f32 (OpRoPE's documented precision): 1e-4 for the
            // first rows, position * 2^-22 for the last (position 8191).
            std::vector<float> got = floatsOf(*x);
            size_t last = size_t(p.rows - 1) * p.xRowStride;
            EXPECT_TRUE(near(std::vector<float>(got.begin(), got.begin() + last),
                             std::vector<float>(expected.begin(), expected.begin() + last),
                             std::max(tolerance(type), 1e-4f), 1.0f));
            EXPECT_TRUE(near(std::vector<float>(got.begin() + last, got.end()),
                             std::vector<float>(expected.begin() + last, expected.end()),
                             std::max(tolerance(type), float(positions.back()) * std::ldexp(1.0f, -22)), 1.0f));
        }
    }
    auto x = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(64, 1.0f));
    auto pos = mgr().tensorT<uint32_t>(std::vector<uint32_t>(2, 0));
    auto few = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(3, 1.0f));
    kp::RoPEParams p;
    p.rows = 2;
    p.heads = 2;
    p.headDim = 16;
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPE({ x, pos, x, few }, p); }, { "OpRoPE", "'freqFactors'", "ropeDims / 2 = 8" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPE({ x, pos }, p); }, { "OpRoPE", "2 given" }));
}

TEST_F(TransformerKernelTest, SetRowsCastsIntoThePositionsGiven)
{
    for (DataTypes src : { DataTypes::eFloat, DataTypes::eHalf }) {
        for (DataTypes dst : floatTypes()) {
            SCOPED_TRACE(shortName(src) + " -> " + shortName(dst));
            uint32_t rows = 3, cols = 5, dstStride = 7, capacity = 6;
            auto values = roundTo(src, randomValues(rows * cols, 2, -100.0f, 100.0f));
            auto s = floatTensor(mgr(), src, values);
            auto d = floatTensor(mgr(), dst, std::vector<float>(1 + capacity * dstStride, -1.0f));
            // Row 1 goes nowhere: position 6 is past the capacity.
            auto positions = mgr().tensorT<uint32_t>({ 4, 6, 0 });
            kp::SetRowsParams p;
            p.rows = rows;
            p.cols = cols;
            p.dstRowStride = dstStride;
            p.dstOffset = 1;
            runOp(mgr(), { s, d, positions }, std::make_shared<kp::OpSetRows>(Tensors{ s, d, positions }, p), { d });
            std::vector<float> expected(1 + capacity * dstStride, -1.0f);
            uint32_t targets[] = { 4, 99, 0 };
            for (uint32_t r = 0; r < rows; ++r) {
                for (uint32_t c = 0; c < cols && targets[r] < capacity; ++c) {
                    expected[1 + targets[r] * dstStride + c] = roundTo(dst, values[r * cols + c]);
                }
            }
            EXPECT_TRUE(near(floatsOf(*d), expected, tolerance(dst), 0.0f));
        }
    }
}

struct AttentionCase
{
    const char* name;
    uint32_t rows, heads, kvHeads, headDim, capacity;
    std::vector<uint32_t> positions;
    bool causal;
    kp::AttentionPath path;
    uint32_t decodeChunk = 0;
};

void
TransformerKernelTest::attentionOnEveryPath(DataTypes cacheType, const char* disabled)
{
    const std::vector<AttentionCase> cases = {
        { "decode, one position", 1, 4, 2, 8, 40, { 0 }, true, kp::AttentionPath::eAuto },
        { "decode, GQA, chunks", 1, 8, 2, 32, 300, { 263 }, true, kp::AttentionPath::eAuto },
        { "decode, MHA, last position", 2, 2, 2, 64, 70, { 68, 69 }, true, kp::AttentionPath::eDecode },
        { "decode, clamped position", 1, 2, 1, 16, 20, { 500 }, true, kp::AttentionPath::eDecode },
        { "decode, not causal", 3, 4, 4, 8, 50, { 10, 20, 30 }, false, kp::AttentionPath::eDecode },
        { "prefill, causal", 21, 4, 2, 16, 64, {}, true, kp::AttentionPath::eAuto },
        { "prefill, head 128, after a past", 17, 2, 1, 128, 100, {}, true, kp::AttentionPath::ePrefill },
        { "prefill, not causal", 9, 3, 1, 12, 30, {}, false, kp::AttentionPath::ePrefill },
        { "prefill on the decode path", 9, 4, 2, 8, 30, {}, true, kp::AttentionPath::eDecode },
        { "decode, chunks of 16", 1, 4, 1, 16, 100, { 90 }, true, kp::AttentionPath::eDecode, 16 },
        { "decode, chunks of 256", 1, 4, 1, 16, 700, { 650 }, true, kp::AttentionPath::eDecode, 256 },
        // The benchmark's head size: groups of 8 and 1, odd context lengths.
        { "decode, group 8, head 128", 1, 16, 2, 128, 333, { 300 }, true, kp::AttentionPath::eDecode },
        { "decode, group 1, head 128, chunks of 32", 2, 4, 4, 128, 161, { 100, 160 }, true, kp::AttentionPath::eDecode, 32 },
        { "decode, group 4, head 96", 1, 8, 2, 96, 77, { 76 }, true, kp::AttentionPath::eDecode, 16 },
        { "decode, group 4, head 256", 1, 4, 1, 256, 50, { 48 }, true, kp::AttentionPath::eDecode, 16 },
        { "decode, head 4", 1, 2, 1, 4, 37, { 36 }, true, kp::AttentionPath::eDecode, 16 },
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto& c = cases[i];
        bool decode = c.path == kp::AttentionPath::eDecode || (c.path == kp::AttentionPath::eAuto && c.rows <= 4);
        if (disabled != nullptr && !decode) {
            continue; // the prefill kernel has no subgroup variant
        }
        // Rows at odd elements (scalar loads) or at multiples of 4
        // (vector loads on the decode path), case by case (each
        // variant compiles once per pipeline: lavapipe is slow at it).
        uint32_t kvOffset = (i + (disabled != nullptr ? 1 : 0)) % 2 == 0 ? 3 : 4;
        SCOPED_TRACE(std::string(c.name) + " " + shortName(cacheType) + (disabled ? " shared-memory" : "") +
                     " kvOffset " + std::to_string(kvOffset));
        kp::AttentionParams p;
        p.rows = c.rows;
        p.heads = c.heads;
        p.kvHeads = c.kvHeads;
        p.headDim = c.headDim;
        p.kvCapacity = c.capacity;
        p.causal = c.causal;
        p.path = c.path;
        p.decodeChunk = c.decodeChunk;
        p.kvOffset = kvOffset;
        p.kvRowStride = c.kvHeads * c.headDim + 4;
        std::vector<uint32_t> positions = c.positions;
        if (positions.empty()) { // prefill after a past of 5 positions
            for (uint32_t r = 0; r < c.rows; ++r) {
                positions.push_back(5 + r);
            }
        }
        uint32_t kvStride = p.kvRowStride;
        auto qv = randomValues(size_t(c.rows) * c.heads * c.headDim, 1, -1.0f, 1.0f);
        auto kvv = roundTo(cacheType, randomValues(kvOffset + size_t(c.capacity) * kvStride, 2, -1.0f, 1.0f));
        auto vvv = roundTo(cacheType, randomValues(kvOffset + size_t(c.capacity) * kvStride, 3, -1.0f, 1.0f));
        // Sharp attention: scaled so that a few positions dominate.
        p.scale = 2.0f;
        auto q = floatTensor(mgr(), DataTypes::eFloat, qv);
        auto k = floatTensor(mgr(), cacheType, kvv);
        auto v = floatTensor(mgr(), cacheType, vvv);
        auto pos = mgr().tensorT<uint32_t>(positions);
        auto out = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(qv.size(), 0.0f));
        std::shared_ptr<kp::OpAttention> op;
        {
            // The SIMT prefill kernel on every device (the
            // cooperative-matrix one has its own test below).
            DisablePaths paths(decode ? disabled : "attention-coopmat");
            op = std::make_shared<kp::OpAttention>(Tensors{ q, k, v, pos, out }, p);
        }
        // The subgroup decode kernel where the device has shuffles
        // (pinned by DecodeOnSubgroupsMatchesTheHostAtEveryLength),
        // the split kernel on the shared-memory path.
        EXPECT_EQ(op->path().rfind(decode ? (disabled ? "decode-split-shared-memory" : "decode-") : "prefill-tiled", 0), 0u) << op->path();
        runOp(mgr(), { q, k, v, pos }, op, { out });
        auto expected = hostAttention(qv, kvv, vvv, positions, p);
        EXPECT_TRUE(near(floatsOf(*out), expected, 2e-4f, 1.0f));
        if (cacheType == DataTypes::eHalf && i % 3 == 0) {
            // An f16 out (f16 caches only) on the same path: the result
            // rounded once, within f16's half unit on top of 2e-4. (A third
            // of the cases: each is a pipeline more for lavapipe to compile.)
            auto out16 = floatTensor(mgr(), DataTypes::eHalf, std::vector<float>(qv.size(), 0.0f));
            std::shared_ptr<kp::OpAttention> op16;
            {
                DisablePaths paths(decode ? disabled : "attention-coopmat");
                op16 = std::make_shared<kp::OpAttention>(Tensors{ q, k, v, pos, out16 }, p);
            }
            EXPECT_EQ(op16->path(), op->path());
            runOp(mgr(), { q, k, v, pos }, op16, { out16 });
            EXPECT_TRUE(near(floatsOf(*out16), expected, 1e-3f, 1.0f)) << "f16 out";
        }
    }
}

// Every path against the host, in four cases (each cache type, with and
// without subgroups) that compile different kernel variants: lavapipe
// takes minutes to compile them all with a cold shader cache, and CTest
// runs the binary in shards (test/kernels/CMakeLists.txt).
TEST_F(TransformerKernelTest, AttentionMatchesTheHostOnEveryPathF16Cache)
{
    attentionOnEveryPath(DataTypes::eHalf, nullptr);
}

TEST_F(TransformerKernelTest, AttentionMatchesTheHostOnEveryPathF32Cache)
{
    attentionOnEveryPath(DataTypes::eFloat, nullptr);
}

TEST_F(TransformerKernelTest, AttentionMatchesTheHostWithoutSubgroupsF16Cache)
{
    attentionOnEveryPath(DataTypes::eHalf, "subgroup");
}

TEST_F(TransformerKernelTest, AttentionMatchesTheHostWithoutSubgroupsF32Cache)
{
    attentionOnEveryPath(DataTypes::eFloat, "subgroup");
}

struct CoopmatPrefillCase
{
    const char* name;
    uint32_t rows, heads, kvHeads, headDim, past;
    bool causal;
    uint32_t kvOffset, rowPadding; // rowPadding: extra elements per cache row
    float scale;                   // 0: 1 / sqrt(headDim)
};

const std::vector<CoopmatPrefillCase> kCoopmatPrefillCases = {
    { "MHA, head 64, rows not a multiple of the tile", 37, 4, 4, 64, 5, true, 8, 8, 0.0f },
    { "GQA 4, head 128, after a past, scalar cache loads", 100, 8, 2, 128, 30, true, 3, 4, 0.0f },
    { "GQA 4, head 128, not causal", 19, 8, 2, 128, 40, false, 8, 0, 0.0f },
    { "GQA 3, head 64, sharp", 45, 6, 2, 64, 7, true, 0, 0, 2.0f },
    { "GQA 4, head 128, the LLM's layout, from position 0", 300, 32, 8, 128, 0, true, 0, 0, 0.0f },
    { "MHA, head 128, five rows, deep past", 5, 2, 2, 128, 200, true, 16, 8, 0.0f },
    { "GQA 4, head 64, not causal, sharp", 70, 8, 2, 64, 3, false, 5, 4, 2.0f },
};

/** The tensors and host result of one case; positions past the last row's
 * hold NaN (unwritten cache rows must not leak into the result). */
struct PrefillInputs
{
    kp::AttentionParams p;
    std::shared_ptr<kp::Tensor> q, k, v, pos;
    std::vector<float> expected;
    size_t outSize = 0;

    PrefillInputs(kp::Manager& mgr, const CoopmatPrefillCase& c, uint32_t seed)
    {
        p.rows = c.rows;
        p.heads = c.heads;
        p.kvHeads = c.kvHeads;
        p.headDim = c.headDim;
        p.kvCapacity = c.past + c.rows + 3;
        p.causal = c.causal;
        p.path = kp::AttentionPath::ePrefill;
        p.kvOffset = c.kvOffset;
        p.kvRowStride = c.kvHeads * c.headDim + c.rowPadding;
        p.scale = c.scale;
        p.positionsOffset = 1;
        std::vector<uint32_t> positions = { 12345 };
        for (uint32_t r = 0; r < c.rows; ++r) {
            positions.push_back(c.past + r);
        }
        size_t cacheSize = c.kvOffset + size_t(p.kvCapacity) * p.kvRowStride;
        auto qv = randomValues(size_t(c.rows) * c.heads * c.headDim, 40 + seed, -1.0f, 1.0f);
        auto kvv = roundTo(DataTypes::eHalf, randomValues(cacheSize, 50 + seed, -1.0f, 1.0f));
        auto vvv = roundTo(DataTypes::eHalf, randomValues(cacheSize, 60 + seed, -1.0f, 1.0f));
        for (size_t e = c.kvOffset + size_t(c.past + c.rows) * p.kvRowStride; e < cacheSize; ++e) {
            kvv[e] = NAN;
            vvv[e] = NAN;
        }
        q = floatTensor(mgr, DataTypes::eFloat, qv);
        k = floatTensor(mgr, DataTypes::eHalf, kvv);
        v = floatTensor(mgr, DataTypes::eHalf, vvv);
        pos = mgr.tensorT<uint32_t>(positions);
        expected = hostAttention(qv, kvv, vvv, std::vector<uint32_t>(positions.begin() + 1, positions.end()), p);
        outSize = qv.size();
    }
};

// The cooperative-matrix prefill kernel (f16 caches, heads of 64 or 128) in
// each of its tile variants, where the device has the matrices (the H200);
// skipped with the reason elsewhere (lavapipe has none). f16 rounding of q
// and of the softmax weights: 2e-3 of the output's range.
TEST_F(TransformerKernelTest, AttentionPrefillOnCooperativeMatricesWhereTheDeviceHasThem)
{
    struct Variant
    {
        uint32_t kvTile, subgroups;
        bool prefetch;
    };
    // Asked for by tile or subgroups (the default stays on the SIMT kernel
    // until an H200 run has checked and timed this one, below).
    const std::vector<Variant> variants = { { 32, 0, false }, { 0, 2, false }, { 32, 4, true }, { 64, 2, false },
                                            { 64, 4, true }, { 32, 8, false }, { 32, 1, false } };
    // Both SPIR-V forms where the device has both (the H200): KHR, then NV
    // with KHR turned off.
    const kp::DeviceCapabilities& caps = mgr().capabilities();
    std::vector<std::pair<const char*, const char*>> forms = { { nullptr, "prefill-coopmat-" } };
    if (caps.cooperativeMatrix.khr && caps.cooperativeMatrix.nv) {
        forms.push_back({ "coopmat-khr", "prefill-coopmat-nv-" });
    }
    size_t ran = 0;
    std::string skipped;
    for (size_t i = 0; i < kCoopmatPrefillCases.size() && skipped.empty(); ++i) {
        const auto& c = kCoopmatPrefillCases[i];
        PrefillInputs in(mgr(), c, uint32_t(i));
        for (const auto& [disabled, prefix] : forms) {
            for (const auto& variant : variants) {
                SCOPED_TRACE(std::string(c.name) + ", kvTile " + std::to_string(variant.kvTile) + ", subgroups " +
                             std::to_string(variant.subgroups) + (variant.prefetch ? ", prefetch" : "") +
                             (disabled ? ", NV" : ""));
                kp::AttentionParams vp = in.p;
                vp.prefillKvTile = variant.kvTile;
                vp.prefillSubgroups = variant.subgroups;
                vp.prefillPrefetch = variant.prefetch;
                auto out = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(in.outSize, -7.0f));
                std::shared_ptr<kp::OpAttention> op;
                try {
                    DisablePaths paths(disabled);
                    op = std::make_shared<kp::OpAttention>(Tensors{ in.q, in.k, in.v, in.pos, out }, vp);
                } catch (const kp::Error& e) {
                    // An explicit variant larger than the device's shared memory
                    // or workgroup: a clear error, not a wrong result.
                    EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos) << e.what();
                    continue;
                }
                if (op->path().rfind("prefill-coopmat-", 0) != 0) {
                    skipped = op->path();
                    break;
                }
                if (variant.kvTile == 32 && variant.subgroups == 0 && !disabled) {
                    // The same shape without a variant asked for: on NVIDIA
                    // devices from 64 rows on the NV form of this kernel (32
                    // positions per tile, 4 subgroups), else the SIMT kernel.
                    auto plain = std::make_shared<kp::OpAttention>(Tensors{ in.q, in.k, in.v, in.pos, out }, in.p);
                    bool byDefault = caps.vendorID == 0x10DE && caps.cooperativeMatrix.nv && c.rows >= 64;
                    EXPECT_EQ(plain->path(), byDefault ? "prefill-coopmat-nv-c32-s4" : "prefill-tiled");
                    runOp(mgr(), { in.q, in.k, in.v, in.pos }, plain, { out });
                    EXPECT_TRUE(near(floatsOf(*out), in.expected, byDefault ? 2e-3f : 2e-4f, 1.0f)) << plain->path();
                }
                EXPECT_EQ(op->path().rfind(prefix, 0), 0u) << op->path();
                runOp(mgr(), { in.q, in.k, in.v, in.pos }, op, { out });
                EXPECT_TRUE(near(floatsOf(*out), in.expected, 2e-3f, 1.0f)) << op->path();
                if (variant.subgroups == 0) {
                    // An f16 out (as the LLM runner's prompt steps take it),
                    // rounded once more: 2e-3 still holds.
                    auto out16 = floatTensor(mgr(), DataTypes::eHalf, std::vector<float>(in.outSize, -7.0f));
                    std::shared_ptr<kp::OpAttention> op16;
                    {
                        DisablePaths paths(disabled);
                        op16 = std::make_shared<kp::OpAttention>(Tensors{ in.q, in.k, in.v, in.pos, out16 }, vp);
                    }
                    EXPECT_EQ(op16->path(), op->path());
                    runOp(mgr(), { in.q, in.k, in.v, in.pos }, op16, { out16 });
                    EXPECT_TRUE(near(floatsOf(*out16), in.expected, 2e-3f, 1.0f)) << op16->path() << ", f16 out";
                }
                ++ran;
            }
            if (!skipped.empty()) {
                break;
            }
        }
    }
    if (ran == 0) {
        GTEST_SKIP() << "'" << caps.deviceName << "' runs the prefill on '" << skipped
                     << "': it needs f16 x f16 -> f32 cooperative matrices at 16x16x16 (KHR: "
                     << caps.cooperativeMatrix.khr << ", NV: " << caps.cooperativeMatrix.nv
                     << "), float16, 16-bit storage and subgroup shuffles";
    }
    EXPECT_TRUE(skipped.empty()) << "some shapes ran on the cooperative matrices, others on " << skipped;
}

TEST_F(TransformerKernelTest, DecodeOnSubgroupsMatchesTheHostAtEveryLength)
{
    // The subgroup decode kernel ("decode-flash-subgroup") against the host
    // and against the split kernel (attention-decode-flash disabled): the
    // context lengths around its passes (64 rows of head 128) and splits
    // (256 positions each by default, 16 given: one workgroup per 64),
    // groups 1, 4 and 8, heads of 64 and 128, both cache types and each
    // load width (8 f16 values, 4, scalar: the offsets and row strides),
    // two rows at different positions read at an offset. The cache past
    // each context holds NaN: a position that should not count spoils it.
    struct Shape
    {
        uint32_t heads, kvHeads, headDim;
        DataTypes type;
        uint32_t kvOffset, rowPadding, decodeChunk;
    };
    const std::vector<Shape> shapes = {
        { 32, 8, 128, DataTypes::eHalf, 8, 0, 0 },   // Llama-8B, 16-byte loads
        { 8, 8, 64, DataTypes::eFloat, 4, 4, 0 },    // group 1, f32 vectors
        { 16, 2, 64, DataTypes::eHalf, 3, 4, 16 },   // group 8, scalar loads, small splits
        { 8, 2, 128, DataTypes::eFloat, 3, 0, 16 },  // group 4, f32 scalar loads
        { 16, 2, 128, DataTypes::eHalf, 4, 4, 0 },   // group 8, 8-byte f16 loads
        // Fewer lanes per row than a subgroup has (here; on 32-wide
        // subgroups every shape above): the row slots of a subgroup merge
        // their softmax states by shuffles.
        { 8, 2, 32, DataTypes::eHalf, 8, 0, 0 },     // 4 lanes per row
        { 4, 4, 16, DataTypes::eFloat, 4, 0, 16 },   // 4 lanes per row, f32, small splits
    };
    // One shape and context length on the kernel the library picks, or
    // with a path disabled (attention-decode-flash: the split kernel).
    auto check = [&](const Shape& shape, uint32_t length, const char* disabled) {
        SCOPED_TRACE(shortName(shape.type) + " heads " + std::to_string(shape.heads) + "/" +
                     std::to_string(shape.kvHeads) + " x " + std::to_string(shape.headDim) + " kvOffset " +
                     std::to_string(shape.kvOffset) + " chunk " + std::to_string(shape.decodeChunk) + " context " +
                     std::to_string(length) + (disabled ? std::string(" without ") + disabled : std::string()));
        kp::AttentionParams p;
        p.rows = 2;
        p.heads = shape.heads;
        p.kvHeads = shape.kvHeads;
        p.headDim = shape.headDim;
        p.kvCapacity = length + 3;
        p.kvOffset = shape.kvOffset;
        p.kvRowStride = shape.kvHeads * shape.headDim + shape.rowPadding;
        p.positionsOffset = 1;
        p.decodeChunk = shape.decodeChunk;
        p.scale = 0.5f;
        // Row 0 attends to the whole context, row 1 to about half.
        std::vector<uint32_t> positions = { 7777, length - 1, (length - 1) / 2 };
        size_t cacheSize = shape.kvOffset + size_t(p.kvCapacity) * p.kvRowStride;
        auto kv = roundTo(shape.type, randomValues(cacheSize, 40 + length, -1.0f, 1.0f));
        auto vv = roundTo(shape.type, randomValues(cacheSize, 50 + length, -1.0f, 1.0f));
        for (size_t i = shape.kvOffset + size_t(length) * p.kvRowStride; i < cacheSize; ++i) {
            kv[i] = vv[i] = std::nanf("");
        }
        auto qv = randomValues(size_t(p.rows) * p.heads * p.headDim, 60 + length, -1.0f, 1.0f);
        auto q = floatTensor(mgr(), DataTypes::eFloat, qv);
        auto k = floatTensor(mgr(), shape.type, kv);
        auto v = floatTensor(mgr(), shape.type, vv);
        auto pos = mgr().tensorT<uint32_t>(positions);
        auto out = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(qv.size(), 0.0f));
        std::shared_ptr<kp::OpAttention> op;
        {
            DisablePaths paths(disabled);
            op = std::make_shared<kp::OpAttention>(Tensors{ q, k, v, pos, out }, p);
        }
        bool split = disabled != nullptr && std::string(disabled) == "attention-decode-flash";
        EXPECT_EQ(op->path(), split ? "decode-split-subgroup" : "decode-flash-subgroup");
        runOp(mgr(), { q, k, v, pos }, op, { out });
        auto expected = hostAttention(qv, kv, vv, { positions[1], positions[2] }, p);
        EXPECT_TRUE(near(floatsOf(*out), expected, 2e-4f, 1.0f));
    };
    const uint32_t lengths[] = { 1, 2, 31, 33, 64, 65, 129, 257, 1000, 4096 };
    for (const auto& shape : shapes) {
        for (uint32_t length : lengths) {
            for (const char* disabled : { static_cast<const char*>(nullptr), "attention-decode-flash" }) {
                if (disabled != nullptr && length != 1000) {
                    continue; // the split kernel: one length of each shape here, the others below
                }
                check(shape, length, disabled);
            }
        }
    }
    // The subgroup kernel with each pass's loads after the pass before
    // (attention-decode-ahead disabled) instead of during it: odd and even
    // counts of passes, one split or several.
    for (size_t i : { 0, 2, 5 }) {
        for (uint32_t length : { 65u, 129u, 257u, 1000u }) {
            check(shapes[i], length, "attention-decode-ahead");
        }
    }
    // The subgroup kernel's other local sizes and rows per pass
    // (KOMPUTE_ENV_ATTENTION_DECODE, the tuning knob; the default is 256:4):
    // the previous default, fewer and more of each, and a value that is
    // ignored (no multiple of the subgroup size).
    for (const char* setting : { "128:8", "64:2", "512:16", "33:4" }) {
        SCOPED_TRACE(std::string("KOMPUTE_ENV_ATTENTION_DECODE=") + setting);
        ScopedEnv env("KOMPUTE_ENV_ATTENTION_DECODE", setting);
        for (size_t i : { 0, 2, 5 }) {
            for (uint32_t length : { 65u, 257u, 1000u }) {
                check(shapes[i], length, nullptr);
            }
        }
    }
}

TEST_F(TransformerKernelTest, ARecordedDecodeStepFollowsThePosition)
{
    // The decode loop of an LLM: write K and V of the new token at its
    // position, attend, repeat, with one recorded sequence and the position
    // changed on the host before each eval. Chunks of 16 positions: up to 19
    // workgroups per KV head, the last of which merges and resets its
    // counter for the next eval. The positions grow, jump ahead and back.
    for (const char* disabled : { static_cast<const char*>(nullptr), "attention-decode-flash", "subgroup" }) {
        SCOPED_TRACE(disabled ? disabled : "default");
        uint32_t heads = 8, kvHeads = 2, D = 32, capacity = 300;
        kp::AttentionParams p;
        p.heads = heads;
        p.kvHeads = kvHeads;
        p.headDim = D;
        p.kvCapacity = capacity;
        p.decodeChunk = 16;
        auto q = mgr().tensorT<float>(heads * D, MemoryTypes::eDeviceAndHost);
        auto kNew = mgr().tensorT<float>(kvHeads * D, MemoryTypes::eDeviceAndHost);
        auto vNew = mgr().tensorT<float>(kvHeads * D, MemoryTypes::eDeviceAndHost);
        auto position = mgr().tensorT<uint32_t>(std::vector<uint32_t>{ 0 }, MemoryTypes::eDeviceAndHost);
        std::vector<float> kHost(capacity * kvHeads * D, 0.0f), vHost(capacity * kvHeads * D, 0.0f);
        auto kCache = floatTensor(mgr(), DataTypes::eHalf, kHost);
        auto vCache = floatTensor(mgr(), DataTypes::eHalf, vHost);
        auto out = mgr().tensorT<float>(heads * D, MemoryTypes::eDeviceAndHost);
        // Zero caches on the device (positions not yet written are attended to).
        mgr().sequence()->record<kp::OpSyncDevice>({ kCache, vCache })->eval();
        kp::SetRowsParams write;
        write.cols = kvHeads * D;
        std::shared_ptr<kp::OpAttention> attention;
        {
            DisablePaths paths(disabled);
            attention = std::make_shared<kp::OpAttention>(Tensors{ q, kCache, vCache, position, out }, p);
        }
        auto seq = mgr().sequence();
        seq->record<kp::OpSetRows>({ kNew, kCache, position }, write)
          ->record<kp::OpSetRows>({ vNew, vCache, position }, write)
          ->record(attention);
        std::vector<float> expected;
        std::vector<uint32_t> steps = { 0, 1, 2, 3, 4, 5, 15, 16, 17, 40, 41, 150, 299, 500, 17, 18, 64, 63 };
        for (size_t i = 0; i < steps.size(); ++i) {
            uint32_t step = steps[i];
            auto qv = randomValues(heads * D, 10 + i);
            auto kv = roundTo(DataTypes::eHalf, randomValues(kvHeads * D, 100 + i));
            auto vv = roundTo(DataTypes::eHalf, randomValues(kvHeads * D, 200 + i));
            q->setData(qv);
            kNew->setData(kv);
            vNew->setData(vv);
            position->setData(std::vector<uint32_t>{ step });
            if (step < capacity) { // OpSetRows skips positions past the cache; attention clamps them
                std::copy(kv.begin(), kv.end(), kHost.begin() + size_t(step) * kvHeads * D);
                std::copy(vv.begin(), vv.end(), vHost.begin() + size_t(step) * kvHeads * D);
            }
            seq->eval();
            p.rows = 1;
            expected = hostAttention(qv, kHost, vHost, { step }, p);
            ASSERT_TRUE(near(out->vector(), expected, 2e-4f)) << "step " << i << ", position " << step;
        }
        // Re-evaluation as recorded, and the same operation twice in one
        // sequence: every dispatch finds its counters at 0 again.
        for (int again = 0; again < 3; ++again) {
            out->setData(std::vector<float>(heads * D, 0.0f)); // the host view is the memory
            seq->eval();
            ASSERT_TRUE(near(out->vector(), expected, 2e-4f)) << "re-evaluation " << again;
        }
        out->setData(std::vector<float>(heads * D, 0.0f));
        mgr().sequence()->record(attention)->record(attention)->eval();
        ASSERT_TRUE(near(out->vector(), expected, 2e-4f)) << "recorded twice";
    }
}

TEST_F(TransformerKernelTest, BadInputIsAClearError)
{
    auto q = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(64, 0.0f));
    auto cache = floatTensor(mgr(), DataTypes::eHalf, std::vector<float>(256, 0.0f));
    auto cache32 = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(256, 0.0f));
    auto pos = mgr().tensorT<uint32_t>(std::vector<uint32_t>{ 0 });
    auto posInt = mgr().tensorT<int32_t>(std::vector<int32_t>{ 0 });
    auto out = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(64, 0.0f));
    kp::AttentionParams p;
    p.heads = 4;
    p.kvHeads = 2;
    p.headDim = 16;
    p.kvCapacity = 8;
    EXPECT_NO_THROW(kp::OpAttention({ q, cache, cache, pos, out }, p));
    EXPECT_TRUE(throwsWith([&] { kp::OpAttention({ q, cache, cache32, pos, out }, p); }, { "OpAttention", "'kCache' (eHalf)", "'vCache' (eFloat)" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpAttention({ q, cache, cache, posInt, out }, p); }, { "'positions' holds eInt" }));
    kp::AttentionParams badGroup = p;
    badGroup.kvHeads = 3;
    EXPECT_TRUE(throwsWith([&] { kp::OpAttention({ q, cache, cache, pos, out }, badGroup); }, { "kvHeads = 3 must divide heads = 4" }));
    kp::AttentionParams big = p;
    big.kvCapacity = 9;
    EXPECT_TRUE(throwsWith([&] { kp::OpAttention({ q, cache, cache, pos, out }, big); }, { "'kCache' has 256 elements", "9 positions" }));
    kp::AttentionParams twoRows = p;
    twoRows.rows = 2;
    EXPECT_TRUE(throwsWith([&] { kp::OpAttention({ q, cache, cache, pos, out }, twoRows); }, { "'q' has 64 elements" }));
    kp::AttentionParams odd = p;
    odd.headDim = 6;
    odd.heads = 2;
    odd.kvHeads = 2;
    EXPECT_TRUE(throwsWith([&] { kp::OpAttention({ q, cache, cache, pos, out }, odd); }, { "headDim = 6 must be a multiple of 4" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpAttention({ q, cache32, cache32, pos, cache32 }, p); }, { "out must not be a cache" }));
    auto out16 = floatTensor(mgr(), DataTypes::eHalf, std::vector<float>(64, 0.0f));
    EXPECT_NO_THROW(kp::OpAttention({ q, cache, cache, pos, out16 }, p));
    EXPECT_TRUE(throwsWith([&] { kp::OpAttention({ q, cache32, cache32, pos, out16 }, p); }, { "an f16 out needs f16 caches" }));
    kp::AttentionParams tile = p;
    tile.rows = 1;
    tile.prefillKvTile = 48;
    EXPECT_TRUE(throwsWith([&] { kp::OpAttention({ q, cache, cache, pos, out }, tile); }, { "prefillKvTile = 48 must be 0, 32 or 64" }));
    kp::AttentionParams subgroups = p;
    subgroups.prefillSubgroups = 3;
    EXPECT_TRUE(throwsWith([&] { kp::OpAttention({ q, cache, cache, pos, out }, subgroups); }, { "prefillSubgroups = 3 must be" }));
    kp::AttentionParams chunk = p;
    chunk.decodeChunk = 48;
    EXPECT_TRUE(throwsWith([&] { kp::OpAttention({ q, cache, cache, pos, out }, chunk); }, { "decodeChunk = 48 must be 0 or a power of two" }));

    kp::RoPEParams rope;
    rope.rows = 1;
    rope.heads = 4;
    rope.headDim = 16;
    EXPECT_NO_THROW(kp::OpRoPE({ q, pos, q }, rope));
    kp::RoPEParams oddRope = rope;
    oddRope.ropeDims = 5;
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPE({ q, pos, q }, oddRope); }, { "OpRoPE", "ropeDims = 5 must be even" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPE({ q, q, q }, rope); }, { "'positions' holds eFloat", "eUnsignedInt" }));
    kp::RoPEParams tall = rope;
    tall.rows = 2;
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPE({ q, pos, q }, tall); }, { "'x' has 64 elements" }));

    kp::SetRowsParams set;
    set.cols = 64;
    EXPECT_TRUE(throwsWith([&] { kp::OpSetRows({ q, q, pos }, set); }, { "OpSetRows", "different tensors" }));
    kp::SetRowsParams wide;
    wide.cols = 300;
    EXPECT_TRUE(throwsWith([&] { kp::OpSetRows({ q, cache, pos }, wide); }, { "'src' has 64 elements" }));
    auto bf = floatTensor(mgr(), DataTypes::eBFloat16, std::vector<float>(64, 0.0f));
    EXPECT_TRUE(throwsWith([&] { kp::OpSetRows({ bf, cache, pos }, set); }, { "src must be f32 or f16" }));

    auto other = makeManager();
    auto foreign = other->tensorT<uint32_t>(std::vector<uint32_t>{ 0 });
    EXPECT_TRUE(throwsWith([&] { kp::OpAttention({ q, cache, cache, foreign, out }, p); }, { "'positions' belongs to another Manager" }));
}

} // namespace
} // namespace kp_test
