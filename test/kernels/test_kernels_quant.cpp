// SPDX-License-Identifier: Apache-2.0
// The GGUF block formats beyond Q8_0/Q4_0 (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS) and our grouped Q8_0X8 and Q4_0X8
// (kp::groupBlocks): the host decoder kp::dequantize on
// blocks built by hand (python/tests/test_kernels_quant.py checks it against
// the gguf package's on random blocks), kp::quantize by its round-trip
// error, and the device's decoders against kp::dequantize: the embedding
// lookup bit for bit, the mat-vec and the GEMMs (every path the device runs)
// against a host product on the dequantized weights (MatMulTestSupport.hpp).
#include "MatMulTestSupport.hpp"

namespace kp_test {
namespace {

using kp::WeightFormat;

void
putHalf(std::vector<uint8_t>& block, uint32_t at, float value)
{
    uint16_t bits = kp::float16_t::fromFloat(value);
    std::memcpy(block.data() + at, &bits, 2);
}

std::vector<float>
decode(WeightFormat format, const std::vector<uint8_t>& block)
{
    EXPECT_EQ(block.size(), kp::blockBytes(format));
    return kp::dequantize(format, block.data(), 1);
}

TEST(Quantization, BlockSizesAndNames)
{
    struct Expected
    {
        WeightFormat format;
        uint32_t weights, bytes;
        const char* name;
    };
    for (const auto& e : std::vector<Expected>{ { WeightFormat::eQ8_0, 32, 34, "q8_0" },
                                                { WeightFormat::eQ4_0, 32, 18, "q4_0" },
                                                { WeightFormat::eQ4_1, 32, 20, "q4_1" },
                                                { WeightFormat::eQ5_0, 32, 22, "q5_0" },
                                                { WeightFormat::eQ5_1, 32, 24, "q5_1" },
                                                { WeightFormat::eQ2_K, 256, 84, "q2_k" },
                                                { WeightFormat::eQ3_K, 256, 110, "q3_k" },
                                                { WeightFormat::eQ4_K, 256, 144, "q4_k" },
                                                { WeightFormat::eQ5_K, 256, 176, "q5_k" },
                                                { WeightFormat::eQ6_K, 256, 210, "q6_k" },
                                                { WeightFormat::eIQ4_NL, 32, 18, "iq4_nl" },
                                                { WeightFormat::eIQ4_XS, 256, 136, "iq4_xs" },
                                                { WeightFormat::eQ8_0X8, 256, 272, "q8_0x8" },
                                                { WeightFormat::eQ4_0X8, 256, 144, "q4_0x8" } }) {
        EXPECT_EQ(kp::blockWeights(e.format), e.weights) << e.name;
        EXPECT_EQ(kp::blockBytes(e.format), e.bytes) << e.name;
        EXPECT_STREQ(kp::toString(e.format), e.name);
    }
    EXPECT_EQ(kp::blockWeights(WeightFormat::eNone), 0u);
    EXPECT_TRUE(throwsWith([] { kp::dequantize(WeightFormat::eNone, nullptr, 0); }, { "not eNone" }));
    std::vector<float> values(32, 1.0f);
    EXPECT_TRUE(throwsWith([&] { kp::quantize(WeightFormat::eQ4_K, values.data(), values.size()); },
                           { "32 values are not whole blocks of 256 weights (q4_k)" }));
}

// kp::groupBlocks: 8 Q8_0 / Q4_0 blocks regrouped, the scales first and
// each block's quants after them in order, the same weights; quantizing
// to the grouped format is the same as grouping the quantized blocks.
TEST(Quantization, GroupsQ8_0AndQ4_0Blocks)
{
    std::vector<float> x(512);
    for (size_t i = 0; i < x.size(); ++i) {
        x[i] = std::sin(0.37f * float(i)) * (1.0f + float(i % 97) / 50.0f);
    }
    for (WeightFormat base : { WeightFormat::eQ8_0, WeightFormat::eQ4_0 }) {
        WeightFormat grouped = kp::groupedFormat(base);
        SCOPED_TRACE(kp::toString(grouped));
        uint32_t size = kp::blockBytes(base), quants = size - 2;
        auto blocks = kp::quantize(base, x.data(), x.size());
        auto regrouped = kp::groupBlocks(base, blocks.data(), blocks.size());
        ASSERT_EQ(regrouped.size(), blocks.size());
        for (size_t g = 0; g < 2; ++g) {
            for (uint32_t b = 0; b < 8; ++b) {
                const uint8_t* from = blocks.data() + (g * 8 + b) * size;
                const uint8_t* to = regrouped.data() + g * 8 * size;
                EXPECT_EQ(std::memcmp(to + 2 * b, from, 2), 0) << "the scale of block " << b;
                EXPECT_EQ(std::memcmp(to + 16 + b * quants, from + 2, quants), 0) << "the quants of block " << b;
            }
        }
        EXPECT_EQ(kp::quantize(grouped, x.data(), x.size()), regrouped);
        EXPECT_EQ(kp::dequantize(grouped, regrouped.data(), 2), kp::dequantize(base, blocks.data(), 16));
    }
    EXPECT_EQ(kp::groupedFormat(WeightFormat::eQ4_K), WeightFormat::eNone);

    std::vector<uint8_t> seven(7 * 18);
    EXPECT_TRUE(throwsWith([&] { kp::groupBlocks(WeightFormat::eQ4_0, seven.data(), seven.size()); },
                           { "126 bytes are not whole groups of 8 q4_0 blocks (144 bytes each)" }));
    EXPECT_TRUE(throwsWith([&] { kp::groupBlocks(WeightFormat::eQ4_K, seven.data(), 144); },
                           { "groups Q8_0 or Q4_0 blocks, not q4_k" }));
}

// Blocks whose bytes are set by hand, decoded as the GGUF layouts say.
TEST(Quantization, DecodesHandBuiltBlocks)
{
    { // Q4_1: d * q + m; weight 16 is the high nibble of qs[0]
        std::vector<uint8_t> b(20, 0);
        putHalf(b, 0, 0.5f);
        putHalf(b, 2, -1.0f);
        b[4] = 0x21;
        auto y = decode(WeightFormat::eQ4_1, b);
        EXPECT_EQ(y[0], -0.5f);
        EXPECT_EQ(y[16], 0.0f);
        EXPECT_EQ(y[1], -1.0f);
    }
    { // Q5_0: d * (q - 16), the 5th bit of weight j is bit j of qh
        std::vector<uint8_t> b(22, 0);
        putHalf(b, 0, 2.0f);
        b[2 + 2] = 0x01; // qh bit 16: weight 16
        b[6] = 0x3F;     // weight 0: 15, weight 16: 3 | 16
        auto y = decode(WeightFormat::eQ5_0, b);
        EXPECT_EQ(y[0], 2.0f * (15 - 16));
        EXPECT_EQ(y[16], 2.0f * (19 - 16));
        EXPECT_EQ(y[1], -32.0f);
    }
    { // Q5_1: d * q + m
        std::vector<uint8_t> b(24, 0);
        putHalf(b, 0, 1.0f);
        putHalf(b, 2, 0.25f);
        b[4] = 0x02; // qh bit 1: weight 1
        b[8 + 1] = 0x05;
        auto y = decode(WeightFormat::eQ5_1, b);
        EXPECT_EQ(y[1], 21.25f);
        EXPECT_EQ(y[0], 0.25f);
    }
    { // IQ4_NL: d * kvalues[q]
        std::vector<uint8_t> b(18, 0);
        putHalf(b, 0, 0.5f);
        b[2] = 0xF8;
        auto y = decode(WeightFormat::eIQ4_NL, b);
        EXPECT_EQ(y[0], 0.5f);   // kvalues[8] = 1
        EXPECT_EQ(y[16], 56.5f); // kvalues[15] = 113
        EXPECT_EQ(y[1], -63.5f); // kvalues[0] = -127
    }
    { // Q2_K: scales[i] = sc | m << 4 for weights 16i..; q 2 bits at 2j of qs[32n + l]
        std::vector<uint8_t> b(84, 0);
        b[0] = 0x23;        // sub-block 0: sc 3, m 2
        b[5] = 0x11;        // sub-block 5 (weights 80..95: n 0, j 2, l 16..31): sc 1, m 1
        b[16 + 0] = 0x03;   // weight 0: q 3
        b[16 + 17] = 0x20;  // weight 81 (j 2, l 17): q 2
        putHalf(b, 80, 0.5f);  // d
        putHalf(b, 82, 0.25f); // dmin
        auto y = decode(WeightFormat::eQ2_K, b);
        EXPECT_EQ(y[0], 0.5f * 3 * 3 - 0.25f * 2);
        EXPECT_EQ(y[1], -0.5f);
        EXPECT_EQ(y[81], 0.5f * 1 * 2 - 0.25f * 1);
    }
    { // Q3_K: 6-bit scales - 32, q = 2 low bits - 4 unless the hmask bit
        std::vector<uint8_t> b(110, 0);
        // scale 0: low nibble of scales[0], high bits 0..1 of scales[8];
        // scale 9: high nibble of scales[1], bits 4..5 of scales[9].
        b[96 + 0] = 0x04;            // scale 0 low = 4
        b[96 + 8] = 0x02;            // scale 0 high = 2: 36 - 32 = 4
        b[96 + 1] = 0x50;            // scale 9 low = 5
        b[96 + 9] = 0x30;            // scale 9 high = 3: 53 - 32 = 21
        putHalf(b, 108, 0.5f);
        b[32 + 0] = 0x01;            // weight 0: low bits 1, hmask clear: 1 - 4
        b[0] = 0x01;                 // weight 0's ... set it: 1 - 0
        b[32 + 32 + 16] = 0x08;      // weight 128 + 32 + 16 = 176 (n 1, j 1, l 16): low bits 2
        auto y = decode(WeightFormat::eQ3_K, b);
        EXPECT_EQ(y[0], 0.5f * 4 * 1);
        EXPECT_EQ(y[1], 0.5f * 4 * -4);
        // weight 176 is in sub-block 11 (scale 0x?): scale 11 = low nibble of
        // scales[3] >> 4 (0), high bits 4..5 of scales[11] (0): -32
        EXPECT_EQ(y[176], 0.5f * -32 * (2 - 4));
        EXPECT_EQ(y[144], 0.5f * 21 * -4); // sub-block 9, q 0, mask clear
    }
    { // Q4_K: scales and mins of 6 bits (get_scale_min_k4)
        std::vector<uint8_t> b(144, 0);
        putHalf(b, 0, 0.5f);
        putHalf(b, 2, 0.125f);
        b[4 + 0] = 3;                 // sub-block 0 scale
        b[4 + 4] = 2;                 // sub-block 0 min
        b[4 + 8 + 1] = 0x75;          // sub-block 5: scale low 5, min low 7
        b[4 + 1] = 0x40;              // sub-block 5 scale high bits: 1 -> 21
        b[4 + 5] = 0x80;              // sub-block 5 min high bits: 2 -> 39
        b[16 + 0] = 0xA7;             // weight 0: 7, weight 32: 10
        b[16 + 64 + 3] = 0xC0;        // weight 5 * 32 + 3 = 163 (sub-block 5: high nibble of qs[64 + 3]): 12
        auto y = decode(WeightFormat::eQ4_K, b);
        EXPECT_EQ(y[0], 0.5f * 3 * 7 - 0.125f * 2);
        EXPECT_EQ(y[32], 0.0f); // sub-block 1: scale 0, min 0
        EXPECT_EQ(y[163], 0.5f * 21 * 12 - 0.125f * 39);
    }
    { // Q5_K: Q4_K plus the 5th bit of sub-block s in bit s of qh[l]
        std::vector<uint8_t> b(176, 0);
        putHalf(b, 0, 1.0f);
        putHalf(b, 2, 1.0f);
        b[4 + 1] = 1; // sub-block 1 scale 1
        b[4 + 5] = 3; // sub-block 1 min 3
        b[16 + 4] = 0x02; // qh[4] bit 1: weight 32 + 4
        b[48 + 4] = 0x90; // weight 36: high nibble 9
        auto y = decode(WeightFormat::eQ5_K, b);
        EXPECT_EQ(y[36], 25.0f - 3.0f);
    }
    { // Q6_K: d * scales[e / 16] * (q - 32), q = 4 bits of ql, 2 of qh
        std::vector<uint8_t> b(210, 0);
        putHalf(b, 208, 0.25f);
        b[192 + 0] = 4;
        b[192 + 14] = static_cast<uint8_t>(-2); // weights 224..239
        b[0] = 0x05;           // weight 0 low 5
        b[128] = 0x02;         // weight 0 high 2: 37
        b[64 + 32 + 1] = 0x30; // weight 225 (n 1, g 3, l 1): high nibble of ql[64 + 32 + 1] = 3
        b[128 + 32 + 1] = 0xC0; // qh bits 6..7 = 3: 51
        auto y = decode(WeightFormat::eQ6_K, b);
        EXPECT_EQ(y[0], 0.25f * 4 * 5);
        EXPECT_EQ(y[225], 0.25f * -2 * 19);
        EXPECT_EQ(y[1], 0.25f * 4 * -32);
    }
    { // IQ4_XS: 6-bit scales - 32 (4 low bits in scales_l, 2 in scales_h)
        std::vector<uint8_t> b(136, 0);
        putHalf(b, 0, 0.5f);
        b[2] = 0x08;           // scales_h: sub-block 1 high 2
        b[4] = 0x30;           // scales_l: sub-block 1 low 3 -> 35 - 32 = 3
        b[8 + 16 + 2] = 0xF0;  // sub-block 1, weight 32 + 18: kvalues[15]
        auto y = decode(WeightFormat::eIQ4_XS, b);
        EXPECT_EQ(y[32 + 18], 0.5f * 3 * 113);
        EXPECT_EQ(y[32 + 2], 0.5f * 3 * -127);
        EXPECT_EQ(y[0], 0.5f * -32 * -127);
    }
}

// kp::quantize's error on Gaussian weights, as a fraction of their RMS (the
// formats' usual figures: ggml's optimized quantizers do somewhat better on
// the K-quants).
TEST(Quantization, RoundTripErrorOfEveryFormat)
{
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> x(256 * 64);
    for (auto& v : x) {
        v = normal(rng);
    }
    x[5] = 0.3f; // an outlier
    struct Bound
    {
        WeightFormat format;
        double relativeRms;
    };
    for (const auto& b : std::vector<Bound>{ { WeightFormat::eQ8_0, 0.006 },
                                             { WeightFormat::eQ4_0, 0.12 },
                                             { WeightFormat::eQ4_1, 0.11 },
                                             { WeightFormat::eQ5_0, 0.06 },
                                             { WeightFormat::eQ5_1, 0.055 },
                                             { WeightFormat::eQ2_K, 0.45 },
                                             { WeightFormat::eQ3_K, 0.25 },
                                             { WeightFormat::eQ4_K, 0.12 },
                                             { WeightFormat::eQ5_K, 0.06 },
                                             { WeightFormat::eQ6_K, 0.03 },
                                             { WeightFormat::eIQ4_NL, 0.11 },
                                             { WeightFormat::eIQ4_XS, 0.11 },
                                             { WeightFormat::eQ8_0X8, 0.006 },
                                             { WeightFormat::eQ4_0X8, 0.12 } }) {
        auto blocks = kp::quantize(b.format, x.data(), x.size());
        ASSERT_EQ(blocks.size(), x.size() / kp::blockWeights(b.format) * kp::blockBytes(b.format));
        auto y = kp::dequantize(b.format, blocks.data(), x.size() / kp::blockWeights(b.format));
        double error = 0, power = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            error += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
            power += double(x[i]) * x[i];
        }
        double relative = std::sqrt(error / power);
        EXPECT_LT(relative, b.relativeRms) << kp::toString(b.format);
        EXPECT_NEAR(y[5], 0.3f, 0.3 * b.relativeRms * 2) << kp::toString(b.format) << ": the outlier";
        // Zeros stay zeros.
        std::vector<float> zeros(256, 0.0f);
        auto zeroBlocks = kp::quantize(b.format, zeros.data(), zeros.size());
        for (float v : kp::dequantize(b.format, zeroBlocks.data(), 256 / kp::blockWeights(b.format))) {
            ASSERT_EQ(v, 0.0f) << kp::toString(b.format);
        }
    }
}

class QuantKernels : public KomputeTest
{
};

// What the kernel library prefers: Q4_0 rows of whole groups grouped, where
// the mat-vec takes integer dot products (accelerated, or supported and
// "matvec-float" off, as OpMatMul decides); the rest as they are.
TEST_F(QuantKernels, PreferredWeightFormat)
{
    const auto& dot = mgr().capabilities().integerDotProduct;
    bool accelerated = dot.accelerated4x8BitPacked && dot.accelerated4x8BitPackedMixed;
    WeightFormat q4 = accelerated ? WeightFormat::eQ4_0X8 : WeightFormat::eQ4_0;
    EXPECT_EQ(kp::preferredWeightFormat(mgr(), WeightFormat::eQ4_0, 4096), q4);
    {
        DisablePaths intDot("matvec-float");
        EXPECT_EQ(kp::preferredWeightFormat(mgr(), WeightFormat::eQ4_0, 4096),
                  dot.supported ? WeightFormat::eQ4_0X8 : WeightFormat::eQ4_0);
        EXPECT_EQ(kp::preferredWeightFormat(mgr(), WeightFormat::eQ8_0, 768), WeightFormat::eQ8_0);
        EXPECT_EQ(kp::preferredWeightFormat(mgr(), WeightFormat::eQ4_0, 96), WeightFormat::eQ4_0);
        EXPECT_EQ(kp::preferredWeightFormat(mgr(), WeightFormat::eQ4_K, 4096), WeightFormat::eQ4_K);
        for (const char* off : { "matvec-float,grouped-blocks", "matvec-float,matvec-qx", "matvec-float,int-dot" }) {
            DisablePaths more(off);
            EXPECT_EQ(kp::preferredWeightFormat(mgr(), WeightFormat::eQ4_0, 4096), WeightFormat::eQ4_0) << off;
        }
        // KOMPUTE_ENV_GROUPED_BLOCKS: the formats grouped instead.
        WeightFormat q8 = dot.supported ? WeightFormat::eQ8_0X8 : WeightFormat::eQ8_0;
        {
            ScopedEnv grouped("KOMPUTE_ENV_GROUPED_BLOCKS", "q8_0");
            EXPECT_EQ(kp::preferredWeightFormat(mgr(), WeightFormat::eQ8_0, 768), q8);
            EXPECT_EQ(kp::preferredWeightFormat(mgr(), WeightFormat::eQ4_0, 4096), WeightFormat::eQ4_0);
            EXPECT_EQ(kp::preferredWeightFormat(mgr(), WeightFormat::eQ8_0, 96), WeightFormat::eQ8_0);
        }
        {
            ScopedEnv grouped("KOMPUTE_ENV_GROUPED_BLOCKS", "q4_0,q8_0");
            EXPECT_EQ(kp::preferredWeightFormat(mgr(), WeightFormat::eQ8_0, 768), q8);
            EXPECT_EQ(kp::preferredWeightFormat(mgr(), WeightFormat::eQ4_0, 4096),
                      dot.supported ? WeightFormat::eQ4_0X8 : WeightFormat::eQ4_0);
        }
        {
            ScopedEnv grouped("KOMPUTE_ENV_GROUPED_BLOCKS", "");
            EXPECT_EQ(kp::preferredWeightFormat(mgr(), WeightFormat::eQ4_0, 4096), WeightFormat::eQ4_0);
        }
        {
            ScopedEnv grouped("KOMPUTE_ENV_GROUPED_BLOCKS", "q8_0,q5_k");
            LogCapture log;
            EXPECT_EQ(kp::preferredWeightFormat(mgr(), WeightFormat::eQ8_0, 768), WeightFormat::eQ8_0);
            EXPECT_TRUE(log.contains(kp::logger::Level::Warn, "KOMPUTE_ENV_GROUPED_BLOCKS=q8_0,q5_k is ignored"));
        }
    }
}

// The lookup's decoder against kp::dequantize on random bytes: bit for bit.
TEST_F(QuantKernels, GetRowsDecodesEveryFormatBitForBit)
{
    for (Elem type : kBlockFormats) {
        SCOPED_TRACE(elemName(type));
        WeightFormat format = weightFormat(type);
        const uint32_t cols = 512, tableRows = 6;
        size_t blocks = size_t(cols) * tableRows / kp::blockWeights(format);
        auto bytes = randomBlocks(format, blocks, 11 + static_cast<uint32_t>(type));
        auto stored = kp::dequantize(format, bytes.data(), blocks);
        auto table = mgr().tensor(bytes.data(), static_cast<uint32_t>(bytes.size()), 1, DataTypes::eUnsignedChar);
        std::vector<uint32_t> idValues = { 5, 0, 3, 3, 1 };
        auto ids = mgr().tensorT<uint32_t>(idValues);
        auto out = mgr().tensor(std::vector<float>(idValues.size() * cols, -1.0f));
        kp::GetRowsParams p{ static_cast<uint32_t>(idValues.size()), cols, format };
        mgr().sequence()
          ->record<kp::OpSyncDevice>({ table, ids, out })
          ->record<kp::OpGetRows>({ table, ids, out }, p)
          ->record<kp::OpSyncLocal>({ out })
          ->eval();
        auto values = out->vector();
        size_t failures = 0;
        for (size_t i = 0; i < idValues.size(); ++i) {
            for (uint32_t col = 0; col < cols; ++col) {
                float expected = stored[idValues[i] * cols + col];
                float got = values[i * cols + col];
                if (std::memcmp(&expected, &got, 4) != 0 && failures++ < 8) {
                    ADD_FAILURE() << "row " << i << " col " << col << ": " << got << ", expected " << expected;
                }
            }
        }
        EXPECT_EQ(failures, 0u);
    }
}

kp::MatMulParams
quantShape(uint32_t m, uint32_t n, uint32_t k)
{
    kp::MatMulParams p;
    p.m = m;
    p.n = n;
    p.k = k;
    p.transB = true;
    return p;
}

// Decode mat-vecs (m = 1) and prefill GEMMs of every format, on the paths
// the device takes and on the tiled fallback, with quantized values and
// with random bytes.
TEST_F(QuantKernels, MatVecAndGemmOfEveryFormat)
{
    for (const char* disabled : { (const char*)nullptr, "matvec,coopmat" }) {
        DisablePaths disable(disabled);
        for (Elem b : kBlockFormats) {
            bool super = blockOf(b) == 256;
            std::vector<std::array<uint32_t, 3>> shapes = { { 1, 37, 512 }, { 1, 3, 256 }, { 7, 33, 256 }, { 33, 70, 512 } };
            if (!super) {
                shapes.push_back({ 1, 45, 96 });
                shapes.push_back({ 3, 45, 64 });
            }
            for (const auto& s : shapes) {
                for (bool raw : { false, true }) {
                    GemmCase gc{ quantShape(s[0], s[1], s[2]), raw ? Elem::F16 : Elem::F32, b, Elem::F32 };
                    gc.seed = s[1] + s[2] + static_cast<uint32_t>(b);
                    gc.rawBlocks = raw;
                    std::string path = runGemmCase(mgr(), gc);
                    if (disabled) {
                        EXPECT_EQ(path, "tiled");
                    } else if (s[0] == 1) {
                        EXPECT_EQ(path.rfind("matvec", 0), 0u) << path;
                    }
                }
            }
        }
    }
}

TEST_F(QuantKernels, BatchesStridesOffsetsUnalignedXAndF16Output)
{
    for (const char* disabled : { (const char*)nullptr, "matvec,coopmat" }) {
        DisablePaths disable(disabled);
        for (Elem b : { Elem::Q4_K, Elem::Q6_K, Elem::Q5_1 }) {
            for (uint32_t m : { 1u, 9u }) {
                uint32_t block = blockOf(b);
                GemmCase gc{ quantShape(m, 21, 2 * block), Elem::F16, b, Elem::F16 };
                gc.p.batch = 2;
                gc.p.ldb = 3 * block;
                gc.p.offsetB = block;
                gc.p.ldc = 23;
                gc.p.beta = 0.5f;
                runGemmCase(mgr(), gc);
                // x that the mat-vec cannot load 4 at a time: an odd offset,
                // and A transposed (x strided by lda).
                GemmCase odd{ quantShape(m, 13, block), Elem::F32, b, Elem::F32 };
                odd.p.offsetA = 3;
                runGemmCase(mgr(), odd);
                odd.p.transA = true;
                runGemmCase(mgr(), odd);
            }
        }
    }
}

TEST_F(QuantKernels, CooperativeMatrixPathsWhereTheDeviceHasThem)
{
    const auto& cm = mgr().capabilities().cooperativeMatrix;
    if (!cm.khr && !cm.nv) {
        GTEST_SKIP() << "no cooperative matrices on '" << mgr().capabilities().deviceName << "'";
    }
    for (const char* disabled : { (const char*)nullptr, "coopmat-khr" }) {
        DisablePaths disable(disabled);
        for (Elem b : kBlockFormats) {
            for (const auto& s : std::vector<std::array<uint32_t, 3>>{ { 33, 70, 256 }, { 130, 260, 512 } }) {
                GemmCase gc{ quantShape(s[0], s[1], s[2]), Elem::F16, b, Elem::F32 };
                gc.rawBlocks = s[0] == 33;
                EXPECT_EQ(runGemmCase(mgr(), gc).rfind("coopmat", 0), 0u);
            }
        }
    }
}

TEST_F(QuantKernels, RejectsRowsOfPartialSuperBlocks)
{
    auto x = mgr().tensor(std::vector<float>(512, 1.0f));
    auto c = mgr().tensor(std::vector<float>(4, 0.0f));
    auto blocks = [&](uint32_t bytes) {
        return mgr().tensor(std::vector<uint8_t>(bytes, 0).data(), bytes, 1, DataTypes::eUnsignedChar);
    };
    auto p = quantShape(1, 4, 128);
    p.formatB = WeightFormat::eQ4_K;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, blocks(144 * 2), c, p); },
                           { "k = 128 is not a multiple of 256", "q4_k" }));
    auto offset = quantShape(1, 2, 256);
    offset.formatB = WeightFormat::eQ6_K;
    offset.offsetB = 32;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, blocks(210 * 3), c, offset); }, { "multiples of 256" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, blocks(211), c, offset); }, { "not whole q6_k blocks of 210 bytes" }));
    auto ids = mgr().tensorT<uint32_t>(std::vector<uint32_t>{ 0u, 0u });
    auto out = mgr().tensor(std::vector<float>(256, 0.0f));
    EXPECT_TRUE(throwsWith([&] { kp::OpGetRows(blocks(176), ids, out, { 1, 128, WeightFormat::eQ5_K }); },
                           { "multiples of 256" }));
}

} // namespace
} // namespace kp_test
