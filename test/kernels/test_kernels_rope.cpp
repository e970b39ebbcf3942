// SPDX-License-Identifier: Apache-2.0
// OpRoPECache (RoPE fused with the KV-cache write) against a host loop in
// double precision, over both layouts, every qkv and cache type, partial
// rotation, frequency factors, the bias, strides and offsets, positions
// past the cache; against the unfused operations it replaces (OpRoPE and
// two OpSetRows); a recorded sequence re-run with new positions; and its
// argument checks.
#include "KernelTestSupport.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace kp_test {
namespace {

class RoPECacheTest : public KomputeTest
{};

/** The layer of one test: qkv rows of heads + 2 kvHeads heads, caches of
 * `capacity` rows. */
struct Layout
{
    kp::RoPECacheParams p;
    uint32_t capacity = 0;
    uint32_t qkvStride() const { return p.qkvRowStride; }
    uint32_t cacheStride() const { return p.cacheRowStride; }
    size_t qkvSize() const { return p.qkvOffset + size_t(p.rows) * p.qkvRowStride; }
    size_t cacheSize() const { return p.cacheOffset + size_t(capacity) * p.cacheRowStride; }
};

/** What OpRoPECache should leave: qkv (its query heads rotated) and the two
 * caches (rows at the positions that fit written), from `qkv`, `keys` and
 * `values` before, computed in double. */
struct HostResult
{
    std::vector<float> qkv, keys, values;
};

HostResult
hostRoPECache(const Layout& layout,
              const std::vector<float>& qkv,
              const std::vector<float>& keys,
              const std::vector<float>& values,
              const std::vector<uint32_t>& positions,
              const std::vector<float>& factors,
              const std::vector<float>& bias)
{
    const kp::RoPECacheParams& p = layout.p;
    HostResult out{ qkv, keys, values };
    uint32_t dims = p.ropeDims == 0 ? p.headDim : p.ropeDims;
    uint32_t rowHeads = p.heads + 2 * p.kvHeads;
    for (uint32_t r = 0; r < p.rows; ++r) {
        uint32_t position = positions[r];
        for (uint32_t h = 0; h < rowHeads; ++h) {
            std::vector<double> head(p.headDim);
            for (uint32_t c = 0; c < p.headDim; ++c) {
                head[c] = qkv[p.qkvOffset + size_t(r) * layout.qkvStride() + h * p.headDim + c];
                if (!bias.empty()) {
                    head[c] = float(head[c] + bias[h * p.headDim + c]); // added in f32
                }
            }
            if (h < p.heads + p.kvHeads) {
                std::vector<double> turned = head;
                for (uint32_t i = 0; i < dims / 2; ++i) {
                    double angle = position * double(p.freqScale) * std::pow(double(p.theta), -2.0 * i / dims);
                    if (!factors.empty()) {
                        angle /= factors[i];
                    }
                    uint32_t a = p.mode == kp::RoPEMode::eNeoX ? i : 2 * i;
                    uint32_t b = p.mode == kp::RoPEMode::eNeoX ? i + dims / 2 : 2 * i + 1;
                    turned[a] = head[a] * std::cos(angle) - head[b] * std::sin(angle);
                    turned[b] = head[a] * std::sin(angle) + head[b] * std::cos(angle);
                }
                head = turned;
            }
            for (uint32_t c = 0; c < p.headDim; ++c) {
                if (h < p.heads) {
                    out.qkv[p.qkvOffset + size_t(r) * layout.qkvStride() + h * p.headDim + c] = float(head[c]);
                } else if (position < layout.capacity) {
                    bool isValue = h >= p.heads + p.kvHeads;
                    uint32_t cacheHead = h - p.heads - (isValue ? p.kvHeads : 0);
                    size_t at = p.cacheOffset + size_t(position) * layout.cacheStride() + cacheHead * p.headDim + c;
                    (isValue ? out.values : out.keys)[at] = float(head[c]);
                }
            }
        }
    }
    return out;
}

/** 4 rows of 4 query and 2 KV heads of 8, strided and offset; the last
 * row's position is past the cache's 10 rows. */
Layout
smallLayout(kp::RoPEMode mode)
{
    Layout l;
    l.p.rows = 4;
    l.p.heads = 4;
    l.p.kvHeads = 2;
    l.p.headDim = 8;
    l.p.theta = 500000.0f;
    l.p.freqScale = 0.5f;
    l.p.mode = mode;
    l.p.qkvRowStride = (4 + 2 * 2) * 8 + 4;
    l.p.qkvOffset = 3;
    l.p.cacheRowStride = 2 * 8 + 2;
    l.p.cacheOffset = 5;
    l.p.positionsOffset = 1;
    l.capacity = 10;
    return l;
}

const std::vector<uint32_t> kPositions = { 77, 7, 0, 9, 50 }; // from positionsOffset 1

TEST_F(RoPECacheTest, EveryLayoutTypeAndFeatureAgainstTheHost)
{
    enum Feature
    {
        ePlain,
        ePartialWithFactors,
        eBias,
    };
    for (kp::RoPEMode mode : { kp::RoPEMode::eNormal, kp::RoPEMode::eNeoX }) {
        for (DataTypes qkvType : { DataTypes::eFloat, DataTypes::eHalf }) {
            for (DataTypes cacheType : floatTypes()) {
                for (Feature feature : { ePlain, ePartialWithFactors, eBias }) {
                    SCOPED_TRACE(std::string(mode == kp::RoPEMode::eNeoX ? "neox " : "normal ") + "qkv " +
                                 shortName(qkvType) + " cache " + shortName(cacheType) + " feature " +
                                 std::to_string(int(feature)));
                    Layout l = smallLayout(mode);
                    std::vector<float> factors, bias;
                    Tensors extra;
                    if (feature == ePartialWithFactors) {
                        l.p.ropeDims = 6;
                        l.p.hasFreqFactors = true;
                        l.p.freqFactorsOffset = 1;
                        factors = { 8.0f, 1.0f, 2.5f };
                        // One value before freqFactorsOffset.
                        std::vector<float> stored = { 99.0f };
                        stored.insert(stored.end(), factors.begin(), factors.end());
                        extra.push_back(floatTensor(mgr(), DataTypes::eFloat, stored));
                    }
                    if (feature == eBias) {
                        l.p.hasBias = true;
                        l.p.biasOffset = 2;
                        auto stored = randomValues(2 + (4 + 2 * 2) * 8, 5, -0.5f, 0.5f);
                        bias.assign(stored.begin() + 2, stored.end());
                        extra.push_back(floatTensor(mgr(), DataTypes::eFloat, stored));
                    }
                    auto qkvValues = roundTo(qkvType, randomValues(l.qkvSize(), 11));
                    std::vector<float> before(l.cacheSize(), 42.0f);
                    auto qkv = floatTensor(mgr(), qkvType, qkvValues);
                    auto keys = floatTensor(mgr(), cacheType, before);
                    auto values = floatTensor(mgr(), cacheType, before);
                    auto pos = mgr().tensorT<uint32_t>(kPositions);
                    Tensors tensors{ qkv, pos, keys, values };
                    tensors.insert(tensors.end(), extra.begin(), extra.end());
                    auto op = std::make_shared<kp::OpRoPECache>(tensors, l.p);
                    EXPECT_EQ(op->name(), "OpRoPECache");
                    EXPECT_EQ(op->path(), "element-wise");
                    Tensors inputs = tensors;
                    runOp(mgr(), inputs, op, { qkv, keys, values });
                    std::vector<uint32_t> rowPositions(kPositions.begin() + 1, kPositions.end());
                    HostResult expected = hostRoPECache(l, qkvValues, before, before, rowPositions, factors, bias);
                    float qkvTol = std::max(tolerance(qkvType), 1e-4f);
                    float cacheTol = std::max(tolerance(cacheType), 1e-4f);
                    EXPECT_TRUE(near(floatsOf(*qkv), roundTo(qkvType, expected.qkv), qkvTol, 1.0f));
                    EXPECT_TRUE(near(floatsOf(*keys), roundTo(cacheType, expected.keys), cacheTol, 1.0f));
                    EXPECT_TRUE(near(floatsOf(*values), roundTo(cacheType, expected.values), cacheTol, 1.0f));
                }
            }
        }
    }
}

TEST_F(RoPECacheTest, MatchesTheOperationsItFuses)
{
    // The runner's layout: f32 qkv, f16 caches, OpRoPE over the query and
    // key heads in place and OpSetRows of the keys and values before.
    for (kp::RoPEMode mode : { kp::RoPEMode::eNormal, kp::RoPEMode::eNeoX }) {
        SCOPED_TRACE(mode == kp::RoPEMode::eNeoX ? "neox" : "normal");
        Layout l = smallLayout(mode);
        l.p.rows = 3; // every position inside the cache
        l.p.ropeDims = 6;
        l.p.hasFreqFactors = true;
        std::vector<float> factors = { 8.0f, 1.0f, 2.5f };
        auto qkvValues = randomValues(l.qkvSize(), 3, -2.0f, 2.0f);
        std::vector<float> before(l.cacheSize(), 0.0f);
        auto f = floatTensor(mgr(), DataTypes::eFloat, factors);
        auto pos = mgr().tensorT<uint32_t>(kPositions);

        auto fusedQkv = floatTensor(mgr(), DataTypes::eFloat, qkvValues);
        auto fusedKeys = floatTensor(mgr(), DataTypes::eHalf, before);
        auto fusedValues = floatTensor(mgr(), DataTypes::eHalf, before);
        runOp(mgr(), { fusedQkv, pos, fusedKeys, fusedValues, f },
              std::make_shared<kp::OpRoPECache>(Tensors{ fusedQkv, pos, fusedKeys, fusedValues, f }, l.p),
              { fusedQkv, fusedKeys, fusedValues });

        auto qkv = floatTensor(mgr(), DataTypes::eFloat, qkvValues);
        auto keys = floatTensor(mgr(), DataTypes::eHalf, before);
        auto values = floatTensor(mgr(), DataTypes::eHalf, before);
        kp::RoPEParams rope;
        rope.rows = l.p.rows;
        rope.heads = l.p.heads + l.p.kvHeads;
        rope.headDim = l.p.headDim;
        rope.ropeDims = l.p.ropeDims;
        rope.theta = l.p.theta;
        rope.freqScale = l.p.freqScale;
        rope.mode = mode;
        rope.xRowStride = rope.yRowStride = l.p.qkvRowStride;
        rope.xOffset = rope.yOffset = l.p.qkvOffset;
        rope.positionsOffset = l.p.positionsOffset;
        kp::SetRowsParams set;
        set.rows = l.p.rows;
        set.cols = l.p.kvHeads * l.p.headDim;
        set.dstRowStride = l.p.cacheRowStride;
        set.dstOffset = l.p.cacheOffset;
        set.srcRowStride = l.p.qkvRowStride;
        set.positionsOffset = l.p.positionsOffset;
        kp::SetRowsParams setValues = set;
        set.srcOffset = l.p.qkvOffset + l.p.heads * l.p.headDim;
        setValues.srcOffset = set.srcOffset + l.p.kvHeads * l.p.headDim;
        mgr()
          .sequence()
          ->record<kp::OpSyncDevice>({ qkv, pos, keys, values, f })
          ->record<kp::OpRoPE>({ qkv, pos, qkv, f }, rope)
          ->record<kp::OpSetRows>({ qkv, keys, pos }, set)
          ->record<kp::OpSetRows>({ qkv, values, pos }, setValues)
          ->record<kp::OpSyncLocal>({ qkv, keys, values })
          ->eval();

        // The same arithmetic: the same values, bit for bit.
        EXPECT_EQ(floatsOf(*fusedKeys), floatsOf(*keys));
        EXPECT_EQ(floatsOf(*fusedValues), floatsOf(*values));
        std::vector<float> fused = fusedQkv->vector<float>();
        std::vector<float> unfused = qkv->vector<float>();
        for (uint32_t r = 0; r < l.p.rows; ++r) {
            for (uint32_t c = 0; c < l.p.qkvRowStride; ++c) {
                size_t at = l.p.qkvOffset + size_t(r) * l.p.qkvRowStride + c;
                if (c < l.p.heads * l.p.headDim) {
                    EXPECT_EQ(fused[at], unfused[at]) << "row " << r << " query value " << c;
                } else {
                    EXPECT_EQ(fused[at], qkvValues[at]) << "row " << r << " value " << c << " left as it was";
                }
            }
        }
    }
}

TEST_F(RoPECacheTest, ARecordedSequenceFollowsThePositions)
{
    // A decode loop: one recorded sequence, the position written by the
    // host before each evaluation; every step's keys and values land in
    // their own row.
    Layout l = smallLayout(kp::RoPEMode::eNeoX);
    l.p.rows = 1;
    l.p.positionsOffset = 0;
    l.p.qkvOffset = 0;
    std::vector<float> before(l.cacheSize(), 42.0f);
    auto qkv = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(l.qkvSize(), 0.0f));
    auto keys = floatTensor(mgr(), DataTypes::eHalf, before);
    auto values = floatTensor(mgr(), DataTypes::eHalf, before);
    auto pos = mgr().tensorT<uint32_t>(std::vector<uint32_t>{ 0 });
    mgr().sequence()->eval<kp::OpSyncDevice>({ keys, values });
    auto seq = mgr().sequence();
    seq->record<kp::OpSyncDevice>({ qkv, pos })
      ->record<kp::OpRoPECache>({ qkv, pos, keys, values }, l.p)
      ->record<kp::OpSyncLocal>({ qkv, keys, values });
    std::vector<float> expectedKeys = before;
    std::vector<float> expectedValues = before;
    for (uint32_t step = 0; step < l.capacity + 2; ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        auto stepValues = roundTo(DataTypes::eFloat, randomValues(l.qkvSize(), 100 + step));
        std::copy(stepValues.begin(), stepValues.end(), qkv->data<float>());
        pos->data()[0] = step;
        seq->eval();
        // Steps past the cache write nothing (as OpSetRows).
        HostResult expected =
          hostRoPECache(l, stepValues, expectedKeys, expectedValues, { step }, {}, {});
        expectedKeys = expected.keys;
        expectedValues = expected.values;
        EXPECT_TRUE(near(floatsOf(*qkv), expected.qkv, 1e-4f, 1.0f));
        EXPECT_TRUE(near(floatsOf(*keys), roundTo(DataTypes::eHalf, expectedKeys), tolerance(DataTypes::eHalf), 1.0f));
        EXPECT_TRUE(
          near(floatsOf(*values), roundTo(DataTypes::eHalf, expectedValues), tolerance(DataTypes::eHalf), 1.0f));
    }
}

TEST_F(RoPECacheTest, BadInputIsAClearError)
{
    Layout l = smallLayout(kp::RoPEMode::eNormal);
    auto qkv = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(l.qkvSize(), 0.0f));
    auto keys = floatTensor(mgr(), DataTypes::eHalf, std::vector<float>(l.cacheSize(), 0.0f));
    auto values = floatTensor(mgr(), DataTypes::eHalf, std::vector<float>(l.cacheSize(), 0.0f));
    auto valuesF32 = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(l.cacheSize(), 0.0f));
    auto pos = mgr().tensorT<uint32_t>(kPositions);
    auto factors = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(4, 1.0f));
    auto bias = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(64, 0.0f));
    EXPECT_NO_THROW(kp::OpRoPECache({ qkv, pos, keys, values }, l.p));

    EXPECT_TRUE(throwsWith([&] { kp::OpRoPECache({ qkv, pos, keys }, l.p); },
                           { "OpRoPECache", "{qkv, positions, keyCache, valueCache}", "3 given" }));
    kp::RoPECacheParams withFactors = l.p;
    withFactors.hasFreqFactors = true;
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPECache({ qkv, pos, keys, values }, withFactors); },
                           { "valueCache, freqFactors}", "hasFreqFactors true", "4 given" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPECache({ qkv, pos, keys, values, factors }, l.p); }, { "5 given" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPECache({ qkv, pos, keys, valuesF32 }, l.p); },
                           { "'keyCache' (eHalf) and 'valueCache' (eFloat)", "same data type" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPECache({ qkv, pos, keys, keys }, l.p); }, { "three different tensors" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPECache({ qkv, qkv, keys, values }, l.p); },
                           { "'positions' holds eFloat", "eUnsignedInt" }));
    auto bf = floatTensor(mgr(), DataTypes::eBFloat16, std::vector<float>(l.qkvSize(), 0.0f));
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPECache({ bf, pos, keys, values }, l.p); }, { "qkv must be f32 or f16" }));

    // One parameter changed at a time.
    auto rejects = [&](const std::function<void(kp::RoPECacheParams&)>& change,
                       std::initializer_list<std::string> fragments) {
        kp::RoPECacheParams changed = l.p;
        change(changed);
        return throwsWith([&] { kp::OpRoPECache({ qkv, pos, keys, values }, changed); }, fragments);
    };
    EXPECT_TRUE(rejects([](auto& p) { p.kvHeads = 0; }, { "rows, heads, kvHeads and headDim must be at least 1" }));
    EXPECT_TRUE(rejects([](auto& p) { p.ropeDims = 5; }, { "ropeDims = 5 must be even" }));
    EXPECT_TRUE(rejects([](auto& p) { p.headDim = 7; }, { "headDim = 7 must be even" }));
    EXPECT_TRUE(rejects([](auto& p) { p.theta = 0.0f; }, { "theta must be positive" }));
    EXPECT_TRUE(rejects([](auto& p) { p.mode = static_cast<kp::RoPEMode>(7); }, { "unknown RoPEMode 7" }));
    EXPECT_TRUE(rejects([](auto& p) { p.qkvRowStride = 60; },
                        { "qkvRowStride = 60 is less than (heads + 2 kvHeads) * headDim = 64" }));
    EXPECT_TRUE(rejects([](auto& p) { p.cacheRowStride = 8; },
                        { "cacheRowStride = 8 is less than kvHeads * headDim = 16" }));
    EXPECT_TRUE(rejects([](auto& p) { p.rows = 5; }, { "'qkv' has", "5 rows" }));
    EXPECT_TRUE(rejects([](auto& p) { p.positionsOffset = 2; }, { "'positions' has 5 elements", "4 rows" }));
    auto tiny = floatTensor(mgr(), DataTypes::eHalf, std::vector<float>(20, 0.0f));
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPECache({ qkv, pos, keys, tiny }, l.p); },
                           { "'valueCache' has 20 elements", "one row of 2 heads x 8" }));
    auto fewFactors = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(3, 1.0f));
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPECache({ qkv, pos, keys, values, fewFactors }, withFactors); },
                           { "'freqFactors' has 3 elements", "ropeDims / 2 = 4" }));
    kp::RoPECacheParams withBias = l.p;
    withBias.hasBias = true;
    auto shortBias = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(63, 0.0f));
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPECache({ qkv, pos, keys, values, shortBias }, withBias); },
                           { "'bias' has 63 elements", "(heads + 2 kvHeads) * headDim = 64" }));
    EXPECT_NO_THROW(kp::OpRoPECache({ qkv, pos, keys, values, bias }, withBias));
    kp::RoPECacheParams both = withBias;
    both.hasFreqFactors = true;
    EXPECT_NO_THROW(kp::OpRoPECache({ qkv, pos, keys, values, factors, bias }, both));
    auto keysF32 = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(l.cacheSize(), 0.0f));
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPECache({ qkv, pos, keysF32, valuesF32, keysF32 }, withBias); },
                           { "'bias' and 'keyCache' are one tensor", "overlap" }));
    auto other = makeManager();
    auto foreign = other->tensorT<uint32_t>(kPositions);
    EXPECT_TRUE(throwsWith([&] { kp::OpRoPECache({ qkv, foreign, keys, values }, l.p); },
                           { "'positions' belongs to another Manager" }));
}

} // namespace
} // namespace kp_test
