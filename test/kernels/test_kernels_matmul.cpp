// SPDX-License-Identifier: Apache-2.0
// kp::OpMatMul and kp::OpGetRows against host references, on every path the
// device runs (on lavapipe: the tiled GEMM, forced with
// KOMPUTE_ENV_DISABLE=matvec, and the mat-vec; on the H200 also the
// cooperative-matrix and integer dot-product paths). Tolerances: see
// MatMulTestSupport.hpp.
#include "MatMulTestSupport.hpp"

namespace kp_test {
namespace {

class MatMul : public KomputeTest
{
};

kp::MatMulParams
shape(uint32_t m, uint32_t n, uint32_t k, bool transA = false, bool transB = false)
{
    kp::MatMulParams p;
    p.m = m;
    p.n = n;
    p.k = k;
    p.transA = transA;
    p.transB = transB;
    return p;
}

const std::vector<Elem> kInputTypes = { Elem::F32, Elem::F16, Elem::BF16 };

// Shapes with every tail: one row, one column, sizes off every tile
// multiple, k off the 32-weight block (float types only).
const std::vector<std::array<uint32_t, 3>> kShapes = {
    { 1, 1, 1 }, { 1, 37, 45 }, { 37, 1, 45 }, { 33, 65, 17 }, { 64, 64, 64 }, { 70, 130, 100 }, { 5, 3, 257 },
};

TEST_F(MatMul, EveryFloatTypeCombinationAndShapeOnEveryPath)
{
    for (bool forceTiled : { false, true }) {
        DisablePaths disable(forceTiled ? "matvec,coopmat" : nullptr);
        for (Elem a : kInputTypes) {
            for (Elem b : kInputTypes) {
                for (Elem c : { Elem::F32, Elem::F16 }) {
                    for (const auto& s : kShapes) {
                        GemmCase gc{ shape(s[0], s[1], s[2]), a, b, c };
                        gc.seed = s[0] * 7 + s[2];
                        std::string path = runGemmCase(mgr(), gc);
                        if (forceTiled) {
                            EXPECT_EQ(path, "tiled");
                        }
                    }
                }
            }
        }
    }
}

TEST_F(MatMul, QuantizedWeightsEveryTypeAndShape)
{
    // The mat-vec reads rows of whole 16-byte chunks (k a multiple of 256)
    // through shared memory, in steps of 32 (Q8_0) or 64 (Q4_0) blocks;
    // "staged" in KOMPUTE_ENV_DISABLE turns that off.
    for (const char* disabled : { (const char*)nullptr, "staged", "matvec,coopmat" }) {
        DisablePaths disable(disabled);
        for (Elem b : { Elem::Q8_0, Elem::Q4_0 }) {
            for (Elem a : kInputTypes) {
                for (Elem c : { Elem::F32, Elem::F16 }) {
                    for (const auto& s : std::vector<std::array<uint32_t, 3>>{ { 1, 1, 32 },
                                                                              { 1, 45, 96 },
                                                                              { 1, 37, 512 },
                                                                              { 1, 9, 2304 },
                                                                              { 3, 45, 64 },
                                                                              { 33, 70, 160 },
                                                                              { 65, 129, 32 } }) {
                        GemmCase gc{ shape(s[0], s[1], s[2], false, true), a, b, c };
                        gc.seed = s[1] + s[2];
                        std::string path = runGemmCase(mgr(), gc);
                        if (disabled && std::string(disabled) == "matvec,coopmat") {
                            EXPECT_EQ(path, "tiled");
                        }
                    }
                }
            }
        }
    }
}

TEST_F(MatMul, TransposesOnEveryPath)
{
    for (bool forceTiled : { false, true }) {
        DisablePaths disable(forceTiled ? "matvec,coopmat" : nullptr);
        for (bool transA : { false, true }) {
            for (bool transB : { false, true }) {
                for (Elem type : { Elem::F32, Elem::F16 }) {
                    for (const auto& s : std::vector<std::array<uint32_t, 3>>{
                           { 1, 50, 33 }, { 41, 1, 70 }, { 35, 67, 29 }, { 64, 32, 48 } }) {
                        runGemmCase(mgr(), GemmCase{ shape(s[0], s[1], s[2], transA, transB), type, type, Elem::F32 });
                    }
                }
            }
        }
    }
}

TEST_F(MatMul, AlphaBetaAddIntoC)
{
    for (bool forceTiled : { false, true }) {
        DisablePaths disable(forceTiled ? "matvec,coopmat" : nullptr);
        for (auto ab : std::vector<std::pair<float, float>>{ { 0.5f, 1.0f }, { -2.0f, 0.25f }, { 1.0f, 1.0f } }) {
            for (const auto& s : std::vector<std::array<uint32_t, 3>>{ { 1, 40, 64 }, { 40, 1, 64 }, { 30, 50, 64 } }) {
                for (Elem c : { Elem::F32, Elem::F16 }) {
                    GemmCase gc{ shape(s[0], s[1], s[2], false, true), Elem::F32, Elem::F16, c };
                    gc.p.alpha = ab.first;
                    gc.p.beta = ab.second;
                    runGemmCase(mgr(), gc);
                    gc.b = Elem::Q8_0;
                    runGemmCase(mgr(), gc);
                }
            }
        }
    }
}

TEST_F(MatMul, BatchesLeadingDimensionsAndOffsets)
{
    for (bool forceTiled : { false, true }) {
        DisablePaths disable(forceTiled ? "matvec,coopmat" : nullptr);
        for (const auto& s : std::vector<std::array<uint32_t, 3>>{ { 1, 33, 64 }, { 33, 1, 64 }, { 21, 35, 64 } }) {
            for (bool transB : { false, true }) {
                for (Elem b : { Elem::F32, Elem::F16, Elem::Q4_0 }) {
                    if (isQuant(b) && !transB) {
                        continue;
                    }
                    GemmCase gc{ shape(s[0], s[1], s[2], false, transB), Elem::F16, b, Elem::F32 };
                    gc.p.batch = 3;
                    gc.p.lda = s[2] + 3;
                    gc.p.ldb = isQuant(b) ? s[2] + 32 : (transB ? s[2] + 1 : s[1] + 2);
                    gc.p.ldc = s[1] + 5;
                    gc.p.offsetA = 7;
                    gc.p.offsetB = isQuant(b) ? 64 : 3;
                    gc.p.offsetC = 11;
                    gc.p.strideC = uint64_t(s[0]) * gc.p.ldc + 9; // gaps between batches
                    gc.p.beta = 1;
                    runGemmCase(mgr(), gc);
                }
            }
        }
    }
}

TEST_F(MatMul, ChoosesTheMatVecForOneRowOrColumn)
{
    auto a = mgr().tensor(std::vector<float>(64, 1.0f));
    auto b = mgr().tensor(std::vector<float>(64 * 8, 1.0f));
    auto c = mgr().tensor(std::vector<float>(64, 0.0f));
    EXPECT_EQ(kp::OpMatMul(a, b, c, shape(1, 8, 64, false, true)).path(), "matvec");
    EXPECT_EQ(kp::OpMatMul(b, a, c, shape(8, 1, 64)).path(), "matvec");
    EXPECT_EQ(kp::OpMatMul(b, b, c, shape(8, 8, 8)).path(), "tiled");
    DisablePaths disable("matvec");
    EXPECT_EQ(kp::OpMatMul(a, b, c, shape(1, 8, 64, false, true)).path(), "tiled");
}

TEST_F(MatMul, ReRecordedSequencesRunAgainWithNewData)
{
    std::vector<float> aStored, bStored, cStored;
    auto a = makeOperand(mgr(), Elem::F32, randomValues(64, 3), aStored);
    auto b = makeOperand(mgr(), Elem::Q8_0, randomValues(64 * 16, 4), bStored);
    auto c = makeOperand(mgr(), Elem::F32, std::vector<float>(16, 0.0f), cStored);
    auto seq = mgr().sequence();
    auto p = shape(1, 16, 64, false, true);
    p.formatB = kp::WeightFormat::eQ8_0;
    auto op = std::make_shared<kp::OpMatMul>(a, b, c, p);
    seq->record<kp::OpSyncDevice>({ a })->record(op);
    // The int-dot mat-vec quantizes the activations (MatMulTestSupport.hpp).
    bool intDot = op->path() == "matvec-int-dot";
    seq->record<kp::OpSyncLocal>({ c });
    mgr().sequence()->eval<kp::OpSyncDevice>({ b });
    for (int step = 0; step < 3; ++step) {
        auto x = randomValues(64, 10 + step);
        a->setData(x);
        seq->eval();
        auto out = c->vector<float>();
        for (uint32_t j = 0; j < 16; ++j) {
            double ref = 0, magnitude = 0;
            for (uint32_t kk = 0; kk < 64; ++kk) {
                ref += double(x[kk]) * bStored[j * 64 + kk];
                magnitude += std::fabs(double(x[kk]) * bStored[j * 64 + kk]);
            }
            EXPECT_NEAR(out[j], ref, intDot ? magnitude / 127 : 1e-4) << "step " << step << " j " << j;
        }
    }
}

// The fast paths of devices that have them (the H200: NV and KHR cooperative
// matrices, bf16 ones, accelerated integer dot products), each forced in
// turn; skipped where the device has none (lavapipe).
TEST_F(MatMul, CooperativeMatrixAndIntDotPathsWhereTheDeviceHasThem)
{
    const kp::DeviceCapabilities& caps = mgr().capabilities();
    const auto& cm = caps.cooperativeMatrix;
    struct Forced
    {
        bool available;
        const char* disabled;
        const char* path;
        std::vector<std::pair<Elem, Elem>> types;
    };
    std::vector<std::pair<Elem, Elem>> f16Types = { { Elem::F16, Elem::F16 }, { Elem::F32, Elem::F16 },
                                                    { Elem::F32, Elem::Q8_0 }, { Elem::F16, Elem::Q4_0 } };
    std::vector<Forced> paths = {
        { cm.khr, nullptr, "coopmat-khr", f16Types },
        { cm.nv, "coopmat-khr", "coopmat-nv", f16Types },
        { cm.khr && cm.bfloat16, nullptr, "coopmat-khr-bf16", { { Elem::BF16, Elem::BF16 }, { Elem::BF16, Elem::F32 } } },
    };
    bool ran = false;
    for (const auto& forced : paths) {
        if (!forced.available) {
            continue;
        }
        DisablePaths disable(forced.disabled);
        for (const auto& [a, b] : forced.types) {
            for (Elem c : { Elem::F32, Elem::F16 }) {
                for (const auto& s : std::vector<std::array<uint32_t, 3>>{ { 33, 70, 96 }, { 130, 260, 64 }, { 64, 64, 32 } }) {
                    bool quant = isQuant(b);
                    GemmCase gc{ shape(s[0], s[1], s[2], false, quant), a, b, c };
                    gc.p.beta = s[0] == 130 ? 0.5f : 0.0f;
                    EXPECT_EQ(runGemmCase(mgr(), gc), forced.path);
                    if (!quant) {
                        GemmCase transposed{ shape(s[0], s[1], s[2], true, true), a, b, c };
                        EXPECT_EQ(runGemmCase(mgr(), transposed), forced.path);
                    }
                    ran = true;
                }
            }
        }
    }
    if (caps.integerDotProduct.accelerated4x8BitPacked && caps.integerDotProduct.accelerated4x8BitPackedMixed) {
        for (Elem b : { Elem::Q8_0, Elem::Q4_0, Elem::Q4_K, Elem::Q5_K }) {
            for (const auto& s : std::vector<std::array<uint32_t, 3>>{ { 1, 45, 96 }, { 1, 300, 2304 } }) {
                if (s[2] % blockOf(b) != 0) {
                    continue; // the K-quants' super-blocks
                }
                EXPECT_EQ(runGemmCase(mgr(), GemmCase{ shape(s[0], s[1], s[2], false, true), Elem::F32, b, Elem::F32 }),
                          "matvec-int-dot");
                ran = true;
            }
        }
    }
    if (!ran) {
        GTEST_SKIP() << "'" << caps.deviceName << "' has no cooperative matrices and no accelerated integer dot products";
    }
}

// The cooperative-matrix GEMM with 1 to 4 tiles of loads in flight
// (KOMPUTE_ENV_COOPMAT_AHEAD, CoopmatConfig::loadAhead; the main loop is
// unrolled by that count): k of 7 and 13 tiles of 32 (a partial last round
// of the loop), a partial last tile, each staging form (f16, raw f32 A,
// raw Q8_0 and Q4_0 B), on each cooperative-matrix path the device has;
// 512 x 3200 makes 100 tiles of 128 x 128, which a GPU of up to 133
// multiprocessors takes 64 deep in one shared stage (k = 160: 2.5 tiles).
TEST_F(MatMul, CooperativeMatrixLoadAheadVariants)
{
    const auto& cm = mgr().capabilities().cooperativeMatrix;
    if (!cm.khr && !cm.nv) {
        GTEST_SKIP() << "'" << mgr().capabilities().deviceName << "' has no cooperative matrices";
    }
    for (const char* disabled : { (const char*)nullptr, "coopmat-khr" }) {
        if ((disabled && !cm.nv) || (!disabled && !cm.khr)) {
            continue;
        }
        DisablePaths disable(disabled);
        std::string path = disabled ? "coopmat-nv" : "coopmat-khr";
        // (1, 2 and 4 tiles on the NV form, 1 on the KHR form, which the
        // same module becomes; beyond 1 tile, the raw f32 A and Q4_0 B
        // stagings: the driver compiles each variant for seconds, and every
        // count on both forms took 90 s and more under the validation layer
        // on an H100; 3 of each form took 64 s, all passing.)
        for (const char* ahead : { "1", "2", "4" }) {
            if (!disabled && std::string(ahead) != "1") {
                continue;
            }
            SCOPED_TRACE(std::string(ahead) + " " + path);
            ScopedEnv tuning("KOMPUTE_ENV_COOPMAT_AHEAD", ahead);
            for (const auto& [a, b] : std::vector<std::pair<Elem, Elem>>{
                   { Elem::F16, Elem::F16 }, { Elem::F32, Elem::F16 }, { Elem::F32, Elem::Q8_0 }, { Elem::F16, Elem::Q4_0 } }) {
                if (std::string(ahead) != "1" && !(a == Elem::F32 && b == Elem::F16) && b != Elem::Q4_0) {
                    continue;
                }
                bool quant = isQuant(b);
                for (const auto& s : std::vector<std::array<uint32_t, 3>>{
                       { 130, 70, 224 }, { 33, 260, 416 }, { 64, 64, 40 }, { 512, 3200, 160 } }) {
                    if (quant && s[2] % 32 != 0) {
                        continue;
                    }
                    GemmCase gc{ shape(s[0], s[1], s[2], false, quant), a, b, Elem::F32 };
                    gc.seed = s[2] + std::atoi(ahead);
                    EXPECT_EQ(runGemmCase(mgr(), gc), path);
                }
            }
        }
        for (const char* bad : { "0", "5", "two" }) {
            SCOPED_TRACE(bad);
            ScopedEnv tuning("KOMPUTE_ENV_COOPMAT_AHEAD", bad);
            LogCapture log;
            GemmCase gc{ shape(64, 64, 64), Elem::F16, Elem::F16, Elem::F32 };
            EXPECT_EQ(runGemmCase(mgr(), gc), path);
            EXPECT_TRUE(log.contains(kp::logger::Level::Warn, "KOMPUTE_ENV_COOPMAT_AHEAD=" + std::string(bad) + " is ignored"));
        }
    }
}

// KOMPUTE_ENV_COOPMAT_TILE replaces the tile chooseCoopmat picks (the
// tuning knob kompute-llm measures tiles with): a tile of 4 subgroups of
// 64 x 32 and one of 32 x 32, each with f16 B and with Q4_0 B as words, on
// the NV form (the KHR form is the same module rewritten); 512 x 3170
// leaves a partial column of tiles. Values that do not parse or fit are
// reported and the picked tile runs.
TEST_F(MatMul, CooperativeMatrixTileOverride)
{
    if (!mgr().capabilities().cooperativeMatrix.nv) {
        GTEST_SKIP() << "'" << mgr().capabilities().deviceName << "' has no NV cooperative matrices";
    }
    DisablePaths disable("coopmat-khr");
    // (tile, the grid of 512 x 3170 in its tiles)
    for (const auto& [tile, grid] : std::vector<std::pair<const char*, kp::Workgroup>>{
           { "128:64:64:64:32:1", { 50, 4, 1 } }, { "64:64:64:32:32:1", { 50, 8, 1 } } }) {
        SCOPED_TRACE(tile);
        ScopedEnv tuning("KOMPUTE_ENV_COOPMAT_TILE", tile);
        for (Elem b : { Elem::F16, Elem::Q4_0 }) {
            GemmCase gc{ shape(512, 3170, 192, false, true), Elem::F16, b, Elem::F32 };
            gc.seed = 7;
            LogCapture log;
            std::shared_ptr<kp::OpMatMul> op;
            EXPECT_EQ(runGemmCase(mgr(), gc, &op), "coopmat-nv");
            EXPECT_EQ(op->algorithms().at(0)->getWorkgroup(), grid);
            EXPECT_FALSE(log.contains(kp::logger::Level::Warn, "KOMPUTE_ENV_COOPMAT_TILE"));
        }
    }
    for (const char* bad : { "128:64:64:64:32", "128:64:64:64:32:3", "0:64:64:64:32:1", "96:64:64:64:32:1",
                             "256:256:64:64:64:2" }) {
        SCOPED_TRACE(bad);
        ScopedEnv tuning("KOMPUTE_ENV_COOPMAT_TILE", bad);
        LogCapture log;
        GemmCase gc{ shape(64, 64, 64), Elem::F16, Elem::F16, Elem::F32 };
        EXPECT_EQ(runGemmCase(mgr(), gc), "coopmat-nv");
        EXPECT_TRUE(log.contains(kp::logger::Level::Warn, "KOMPUTE_ENV_COOPMAT_TILE=" + std::string(bad) + " is ignored"));
    }
}

// Q8_0 and Q4_0 B loaded as words (CoopmatConfig::quantWords: 64-deep
// tiles, k, ldb and the offset multiples of 64 weights), on each
// cooperative-matrix path the device has, and the same products with it
// disabled on the NV form ("coopmat-quant-words": B a chunk of 8 weights
// per thread; each variant costs the driver seconds to compile):
// 512 x 3170 makes 100 tiles of 128 x 128 with a partial last column of
// tiles (rows of B past n are zeros), which a GPU of up to 133
// multiprocessors takes 64 deep; k of 1 and 3 tiles; B at an offset of 64
// weights with rows 128 apart, alpha and beta; k = 96 (1.5 tiles) and an
// offset of 32 take the chunks; the grouped forms (Q8_0X8, Q4_0X8) with
// random bytes, and batched at an offset. (f16 A: f32 A changes only A's
// staging.)
TEST_F(MatMul, CooperativeMatrixQuantizedWeightsAsWords)
{
    const auto& cm = mgr().capabilities().cooperativeMatrix;
    if (!cm.khr && !cm.nv) {
        GTEST_SKIP() << "'" << mgr().capabilities().deviceName << "' has no cooperative matrices";
    }
    for (const char* path : { "coopmat-khr", "coopmat-nv" }) {
        bool nv = std::string(path) == "coopmat-nv";
        if ((nv && !cm.nv) || (!nv && !cm.khr)) {
            continue;
        }
        for (const char* words : { "", "coopmat-quant-words" }) {
            bool chunks = *words != 0;
            if (chunks && !nv) {
                continue;
            }
            std::string disabled = std::string(nv ? "coopmat-khr," : "") + words;
            SCOPED_TRACE(std::string(path) + " disabled: " + disabled);
            DisablePaths disable(disabled.c_str());
            for (Elem b : { Elem::Q8_0, Elem::Q4_0 }) {
                for (const auto& s : std::vector<std::array<uint32_t, 3>>{ { 512, 3170, 64 }, { 512, 3170, 192 },
                                                                           { 512, 3200, 96 } }) {
                    if (chunks && s[2] != 192) {
                        continue;
                    }
                    GemmCase gc{ shape(s[0], s[1], s[2], false, true), Elem::F16, b, Elem::F32 };
                    gc.seed = s[1] + s[2];
                    EXPECT_EQ(runGemmCase(mgr(), gc), path);
                }
                for (uint32_t offset : { 64u, 32u }) {
                    if (chunks) {
                        continue;
                    }
                    GemmCase gc{ shape(512, 3200, 64, false, true), Elem::F16, b, Elem::F32 };
                    gc.p.ldb = 128;
                    gc.p.offsetB = offset;
                    gc.p.alpha = 0.5f;
                    gc.p.beta = 1.0f;
                    gc.seed = offset;
                    EXPECT_EQ(runGemmCase(mgr(), gc), path);
                }
            }
            // The grouped forms: a tile's two blocks are a quarter of a
            // group (k = 768: three groups; a batch of offset matrices).
            for (Elem b : { Elem::Q8_0X8, Elem::Q4_0X8 }) {
                GemmCase gc{ shape(512, 3170, 768, false, true), Elem::F16, b, Elem::F32 };
                gc.seed = 768 + static_cast<uint32_t>(b);
                gc.rawBlocks = true;
                EXPECT_EQ(runGemmCase(mgr(), gc), path);
                GemmCase batched{ shape(512, 3200, 256, false, true), Elem::F16, b, Elem::F16 };
                batched.p.batch = 2;
                batched.p.ldb = 512;
                batched.p.offsetB = 256;
                batched.p.strideB = 3200 * 512;
                batched.p.beta = 0.5f;
                EXPECT_EQ(runGemmCase(mgr(), batched), path);
            }
        }
    }
}

// The int-dot mat-vec's three row modes (Q8_0/Q4_0; Q4_K and Q5_K: the
// quantized-x one; Q8_0X8/Q4_0X8: the quantized-x one, whose rows' threads
// take neighbouring chunks where x is whole, and the plain one), on every
// device whose
// driver has integer dot products at all: "matvec-float" makes lavapipe,
// which does not accelerate them, take the int-dot build too. Rows of whole
// 16-byte chunks (k, ldb and offsetB multiples of 256 weights) take the
// quantized-x mode (x quantized once per workgroup into shared memory, in
// chunks: on CPUs 64 blocks, so k = 2304 takes two chunks, the second part
// full), "matvec-qx" the staged mode, "matvec-qx,staged" the plain one.
// Cases: k off the threads' step (768: 3 groups of 8 blocks per row for 8
// threads a row), rows off the rows per workgroup (37 for 8, 1), strided x
// (transA), offsets, alpha/beta and batches.
TEST_F(MatMul, IntDotMatVecModesWhereTheDeviceHasIntegerDotProducts)
{
    const kp::DeviceCapabilities& caps = mgr().capabilities();
    if (!caps.integerDotProduct.supported) {
        GTEST_SKIP() << "'" << caps.deviceName << "' has no integer dot products";
    }
    for (const char* disabled : { "matvec-float", "matvec-float,matvec-qx", "matvec-float,matvec-qx,staged" }) {
        SCOPED_TRACE(disabled);
        DisablePaths disable(disabled);
        bool qx = std::string(disabled) == "matvec-float";
        for (Elem b : { Elem::Q8_0, Elem::Q4_0, Elem::Q4_K, Elem::Q5_K, Elem::Q8_0X8, Elem::Q4_0X8 }) {
            // The K-quants take the int-dot build in the quantized-x mode only.
            bool kQuant = b == Elem::Q4_K || b == Elem::Q5_K;
            const char* expected = kQuant && !qx ? "matvec" : "matvec-int-dot";
            for (Elem a : kInputTypes) {
                for (const auto& s : std::vector<std::array<uint32_t, 3>>{
                       { 1, 1, 256 }, { 1, 37, 768 }, { 1, 9, 2304 }, { 1, 16, 512 }, { 1, 45, 96 } }) {
                    if (s[2] % blockOf(b) != 0) {
                        continue;
                    }
                    for (bool transA : { false, true }) {
                        if (transA && a != Elem::F32) {
                            continue; // strided x: one type is enough
                        }
                        GemmCase gc{ shape(s[0], s[1], s[2], transA, true), a, b, Elem::F32 };
                        gc.seed = s[1] + s[2] + (transA ? 1 : 0);
                        // Random bytes reach every bit of the K-quants'
                        // packed scales (and every scale of a group).
                        gc.rawBlocks = blockOf(b) == 256 && transA;
                        EXPECT_EQ(runGemmCase(mgr(), gc), expected);
                    }
                }
                // f16 C, alpha/beta, and batches with offsets: whole chunks
                // (offsetB 256) and not (offsetB 32: the unit row mode).
                for (uint64_t offsetB : { 256u, 32u }) {
                    if (offsetB % blockOf(b) != 0) {
                        continue;
                    }
                    GemmCase gc{ shape(1, 21, 512, false, true), a, b, Elem::F16 };
                    gc.p.batch = 3;
                    gc.p.ldb = 768;
                    gc.p.offsetA = 8;
                    gc.p.offsetB = offsetB;
                    gc.p.offsetC = 5;
                    gc.p.strideA = 520;
                    gc.p.strideC = 30;
                    gc.p.alpha = -0.5f;
                    gc.p.beta = 0.75f;
                    gc.seed = static_cast<uint32_t>(offsetB);
                    EXPECT_EQ(runGemmCase(mgr(), gc), expected);
                }
            }
        }
    }
}

// The quantized-x mode's tuning variants through KOMPUTE_ENV_MATVEC_QX
// (threads:rows:groupsPerSM:prefetch:stage[:interleave]; lavapipe counts
// one "SM"): one
// workgroup per tile of rows, grids smaller than the tiles (a workgroup
// loops over several, x quantized once), the prefetch of each thread's
// next group and of its group in the next tile, the staged (coalesced)
// loads (4 threads a row: k = 1280 takes two rounds of 4 groups, the
// second part full), rows whose threads span several subgroups (the
// shared-memory sums, and the unstaged loop where staging was asked for;
// lavapipe's subgroups are 8 wide), x whole and in chunks (k = 2304 on CPUs: 64-block
// chunks), batches with offsets. A value that does not parse or fit is
// reported and the choice stays.
TEST_F(MatMul, QuantizedXMatVecTuningVariants)
{
    const kp::DeviceCapabilities& caps = mgr().capabilities();
    if (!caps.integerDotProduct.supported) {
        GTEST_SKIP() << "'" << caps.deviceName << "' has no integer dot products";
    }
    DisablePaths disable("matvec-float");
    // (Each variant and type compiles a pipeline: on lavapipe about a second
    // each, so the block formats beyond Q4_0 run with one variant, whose
    // loop is the same for all.)
    for (const char* variant : { "64:8:0:0:0", "64:8:2:1:0", "64:4:3:0:0", "32:1:5:1:0", "128:4:1:1:0", "32:8:2:0:1",
                                 "64:4:0:0:1", "64:8:2:0:0:0", "32:1:3:0:0:1", "64:4:3:1:0:4", "32:2:1:1:0:3",
                                 "64:8:2:2:0:2" }) {
        SCOPED_TRACE(variant);
        ScopedEnv tuning("KOMPUTE_ENV_MATVEC_QX", variant);
        std::string v = variant;
        bool allTypes = v == "64:8:2:1:0" || v == "32:8:2:0:1";
        // The grouped forms' loops: interleaved (their default; 32:1 sums
        // a row's threads through shared memory; with prefetch, the next
        // round's loads in flight, within a tile and across tiles: 64:4:3
        // in batches of 4, 32:2:1 of 3 on one workgroup; prefetch 2, the
        // first batch loaded before x is quantized) and a group a thread
        // (the sixth field 0).
        bool grouped = allTypes || v == "64:8:2:0:0:0" || v == "32:1:3:0:0:1" || v == "64:4:3:1:0:4" ||
                       v == "32:2:1:1:0:3" || v == "64:8:2:2:0:2";
        for (Elem b : { Elem::Q4_0, Elem::Q8_0, Elem::Q4_K, Elem::Q4_0X8, Elem::Q8_0X8 }) {
            bool isGrouped = b == Elem::Q4_0X8 || b == Elem::Q8_0X8;
            bool sixFields = std::count(v.begin(), v.end(), ':') == 5;
            if (isGrouped ? !grouped : sixFields || (b != Elem::Q4_0 && !allTypes)) {
                continue;
            }
            for (const auto& s : std::vector<std::array<uint32_t, 3>>{ { 1, 37, 768 }, { 1, 9, 2304 }, { 1, 67, 1280 } }) {
                GemmCase gc{ shape(s[0], s[1], s[2], false, true), Elem::F32, b, Elem::F32 };
                gc.seed = s[1] + s[2];
                EXPECT_EQ(runGemmCase(mgr(), gc), "matvec-int-dot");
            }
            GemmCase batched{ shape(1, 21, 512, false, true), Elem::F16, b, Elem::F16 };
            batched.p.batch = 3;
            batched.p.ldb = 768;
            batched.p.offsetB = 256;
            batched.p.alpha = -0.5f;
            batched.p.beta = 0.75f;
            EXPECT_EQ(runGemmCase(mgr(), batched), "matvec-int-dot");
        }
    }
    for (const char* bad : { "256:16:2:0", "64:3:1:0:0", "64:8:1:3:0" }) {
        SCOPED_TRACE(bad);
        ScopedEnv tuning("KOMPUTE_ENV_MATVEC_QX", bad);
        LogCapture log;
        GemmCase gc{ shape(1, 37, 768, false, true), Elem::F32, Elem::Q4_0, Elem::F32 };
        EXPECT_EQ(runGemmCase(mgr(), gc), "matvec-int-dot");
        EXPECT_TRUE(log.contains(kp::logger::Level::Warn, "KOMPUTE_ENV_MATVEC_QX=" + std::string(bad) + " is ignored"));
    }
}

// A tuning table (KOMPUTE_ENV_TUNING_FILE; the README, "Tuning tables")
// replaces the rules' configuration for the products it names on the
// device it names: the quantized-x mat-vec and the tiled GEMM run with its
// entries (OpMatMul::tuning() says so, the grid follows) and compute the
// same results. Within the device's blocks, one that names no driver goes
// before one of another driver, and the entry with more fields given
// before a broader one; a GEMM entry's m is the least m it applies to.
// Another device's block, an entry that does not fit the device (reported),
// a file that is no table (reported) and KOMPUTE_ENV_DISABLE=tuning-tables
// leave the rules, and KOMPUTE_ENV_MATVEC_QX still replaces the table's
// choice.
TEST_F(MatMul, TuningTableReplacesTheRules)
{
    const kp::DeviceCapabilities& caps = mgr().capabilities();
    if (!caps.integerDotProduct.supported) {
        GTEST_SKIP() << "'" << caps.deviceName << "' has no integer dot products";
    }
    DisablePaths disable("matvec-float,coopmat");
    std::string device = caps.deviceName;
    std::string path = ::testing::TempDir() + "kompute_tuning_table.json";
    auto write = [&](const std::string& text) {
        std::FILE* file = std::fopen(path.c_str(), "wb");
        ASSERT_NE(file, nullptr);
        std::fputs(text.c_str(), file);
        std::fclose(file);
    };
    write(R"({"devices": [
      {"device": "no such device", "entries": [
        {"kernel": "matvec-qx", "b": "q4_0", "n": 37, "k": 768, "config": "64:8:1:0:0"}]},
      {"device": ")" + device + R"(", "driver": "no such driver", "entries": [
        {"kernel": "matvec-qx", "b": "q4_0", "n": 37, "k": 768, "config": "64:4:1:0:0"}]},
      {"device": ")" + device + R"(", "entries": [
        {"kernel": "matvec-qx", "b": "q4_0", "config": "64:8:2:0:0"},
        {"kernel": "matvec-qx", "b": "q4_0", "n": 37, "k": 768, "config": "32:4:3:1:0"},
        {"kernel": "matvec-qx", "b": "q8_0", "n": 37, "k": 768, "config": "4096:8:1:0:0"},
        {"kernel": "tiled", "a": "f32", "b": "f32", "m": 32, "n": 65, "k": 64, "config": "16:16:16:4:4:2"},
        {"kernel": "tiled", "a": "f32", "b": "f32", "m": 64, "n": 65, "k": 64, "config": "64:64:16:4:4:1"},
        {"kernel": "winograd", "config": "1:2:3"}]}]})");
    auto run = [&](const GemmCase& gc) {
        std::shared_ptr<kp::OpMatMul> op;
        runGemmCase(mgr(), gc, &op);
        return op ? op->tuning() : kp::MatMulTuning{};
    };
    GemmCase q4{ shape(1, 37, 768, false, true), Elem::F32, Elem::Q4_0, Elem::F32 };
    GemmCase q4Other{ shape(1, 9, 2304, false, true), Elem::F32, Elem::Q4_0, Elem::F32 };
    GemmCase q8{ shape(1, 37, 768, false, true), Elem::F32, Elem::Q8_0, Elem::F32 };
    GemmCase tiled{ shape(33, 65, 64), Elem::F32, Elem::F32, Elem::F32 };
    const std::string rules = run(q4).config; // no table yet
    {
        ScopedEnv table("KOMPUTE_ENV_TUNING_FILE", path.c_str());
        LogCapture log;
        kp::MatMulTuning t = run(q4);
        EXPECT_EQ(t.kernel, "matvec-qx");
        EXPECT_EQ(t.config, "32:4:3:1:0:0");
        EXPECT_EQ(t.source, "table " + path + " (device '" + device + "', driver any)");
        EXPECT_EQ(run(q4Other).config, "64:8:2:0:0:0");
        t = run(q8);
        EXPECT_EQ(t.source, "rules");
        EXPECT_TRUE(log.contains(kp::logger::Level::Warn, "entries[2] (\"4096:8:1:0:0\") is ignored for '" + device));
        EXPECT_TRUE(log.contains(kp::logger::Level::Warn, "entries[5] is ignored: unknown kernel \"winograd\""));
        std::shared_ptr<kp::OpMatMul> op;
        EXPECT_EQ(runGemmCase(mgr(), tiled, &op), "tiled");
        EXPECT_EQ(op->tuning().config, "16:16:16:4:4:2");
        EXPECT_EQ(op->algorithms().at(0)->getWorkgroup(), (kp::Workgroup{ 5, 3, 1 }));
        {
            DisablePaths off("matvec-float,coopmat,tuning-tables");
            EXPECT_EQ(run(q4).source, "rules");
        }
        {
            ScopedEnv knob("KOMPUTE_ENV_MATVEC_QX", "32:8:2:0:0");
            t = run(q4);
            EXPECT_EQ(t.config, "32:8:2:0:0:0");
            EXPECT_EQ(t.source, "KOMPUTE_ENV_MATVEC_QX");
        }
        write("{\"devices\": [}");
        t = run(q4);
        EXPECT_EQ(t.source, "rules");
        EXPECT_EQ(t.config, rules);
        EXPECT_TRUE(log.contains(kp::logger::Level::Warn, "KOMPUTE_ENV_TUNING_FILE=" + path + " is ignored: " + path +
                                                              ": line 1, column 14: expected a value"));
    }
    std::remove(path.c_str());
    EXPECT_EQ(run(q4).source, "rules");
}

// The quantized-x mode on activations that int8 holds exactly (integers
// with |x| <= 127, each block's largest 127): its only error is then f32
// accumulation, so a wrong scale, nibble or block shows (the tolerance of
// the general case, S / 127, is too loose to see a few per cent).
TEST_F(MatMul, QuantizedXMatVecIsExactOnInt8Activations)
{
    const kp::DeviceCapabilities& caps = mgr().capabilities();
    if (!caps.integerDotProduct.supported) {
        GTEST_SKIP() << "'" << caps.deviceName << "' has no integer dot products";
    }
    DisablePaths disable("matvec-float");
    // k = 2304: x in chunks on CPUs (whole on GPUs); 1536: whole (the
    // grouped forms' interleaved loop).
    for (auto [b, raw, k] : std::vector<std::tuple<Elem, bool, uint32_t>>{
           { Elem::Q8_0, false, 2304 }, { Elem::Q4_0, false, 2304 }, { Elem::Q4_K, false, 2304 },
           { Elem::Q4_K, true, 2304 }, { Elem::Q5_K, false, 2304 }, { Elem::Q5_K, true, 2304 },
           { Elem::Q8_0X8, true, 2304 }, { Elem::Q4_0X8, true, 2304 }, { Elem::Q8_0X8, true, 1536 },
           { Elem::Q4_0X8, true, 1536 }, { Elem::Q4_0X8, false, 1536 } }) {
        SCOPED_TRACE(std::string(elemName(b)) + (raw ? " random bytes" : "") + " k " + std::to_string(k));
        const uint32_t n = 37;
        std::mt19937 rng(5);
        std::uniform_int_distribution<int> level(-127, 127);
        std::vector<float> x(k);
        for (uint32_t i = 0; i < k; ++i) {
            x[i] = i % 32 == 7 ? (i % 64 == 7 ? 127.0f : -127.0f) : float(level(rng));
        }
        std::vector<float> wStored;
        std::shared_ptr<kp::Tensor> w;
        if (raw) {
            auto bytes = randomBlocks(weightFormat(b), size_t(n) * k / blockOf(b), 8);
            wStored = kp::dequantize(weightFormat(b), bytes.data(), size_t(n) * k / blockOf(b));
            w = mgr().tensor(bytes.data(), static_cast<uint32_t>(bytes.size()), 1, DataTypes::eUnsignedChar);
        } else {
            w = makeOperand(mgr(), b, randomValues(size_t(n) * k, 8), wStored);
        }
        auto a = mgr().tensor(x);
        auto c = mgr().tensor(std::vector<float>(n, 0.0f));
        auto p = shape(1, n, k, false, true);
        p.formatB = weightFormat(b);
        auto op = std::make_shared<kp::OpMatMul>(a, w, c, p);
        EXPECT_EQ(op->path(), "matvec-int-dot");
        mgr().sequence()->record<kp::OpSyncDevice>({ a, w })->record(op)->record<kp::OpSyncLocal>({ c })->eval();
        auto out = c->vector();
        for (uint32_t j = 0; j < n; ++j) {
            double ref = 0, magnitude = 0;
            for (uint32_t kk = 0; kk < k; ++kk) {
                ref += double(x[kk]) * wStored[size_t(j) * k + kk];
                magnitude += std::fabs(double(x[kk]) * wStored[size_t(j) * k + kk]);
            }
            EXPECT_NEAR(out[j], ref, 1e-5 * magnitude) << "row " << j;
        }
    }
}

// MatMulParams::swigluA: x = silu(gate) * up read from two vectors of A, on
// every mat-vec mode (float rows, staged, plain and quantized-x int-dot,
// the K-quants' unit rows), with strided x (transA) and batches. The
// quantized-x mode with x whole quantizes it in a pass of its own (two
// dispatches), or in each workgroup with matvec-x-pass off.
TEST_F(MatMul, SwigluInputOnEveryMatVecMode)
{
    bool intDots = mgr().capabilities().integerDotProduct.supported;
    for (const char* disabled :
         { (const char*)nullptr, "staged", "matvec-float", "matvec-float,matvec-x-pass", "matvec-float,matvec-qx" }) {
        if (disabled && std::string(disabled).rfind("matvec-float", 0) == 0 && !intDots) {
            continue;
        }
        SCOPED_TRACE(disabled ? disabled : "default");
        DisablePaths disable(disabled);
        for (Elem b : { Elem::F32, Elem::F16, Elem::Q8_0, Elem::Q4_0, Elem::Q4_K, Elem::Q6_K, Elem::Q4_0X8 }) {
            for (Elem a : { Elem::F32, Elem::F16 }) {
                for (uint32_t lda : { 0u, 3u }) {
                    SCOPED_TRACE(std::string(elemName(a)) + " x " + elemName(b) + " lda " + std::to_string(lda));
                    const uint32_t n = 19, k = 512, batch = 2;
                    uint32_t step = lda ? lda : 1;
                    uint64_t vector = uint64_t(k - 1) * step + 1;
                    // Per batch: the gate from 0, the up from vector + 8.
                    uint64_t upOffset = (vector + 8 + 7) / 8 * 8, strideA = 2 * upOffset + 16;
                    std::vector<float> aStored, bStored;
                    auto at = makeOperand(mgr(), a, randomValues(batch * strideA, 21 + lda, -3.0f, 3.0f), aStored);
                    auto bt = makeOperand(mgr(), b, randomValues(size_t(batch) * n * k, 22), bStored);
                    auto ct = mgr().tensor(std::vector<float>(batch * n, 0.0f));
                    auto p = shape(1, n, k, lda != 0, true);
                    p.lda = lda;
                    p.batch = batch;
                    p.strideA = strideA;
                    p.offsetA = upOffset;
                    p.swigluA = true;
                    p.gateOffsetA = 0;
                    p.formatB = weightFormat(b);
                    auto op = std::make_shared<kp::OpMatMul>(std::vector<std::shared_ptr<kp::Memory>>{ at, bt, ct }, p);
                    EXPECT_EQ(op->path().rfind("matvec", 0), 0u) << op->path();
                    bool intDot = op->path() == "matvec-int-dot";
                    // (k = 512: x whole in the quantized-x mode on every device.)
                    std::string off = disabled ? disabled : "";
                    bool qxMode = intDot && off.find("matvec-qx") == std::string::npos && b != Elem::Q6_K;
                    bool xPass = qxMode && off.find("matvec-x-pass") == std::string::npos;
                    EXPECT_EQ(op->algorithms().size(), xPass ? 2u : 1u);
                    mgr().sequence()->record<kp::OpSyncDevice>({ at, bt })->record(op)->record<kp::OpSyncLocal>({ ct })->eval();
                    auto out = ct->vector();
                    for (uint32_t bi = 0; bi < batch; ++bi) {
                        for (uint32_t j = 0; j < n; ++j) {
                            double ref = 0, magnitude = 0;
                            for (uint32_t kk = 0; kk < k; ++kk) {
                                double g = aStored[bi * strideA + kk * step];
                                double up = aStored[bi * strideA + upOffset + kk * step];
                                double x = g / (1 + std::exp(-g)) * up;
                                double v = x * bStored[(size_t(bi) * n + j) * k + kk];
                                ref += v;
                                magnitude += std::fabs(v);
                            }
                            double tolerance = (intDot ? 1.0 / 127 : 1e-5) * magnitude + 1e-6;
                            EXPECT_NEAR(out[bi * n + j], ref, tolerance) << "batch " << bi << " row " << j << " path "
                                                                         << op->path();
                        }
                    }
                }
            }
        }
    }
    // Refused where no mat-vec runs.
    auto x = mgr().tensor(std::vector<float>(64 * 2, 1.0f));
    auto w = mgr().tensor(std::vector<float>(64 * 4, 1.0f));
    auto c = mgr().tensor(std::vector<float>(8, 0.0f));
    auto gemm = shape(2, 4, 64, false, true);
    gemm.swigluA = true;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, w, c, gemm); }, { "swigluA is an input of the mat-vec" }));
    auto gate = shape(1, 4, 64, false, true);
    gate.swigluA = true;
    gate.gateOffsetA = 100;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, w, c, gate); }, { "A (its gate, from gateOffsetA) holds 128" }));
    gate.gateOffsetA = 64;
    DisablePaths off("matvec");
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, w, c, gate); }, { "swigluA needs the mat-vec" }));
}

/** 1 / sqrt(mean(x^2) + eps): the RMSNorm's factor of a row (normA). */
double
inverseRms(const std::vector<float>& x, float eps)
{
    double squares = 0;
    for (float v : x) {
        squares += double(v) * v;
    }
    return 1.0 / std::sqrt(squares / x.size() + eps);
}

// MatMulParams::swigluC on the int-dot mat-vec (m = 1: a decode step's gate
// and up projections, with the RMSNorm inside or not), quantizeC's int8
// blocks after C's row, and a product that reads them as its row of A
// (quantizedA), run twice so that the blocks' counters are seen to return
// to zero; then the refusals.
TEST_F(MatMul, SwigluOutputAndQuantizedRowOnTheIntDotMatVec)
{
    const auto& caps = mgr().capabilities();
    if (!caps.integerDotProduct.supported || !(caps.subgroup.operations & vk::SubgroupFeatureFlagBits::eShuffle)) {
        GTEST_SKIP() << "'" << mgr().capabilities().deviceName
                     << "' has no integer dot products or subgroup shuffles: no int-dot mat-vec with swigluC";
    }
    DisablePaths disable("matvec-float");
    // (n: the down product's k, whole 256-weight groups for its quantized-x mode)
    const uint32_t n = 256, k = 256, upRow = n + 8, outs = 40;
    for (Elem b : { Elem::Q8_0, Elem::Q4_0, Elem::Q4_0X8, Elem::Q4_K }) {
        for (bool norm : { false, true }) {
            for (bool quantize : { false, true }) {
                SCOPED_TRACE(std::string(elemName(b)) + (norm ? " normA" : "") + (quantize ? " quantizeC" : ""));
                std::vector<float> bStored, gStored, dStored;
                auto at = mgr().tensor(randomValues(k, 31, -2.0f, 2.0f));
                auto bt = makeOperand(mgr(), b, randomValues(size_t(upRow + n) * k, 32), bStored);
                auto gt = makeOperand(mgr(), Elem::F32, randomValues(k, 33, 0.5f, 1.5f), gStored);
                auto ct = mgr().tensor(std::vector<float>(n + (quantize ? kp::quantizedRowWords(n) : 0), 0.0f));
                auto p = shape(1, n, k, false, true);
                p.alpha = 0.75f;
                p.swigluC = true;
                p.upRowB = upRow;
                p.formatB = weightFormat(b);
                p.normA = norm;
                p.quantizeC = quantize;
                std::vector<std::shared_ptr<kp::Memory>> tensors{ at, bt, ct };
                if (norm) {
                    tensors.push_back(gt);
                }
                auto op = std::make_shared<kp::OpMatMul>(tensors, p);
                EXPECT_EQ(op->path(), "matvec-int-dot");
                EXPECT_EQ(op->algorithms().size(), 1u);
                // The down product reading C's blocks.
                auto dt = makeOperand(mgr(), b, randomValues(size_t(outs) * n, 34), dStored);
                auto yt = mgr().tensor(std::vector<float>(outs, 0.0f));
                auto down = shape(1, outs, n, false, true);
                down.quantizedA = true;
                down.offsetA = n;
                down.formatB = weightFormat(b);
                std::shared_ptr<kp::OpMatMul> downOp;
                if (quantize) {
                    downOp = std::make_shared<kp::OpMatMul>(std::vector<std::shared_ptr<kp::Memory>>{ ct, dt, yt }, down);
                    EXPECT_EQ(downOp->path(), "matvec-int-dot");
                }
                for (int run = 0; run < 2; ++run) {
                    // The second run on other values of x: its blocks are its own.
                    std::vector<float> x = randomValues(k, 31 + 10 * run, -2.0f, 2.0f);
                    at->setData(x);
                    auto seq = mgr().sequence();
                    seq->record<kp::OpSyncDevice>({ at, bt, gt, dt })->record(op);
                    if (downOp) {
                        seq->record(downOp);
                    }
                    seq->record<kp::OpSyncLocal>({ ct, yt })->eval();
                    double scale = norm ? inverseRms(x, p.normEps) : 1.0;
                    auto c = ct->vector();
                    for (uint32_t j = 0; j < n; ++j) {
                        double g = 0, u = 0, gMag = 0, uMag = 0;
                        for (uint32_t kk = 0; kk < k; ++kk) {
                            double xk = x[kk] * scale * (norm ? gStored[kk] : 1.0f) * p.alpha;
                            double wg = xk * bStored[size_t(j) * k + kk], wu = xk * bStored[size_t(upRow + j) * k + kk];
                            g += wg;
                            u += wu;
                            gMag += std::fabs(wg);
                            uMag += std::fabs(wu);
                        }
                        double silu = g / (1 + std::exp(-g));
                        double ref = silu * u;
                        // (x rounded to int8: each sum within its magnitude / 127; silu' < 1.1)
                        double tolerance = 2 * (1.1 * gMag * std::fabs(u) + std::fabs(silu) * uMag + gMag * uMag / 127) / 127 + 1e-5;
                        EXPECT_NEAR(c[j], ref, tolerance) << "output " << j << " run " << run;
                    }
                    if (!quantize) {
                        continue;
                    }
                    // The blocks: d * q within half a step of C's own values.
                    std::vector<float> row(n);
                    for (uint32_t block = 0; block < n / 32; ++block) {
                        float pair[2];
                        std::memcpy(pair, &c[n + (n / 32) * 8 + 2 * block], sizeof(pair));
                        int sum = 0;
                        for (uint32_t e = 0; e < 32; ++e) {
                            uint32_t word;
                            std::memcpy(&word, &c[n + block * 8 + e / 4], 4);
                            int q = static_cast<int8_t>((word >> (8 * (e % 4))) & 0xffu);
                            sum += q;
                            row[block * 32 + e] = pair[0] * q;
                            EXPECT_NEAR(row[block * 32 + e], c[block * 32 + e], 0.501 * pair[0] + 1e-7)
                              << "element " << block * 32 + e << " run " << run;
                        }
                        EXPECT_NEAR(pair[1], pair[0] * sum, 1e-5 * std::fabs(pair[0] * sum) + 1e-7) << "block " << block;
                    }
                    auto y = yt->vector();
                    for (uint32_t j = 0; j < outs; ++j) {
                        double ref = 0, magnitude = 0;
                        for (uint32_t e = 0; e < n; ++e) {
                            double v = double(row[e]) * dStored[size_t(j) * n + e];
                            ref += v;
                            magnitude += std::fabs(v);
                        }
                        EXPECT_NEAR(y[j], ref, 1e-4 * magnitude + 1e-6) << "down output " << j << " run " << run;
                    }
                }
            }
        }
    }
    // Refusals, naming what is wrong.
    auto q8 = [&](uint32_t rows, uint32_t cols) {
        std::vector<float> stored;
        return makeOperand(mgr(), Elem::Q8_0, randomValues(size_t(rows) * cols, 35), stored);
    };
    auto x = mgr().tensor(std::vector<float>(k, 1.0f));
    auto w = q8(2 * n, k);
    auto c = mgr().tensor(std::vector<float>(n + kp::quantizedRowWords(n), 0.0f));
    auto gateUp = shape(1, n, k, false, true);
    gateUp.formatB = kp::WeightFormat::eQ8_0;
    gateUp.upRowB = n;
    gateUp.quantizeC = true;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, w, c, gateUp); }, { "quantizeC writes the SwiGLU row", "swigluC = 0" }));
    auto small = mgr().tensor(std::vector<float>(n + 8, 0.0f));
    gateUp.swigluC = true;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, w, small, gateUp); }, { "quantizedRowWords(n)" }));
    auto down = shape(2, 8, n, false, true);
    down.formatB = kp::WeightFormat::eQ8_0;
    down.quantizedA = true;
    auto y = mgr().tensor(std::vector<float>(16, 0.0f));
    auto wd = q8(8, n);
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(c, wd, y, down); }, { "quantizedA gives the one row of A", "m = 2" }));
    down.m = 1;
    std::vector<float> halfStored;
    auto half = makeOperand(mgr(), Elem::F16, std::vector<float>(n, 0.0f), halfStored);
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(half, wd, y, down); }, { "quantizedA: A must be eFloat" }));
    auto wf = mgr().tensor(std::vector<float>(8 * n, 1.0f));
    down.formatB = kp::WeightFormat::eNone;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(c, wf, y, down); }, { "quantizedA needs the mat-vec" }));
    auto norm = mgr().tensor(std::vector<float>(k, 1.0f));
    {
        // Float weights: the float row mode takes swigluC, not quantizeC.
        auto floatsB = mgr().tensor(std::vector<float>(size_t(2) * n * k, 1.0f));
        kp::MatMulParams floats = gateUp;
        floats.formatB = kp::WeightFormat::eNone;
        EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, floatsB, c, floats); },
                               { "quantizeC needs the mat-vec", "quantizeC takes the int-dot mat-vec's quantized-x mode" }));
        floats.quantizeC = false;
        EXPECT_EQ(kp::OpMatMul(x, floatsB, small, floats).path(), "matvec");
    }
    {
        DisablePaths off("matvec-float,matvec-glu");
        gateUp.quantizeC = false;
        gateUp.normA = true;
        EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(std::vector<std::shared_ptr<kp::Memory>>{ x, w, small, norm }, gateUp); },
                               { "normA needs the mat-vec", "matvec-glu" }));
    }
}

// MatMulParams::swigluC on the float mat-vec's row mode (m = 1, float
// weights: an f16 model's decode gate and up projections, with the RMSNorm
// inside or not, a gap between the gate's rows and the up's): C = silu(gate)
// * up against the host, in one dispatch.
TEST_F(MatMul, SwigluOutputOnTheFloatMatVec)
{
    if (!(mgr().capabilities().subgroup.operations & vk::SubgroupFeatureFlagBits::eShuffle)) {
        GTEST_SKIP() << "'" << mgr().capabilities().deviceName << "' has no subgroup shuffles: no mat-vec with swigluC";
    }
    const uint32_t n = 72, k = 200, upRow = n + 5;
    for (Elem b : { Elem::F32, Elem::F16, Elem::BF16 }) {
        if (b == Elem::BF16 && !mgr().capabilities().bfloat16) {
            continue;
        }
        for (bool norm : { false, true }) {
            SCOPED_TRACE(std::string(elemName(b)) + (norm ? " normA" : ""));
            std::vector<float> bStored, gStored;
            std::vector<float> x = randomValues(k, 51, -2.0f, 2.0f);
            auto at = mgr().tensor(x);
            auto bt = makeOperand(mgr(), b, randomValues(size_t(upRow + n) * k, 52), bStored);
            auto gt = makeOperand(mgr(), Elem::F32, randomValues(k, 53, 0.5f, 1.5f), gStored);
            auto ct = mgr().tensor(std::vector<float>(n, 0.0f));
            auto p = shape(1, n, k, false, true);
            p.alpha = 0.75f;
            p.swigluC = true;
            p.upRowB = upRow;
            p.normA = norm;
            std::vector<std::shared_ptr<kp::Memory>> tensors{ at, bt, ct };
            if (norm) {
                tensors.push_back(gt);
            }
            auto op = std::make_shared<kp::OpMatMul>(tensors, p);
            EXPECT_EQ(op->path(), "matvec");
            EXPECT_EQ(op->algorithms().size(), 1u);
            mgr().sequence()->record<kp::OpSyncDevice>({ at, bt, gt })->record(op)->record<kp::OpSyncLocal>({ ct })->eval();
            double scale = norm ? inverseRms(x, p.normEps) : 1.0;
            auto c = ct->vector();
            for (uint32_t j = 0; j < n; ++j) {
                double g = 0, u = 0, magnitude = 0;
                for (uint32_t kk = 0; kk < k; ++kk) {
                    double xk = x[kk] * scale * (norm ? gStored[kk] : 1.0f) * p.alpha;
                    g += xk * bStored[size_t(j) * k + kk];
                    u += xk * bStored[size_t(upRow + j) * k + kk];
                    magnitude += std::fabs(xk * bStored[size_t(j) * k + kk]) + std::fabs(xk * bStored[size_t(upRow + j) * k + kk]);
                }
                double ref = g / (1 + std::exp(-g)) * u;
                EXPECT_NEAR(c[j], ref, 1e-5 * magnitude * (std::fabs(g) + std::fabs(u) + 1) + 1e-6) << "output " << j;
            }
        }
    }
}

// MatMulParams::swigluC: C = silu(gate) * up of the products over B's gate
// rows and its up rows (from upRowB), on every GEMM path the device has:
// the tiled kernel (tiles with 4 columns a thread, and on GPUs with 8 where
// the product fills the device), the cooperative matrices where present
// (both forms, f32 A rounded to f16, Q8_0/Q4_0 as words and grouped); every
// operand type, m = 1 (no mat-vec), partial tiles, batches, a gap between
// the gate's rows and the up's; then the refusals.
TEST_F(MatMul, SwigluOutputOnEveryGemmPath)
{
    const kp::DeviceCapabilities& caps = mgr().capabilities();
    const auto& cm = caps.cooperativeMatrix;
    // ("matvec-glu" off: m = 1 takes the GEMM kernels, not the mat-vec.)
    std::vector<std::pair<const char*, const char*>> paths = { { "coopmat,matvec-glu", "tiled" } };
    if (cm.khr) {
        paths.push_back({ "matvec-glu", "coopmat-khr" });
    }
    if (cm.nv) {
        paths.push_back({ "coopmat-khr,matvec-glu", "coopmat-nv" });
    }
    struct Case
    {
        uint32_t m, n, k, batch, gap, ldbPad;
        Elem a, b, c;
    };
    std::vector<Case> cases = {
        { 1, 24, 64, 1, 0, 0, Elem::F32, Elem::F16, Elem::F32 },
        { 33, 70, 128, 2, 3, 0, Elem::F16, Elem::Q4_0, Elem::F16 },
        { 130, 136, 64, 1, 0, 64, Elem::F32, Elem::Q8_0, Elem::F32 },
        { 20, 40, 256, 1, 8, 0, Elem::F16, Elem::Q4_0X8, Elem::F32 },
        { 9, 17, 40, 1, 1, 8, Elem::F16, Elem::F32, Elem::F16 },
    };
    if (caps.deviceType != vk::PhysicalDeviceType::eCpu) {
        // 4 x 66 tiles of 128 x 128: the tiled kernel's 8 columns a thread
        // on GPUs of up to 132 multiprocessors (chooseTiled).
        cases.push_back({ 512, 8448, 32, 1, 0, 0, Elem::F16, Elem::F16, Elem::F32 });
    }
    for (const auto& [disabled, path] : paths) {
        DisablePaths off(disabled);
        for (size_t i = 0; i < cases.size(); ++i) {
            const Case& c = cases[i];
            if (c.m == 512 && std::string(path) != "tiled") {
                continue;
            }
            GemmCase gc{ shape(c.m, c.n, c.k, false, true), c.a, c.b, c.c };
            gc.p.swigluC = true;
            gc.p.upRowB = c.n + c.gap;
            gc.p.ldb = c.ldbPad ? c.k + c.ldbPad : 0;
            gc.p.batch = c.batch;
            gc.p.alpha = i % 2 ? 0.75f : 1.0f;
            gc.seed = uint32_t(40 + i);
            std::shared_ptr<kp::OpMatMul> op;
            EXPECT_EQ(runGemmCase(mgr(), gc, &op), path) << "case " << i;
            // One dispatch; its grid covers n in tiles of half the B rows each reads.
            EXPECT_EQ(op->algorithms().size(), 1u);
        }
    }
    auto f32 = [&](uint32_t n) { return mgr().tensor(std::vector<float>(n, 1.0f)); };
    auto a = f32(4 * 64), b = f32(10 * 64), c = f32(4 * 5);
    auto p = shape(4, 5, 64, false, true);
    p.swigluC = true;
    p.upRowB = 5;
    EXPECT_NO_THROW(kp::OpMatMul(a, b, c, p));
    auto early = p;
    early.upRowB = 4;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(a, b, c, early); }, { "upRowB = 4", "after the gate's n = 5 rows" }));
    auto far = p;
    far.upRowB = 6;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(a, b, c, far); }, { "B holds 640 elements" }));
    auto beta = p;
    beta.beta = 1.0f;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(a, b, c, beta); }, { "swigluC multiplies", "beta 0" }));
    auto untransposed = p;
    untransposed.transB = false;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(a, b, c, untransposed); }, { "swigluC multiplies", "transposed B" }));
    DisablePaths off("gemm-swiglu");
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(a, b, c, p); }, { "swigluC is turned off", "gemm-swiglu" }));
}

// A one-row product with normA: x from element 8, the norm's weights (type
// g) from element 5 for k = 256 (scalar loads), else 8 (4-wide loads);
// `residual`: eps 0.5 and alpha 0.5, beta 1 (a residual added to), else eps
// 1e-5.
GemmCase
normCase(uint32_t n, uint32_t k, Elem a, Elem b, Elem g, bool residual, uint32_t seed)
{
    GemmCase gc{ shape(1, n, k, false, true), a, b, Elem::F32 };
    gc.p.normA = true;
    gc.p.normOffset = k == 256 ? 5 : 8;
    gc.p.normEps = residual ? 0.5f : 1e-5f;
    gc.p.offsetA = 8;
    if (residual) {
        gc.p.alpha = 0.5f;
        gc.p.beta = 1.0f;
    }
    gc.normType = g;
    gc.seed = seed;
    return gc;
}

// MatMulParams::normA: the row of A RMS-normalized as the mat-vec reads it
// (an LLM's RMSNorm inside the product), against the norm computed on the
// host. The row mode of float weights (f32, f16, bf16; k = 300 leaves a
// tail of elements after the 16-byte units) and of Q8_0/Q4_0 rows not
// staged, in the float build and the int-dot one ("matvec-qx,staged"):
// f32 and f16 x, f32 and f16 norm weights from an odd offset and from a
// multiple of 4, alpha and beta (a residual added to). The int-dot
// mat-vec's quantized-x mode: every block type of the mode, f32 and f16 x,
// f32/f16/bf16 norm weights at those offsets, k of one group of blocks, of
// several, and (on CPUs, whose chunks of x are 64 blocks) of two chunks,
// rows off the tile, alpha and beta. Then what is refused, naming why.
TEST_F(MatMul, NormInputInTheMatVec)
{
    // (the paths to turn off, the weights, the path taken)
    struct RowMode
    {
        const char* disabled;
        Elem b;
        const char* path;
    };
    bool intDot = mgr().capabilities().integerDotProduct.supported;
    for (const RowMode& mode : std::vector<RowMode>{ { "", Elem::F32, "matvec" },
                                                     { "", Elem::F16, "matvec" },
                                                     { "", Elem::BF16, "matvec" },
                                                     { "int-dot,staged", Elem::Q8_0, "matvec" },
                                                     { "int-dot,staged", Elem::Q4_0, "matvec" },
                                                     { "matvec-float,matvec-qx,staged", Elem::Q8_0, "matvec-int-dot" },
                                                     { "matvec-float,matvec-qx,staged", Elem::Q4_0, "matvec-int-dot" } }) {
        if (std::string(mode.path) == "matvec-int-dot" && !intDot) {
            continue;
        }
        SCOPED_TRACE(mode.disabled);
        DisablePaths disable(mode.disabled);
        for (Elem a : { Elem::F32, Elem::F16 }) {
            for (const auto& s : std::vector<std::array<uint32_t, 3>>{ { 1, 37, 256 }, { 1, 21, 300 } }) {
                if (isQuant(mode.b) && s[2] % 32 != 0) {
                    continue;
                }
                Elem g = a == Elem::F16 ? Elem::F16 : Elem::F32;
                GemmCase gc = normCase(s[1], s[2], a, mode.b, g, s[2] == 300, s[1] + s[2] + static_cast<uint32_t>(a));
                EXPECT_EQ(runGemmCase(mgr(), gc), mode.path);
            }
        }
    }
    if (!intDot) {
        GTEST_SKIP() << "'" << mgr().capabilities().deviceName
                     << "' has no integer dot products: the quantized-x mode and the refusals untested";
    }
    {
        DisablePaths disable("matvec-float");
        for (Elem b : { Elem::Q8_0, Elem::Q4_0, Elem::Q4_K, Elem::Q5_K, Elem::Q8_0X8, Elem::Q4_0X8 }) {
            for (Elem a : { Elem::F32, Elem::F16 }) {
                for (Elem g : { Elem::F32, Elem::F16, Elem::BF16 }) {
                    if (g == Elem::BF16 && a == Elem::F16) {
                        continue;
                    }
                    for (const auto& s : std::vector<std::array<uint32_t, 3>>{
                           { 1, 37, 256 }, { 1, 300, 768 }, { 1, 45, 2304 } }) {
                        GemmCase gc =
                          normCase(s[1], s[2], a, b, g, s[2] == 768, s[1] + s[2] + static_cast<uint32_t>(g));
                        EXPECT_EQ(runGemmCase(mgr(), gc), "matvec-int-dot");
                    }
                }
            }
        }
    }
    auto floats = [&](uint32_t n) { return mgr().tensor(std::vector<float>(n, 1.0f)); };
    auto blocks = [&](uint32_t n, uint32_t k) {
        auto bytes = kp::quantize(kp::WeightFormat::eQ8_0, std::vector<float>(size_t(n) * k, 0.5f).data(), size_t(n) * k);
        return mgr().tensor(bytes.data(), static_cast<uint32_t>(bytes.size()), 1, DataTypes::eUnsignedChar);
    };
    auto x = floats(2 * 256), c = floats(8), norm = floats(256);
    auto w = blocks(8, 256);
    auto p = shape(1, 8, 256, false, true);
    p.formatB = kp::WeightFormat::eQ8_0;
    p.normA = true;
    using Tensors = std::vector<std::shared_ptr<kp::Memory>>;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c }, p); }, { "needs 4 tensors {A, B, C, normWeights}" }));
    auto two = p;
    two.m = 2;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, floats(16), norm }, two); },
                           { "normA normalizes the one row of A of a mat-vec", "m = 2" }));
    auto shifted = p;
    shifted.normOffset = 1;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, norm }, shifted); }, { "normWeights" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, c }, p); }, { "the norm's weights must not be C" }));
    auto badEps = p;
    badEps.normEps = -1.0f;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, norm }, badEps); }, { "normEps must be finite" }));
    auto columns = p;
    columns.formatB = kp::WeightFormat::eNone;
    columns.transB = false;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, floats(8 * 256), c, norm }, columns); },
                           { "normA needs a mat-vec mode that reads the whole row of A", "B is not transposed" }));
    {
        DisablePaths off("matvec-norm,matvec-float");
        EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, norm }, p); }, { "KOMPUTE_ENV_DISABLE has matvec-norm" }));
    }
    {
        DisablePaths off("matvec-qx,matvec-float");
        EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, norm }, p); },
                               { "normA needs a mat-vec mode that reads the whole row of A", "staged" }));
    }
    {
        DisablePaths off("matvec-float,int-dot");
        auto q6 = p;
        q6.formatB = kp::WeightFormat::eQ6_K;
        auto q6Blocks = mgr().tensor(std::vector<uint8_t>(8 * 210, 0).data(), 8 * 210, 1, DataTypes::eUnsignedChar);
        EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, q6Blocks, c, norm }, q6); },
                               { "normA needs a mat-vec mode that reads the whole row of A", "q6_k rows take the block row mode" }));
    }
    DisablePaths off("matvec");
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, norm }, p); }, { "normA needs the mat-vec" }));
}

// MatMulParams::ropeC: OpRoPECache's work as the mat-vec writes its row,
// against OpMatMul then OpRoPECache on the same operands (each checked
// against the host by its own tests): C and both caches whole (the rows the
// token does not write keep their sentinel). Every mat-vec mode that takes
// B transposed (float rows, staged, the K-quants' unit rows, the int-dot
// build's plain and quantized-x modes, grouped rows); with and without
// normA, freqFactors, the bias, partial rotary dimensions, f32 and f16
// caches, and a position past the caches (nothing written there). Then
// what is refused, naming why.
TEST_F(MatMul, RopeAndCacheWriteOnTheMatVecRow)
{
    const auto& caps = mgr().capabilities();
    bool intDot = caps.integerDotProduct.supported;
    bool shuffles = bool(caps.subgroup.operations & vk::SubgroupFeatureFlagBits::eShuffle);
    using Tensors = std::vector<std::shared_ptr<kp::Memory>>;
    const uint32_t heads = 4, kvHeads = 2, headDim = 16, k = 512;
    const uint32_t n = (heads + 2 * kvHeads) * headDim, cacheStride = 40, cacheOffset = 3, capacity = 10;
    const uint32_t cacheSize = cacheOffset + (capacity - 1) * cacheStride + kvHeads * headDim;
    struct Variant
    {
        bool norm, factors, bias;
        Elem cache;
        uint32_t ropeDims, position;
    };
    const std::vector<Variant> variants = { { false, false, false, Elem::F16, 0, 7 },
                                            { true, true, true, Elem::F32, 12, 7 },
                                            { true, false, true, Elem::F16, 0, capacity + 2 } };
    auto x = mgr().tensor(randomValues(k, 31, -2.0f, 2.0f));
    auto norm = mgr().tensor(randomValues(k, 32, 0.5f, 1.5f));
    auto factors = mgr().tensor(randomValues(headDim / 2, 33, 1.0f, 4.0f));
    auto bias = mgr().tensor(randomValues(n, 34));
    // (The paths turned off, and a quantized-x configuration: on lavapipe,
    // whose subgroups are 8 wide, the default's 8 threads a row meet their
    // pair through shared memory, and 4 a row (16 rows of 64 threads) in a
    // subgroup shuffle, in the interleaved loop, a group a thread, and the
    // staged loads.)
    struct Mode
    {
        const char* disabled;
        const char* qx;
    };
    uint32_t cases = 0;
    for (const Mode& mode : std::vector<Mode>{ { "", "" },
                                               { "staged", "" },
                                               { "matvec-float", "" },
                                               { "matvec-float", "64:16:2:1:0:4" },
                                               { "matvec-float", "64:16:1:0:1" },
                                               { "matvec-float,matvec-qx", "" } }) {
        if (std::string(mode.disabled).rfind("matvec-float", 0) == 0 && !intDot) {
            continue;
        }
        SCOPED_TRACE(std::string(*mode.disabled ? mode.disabled : "default") + " " + mode.qx);
        DisablePaths disable(mode.disabled);
        ScopedEnv tuning("KOMPUTE_ENV_MATVEC_QX", *mode.qx ? mode.qx : nullptr);
        for (Elem b : { Elem::F32, Elem::F16, Elem::Q8_0, Elem::Q4_0, Elem::Q4_0X8, Elem::Q4_K }) {
            // (Float rows take the same mode whatever of these is off.)
            bool floatRows = b == Elem::F32 || b == Elem::F16;
            if ((*mode.qx && b != Elem::Q8_0 && b != Elem::Q4_0X8) || (floatRows && *mode.disabled)) {
                continue;
            }
            std::vector<float> wStored;
            auto w = makeOperand(mgr(), b, randomValues(size_t(n) * k, 35), wStored);
            for (const Variant& v : variants) {
                SCOPED_TRACE(std::string(elemName(b)) + " norm " + std::to_string(v.norm) + " factors " +
                             std::to_string(v.factors) + " bias " + std::to_string(v.bias) + " position " +
                             std::to_string(v.position));
                auto positions = mgr().tensorT<uint32_t>({ 1, v.position });
                auto p = shape(1, n, k, false, true);
                p.formatB = weightFormat(b);
                p.normA = v.norm;
                p.normEps = 1e-3f;
                kp::RoPECacheParams r;
                r.heads = heads;
                r.kvHeads = kvHeads;
                r.headDim = headDim;
                r.ropeDims = v.ropeDims;
                r.theta = 500.0f;
                r.freqScale = 0.75f;
                r.hasFreqFactors = v.factors;
                r.hasBias = v.bias;
                r.cacheRowStride = cacheStride;
                r.cacheOffset = cacheOffset;
                r.positionsOffset = 1;
                Tensors extra;
                if (v.factors) {
                    extra.push_back(factors);
                }
                if (v.bias) {
                    extra.push_back(bias);
                }
                auto cacheOf = [&] {
                    std::vector<float> stored;
                    return makeOperand(mgr(), v.cache, std::vector<float>(cacheSize, 100.0f), stored);
                };
                // Apart: the product, then OpRoPECache on its row.
                auto cApart = mgr().tensor(std::vector<float>(n, 0.0f));
                auto keysApart = cacheOf(), valuesApart = cacheOf();
                Tensors productTensors{ x, w, cApart };
                if (v.norm) {
                    productTensors.push_back(norm);
                }
                std::shared_ptr<kp::OpMatMul> product;
                try {
                    product = std::make_shared<kp::OpMatMul>(productTensors, p);
                } catch (const kp::Error& e) {
                    // normA where the mode reads x in parts (the K-quants' unit rows).
                    ASSERT_TRUE(v.norm) << e.what();
                    continue;
                }
                Tensors ropeTensors{ cApart, positions, keysApart, valuesApart };
                ropeTensors.insert(ropeTensors.end(), extra.begin(), extra.end());
                auto rope = std::make_shared<kp::OpRoPECache>(ropeTensors, r);
                // Together.
                auto c = mgr().tensor(std::vector<float>(n, 0.0f));
                auto keys = cacheOf(), values = cacheOf();
                auto together = p;
                together.ropeC = true;
                together.rope = r;
                Tensors tensors{ x, w, c };
                if (v.norm) {
                    tensors.push_back(norm);
                }
                tensors.insert(tensors.end(), { positions, keys, values });
                tensors.insert(tensors.end(), extra.begin(), extra.end());
                if (!shuffles) {
                    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(tensors, together); }, { "ropeC needs subgroup shuffles" }));
                    continue;
                }
                auto fused = std::make_shared<kp::OpMatMul>(tensors, together);
                EXPECT_EQ(fused->path(), product->path());
                EXPECT_EQ(fused->algorithms().size(), 1u);
                mgr()
                  .sequence()
                  ->record<kp::OpSyncDevice>({ x, w, norm, factors, bias, positions, keysApart, valuesApart, keys,
                                               values })
                  ->record(product)
                  ->record(rope)
                  ->record(fused)
                  ->record<kp::OpSyncLocal>({ cApart, keysApart, valuesApart, c, keys, values })
                  ->eval();
                auto expectClose = [&](const std::shared_ptr<kp::Memory>& got, const std::shared_ptr<kp::Memory>& want,
                                       double relative, const char* what) {
                    std::vector<float> g = floatsOf(*got), e = floatsOf(*want);
                    ASSERT_EQ(g.size(), e.size());
                    double largest = 0;
                    for (float value : e) {
                        largest = std::max(largest, double(std::fabs(value)));
                    }
                    for (size_t i = 0; i < g.size(); ++i) {
                        ASSERT_NEAR(g[i], e[i], relative * largest + 1e-6) << what << " element " << i;
                    }
                };
                expectClose(c, cApart, 1e-5, "C");
                double cacheTolerance = v.cache == Elem::F16 ? 2e-3 : 1e-5;
                expectClose(keys, keysApart, cacheTolerance, "keyCache");
                expectClose(values, valuesApart, cacheTolerance, "valueCache");
                if (v.position >= capacity) {
                    for (float value : floatsOf(*keys)) {
                        ASSERT_EQ(value, 100.0f) << "a key written past the cache";
                    }
                }
                ++cases;
            }
        }
    }
    if (!shuffles) {
        GTEST_SKIP() << "'" << caps.deviceName << "' has no subgroup shuffles: ropeC refused";
    }
    EXPECT_GT(cases, 30u);

    // Refused, naming why.
    auto p = shape(1, n, k, false, true);
    p.ropeC = true;
    p.rope.heads = heads;
    p.rope.kvHeads = kvHeads;
    p.rope.headDim = headDim;
    auto c = mgr().tensor(std::vector<float>(n, 0.0f));
    auto w = mgr().tensor(std::vector<float>(size_t(n) * k, 0.5f));
    auto positions = mgr().tensorT<uint32_t>({ 3 });
    auto keys = mgr().tensor(std::vector<float>(cacheSize, 0.0f));
    auto values = mgr().tensor(std::vector<float>(cacheSize, 0.0f));
    Tensors all{ x, w, c, positions, keys, values };
    EXPECT_NO_THROW(kp::OpMatMul(all, p));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c }, p); },
                           { "needs 6 tensors {A, B, C, positions, keyCache, valueCache}" }));
    auto neox = p;
    neox.rope.mode = kp::RoPEMode::eNeoX;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(all, neox); }, { "rope.mode must be RoPEMode::eNormal" }));
    auto rows = p;
    rows.rope.rows = 2;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(all, rows); }, { "ropeC takes rope.rows = 1" }));
    auto beta = p;
    beta.beta = 1.0f;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(all, beta); }, { "ropeC rotates the one row of C of a mat-vec", "beta = 1" }));
    auto wide = p;
    wide.rope.heads = 3;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(all, wide); }, { "is not one row of qkv" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, positions, x, values }, p); },
                           { "the caches must not be A" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, positions, keys, keys }, p); },
                           { "three different tensors" }));
    {
        DisablePaths off("matvec-rope");
        EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(all, p); }, { "KOMPUTE_ENV_DISABLE has matvec-rope" }));
    }
    {
        DisablePaths off("matvec");
        EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(all, p); }, { "ropeC needs the mat-vec" }));
    }
}

// MatMulParams::attentionC: the decode attention of the row in the query/
// key/value mat-vec's own dispatch, against the host's attention over what
// the dispatch leaves (C's rotated queries and the caches, read back):
// every query head's output, f32 and f16 outputs, a context of one
// position, of several chunks of the workgroup's positions, and past the
// caches (clamped to their rows); the float row mode (f16 weights) and
// the int-dot build's modes (Q8_0, grouped Q4_0, and a small grid whose
// workgroups each take several tiles); groups of 4, 3 and 1 query heads per
// KV head. Then what is refused, naming why.
TEST_F(MatMul, AttentionInsideTheQkvMatVec)
{
    const auto& caps = mgr().capabilities();
    bool intDot = caps.integerDotProduct.supported;
    if (!(caps.subgroup.operations & vk::SubgroupFeatureFlagBits::eShuffle)) {
        GTEST_SKIP() << "'" << caps.deviceName << "' has no subgroup shuffles: ropeC refused";
    }
    using Tensors = std::vector<std::shared_ptr<kp::Memory>>;
    const uint32_t headDim = 64, k = 256, cacheOffset = 8, capacity = 300, outOffset = 4;
    auto x = mgr().tensor(randomValues(k, 41, -2.0f, 2.0f));
    auto norm = mgr().tensor(randomValues(k, 42, 0.5f, 1.5f));
    // The qkv row, the caches and the rotation of `heads` query heads over
    // `kvHeads` KV heads.
    struct Layout
    {
        uint32_t heads, kvHeads, n, cacheStride, cacheSize;
        kp::RoPECacheParams rope;
    };
    auto layout = [&](uint32_t heads, uint32_t kvHeads) {
        Layout l{ heads, kvHeads, (heads + 2 * kvHeads) * headDim, kvHeads * headDim + 8, 0, {} };
        l.cacheSize = cacheOffset + capacity * l.cacheStride;
        l.rope.heads = heads;
        l.rope.kvHeads = kvHeads;
        l.rope.headDim = headDim;
        l.rope.theta = 10000.0f;
        l.rope.cacheRowStride = l.cacheStride;
        l.rope.cacheOffset = cacheOffset;
        l.rope.positionsOffset = 1;
        return l;
    };
    auto params = [&](const Layout& l, Elem b, bool withNorm) {
        auto p = shape(1, l.n, k, false, true);
        p.formatB = weightFormat(b);
        p.normA = withNorm;
        p.ropeC = true;
        p.rope = l.rope;
        p.attentionC = true;
        p.attentionOffset = outOffset;
        return p;
    };
    struct Mode
    {
        const char* disabled;
        const char* qx;
    };
    // Each case of modes x types x positions x {f32, f16 output}: the
    // attention of every query head against the host's, counted in cases
    // (a lambda of ASSERTs returns nothing).
    uint32_t cases = 0;
    auto check = [&](const Layout& l, const std::vector<Mode>& modes, const std::vector<Elem>& types,
                     const std::vector<uint32_t>& at) {
        const uint32_t heads = l.heads, n = l.n, cacheStride = l.cacheStride;
        const uint32_t cacheSize = l.cacheSize;
        for (const Mode& mode : modes) {
            if (std::string(mode.disabled) == "matvec-float" && !intDot) {
                continue;
            }
            SCOPED_TRACE(std::string(*mode.disabled ? mode.disabled : "default") + " " + mode.qx);
            DisablePaths disable(mode.disabled);
            ScopedEnv tuning("KOMPUTE_ENV_MATVEC_QX", *mode.qx ? mode.qx : nullptr);
            for (Elem b : types) {
                if ((*mode.disabled && b == Elem::F16) || (*mode.qx && b == Elem::F16)) {
                    continue; // (f16 rows take the float row mode whatever is off)
                }
                std::vector<float> wStored;
                auto w = makeOperand(mgr(), b, randomValues(size_t(n) * k, 43), wStored);
                for (uint32_t position : at) {
                    for (bool halfOut : { false, true }) {
                        SCOPED_TRACE(std::string(elemName(b)) + " position " + std::to_string(position) +
                                     (halfOut ? " f16 output" : " f32 output"));
                        auto positions = mgr().tensorT<uint32_t>({ 1, position });
                        auto c = mgr().tensor(std::vector<float>(n, 0.0f));
                        std::vector<float> stored;
                        auto keys = makeOperand(mgr(), Elem::F16, randomValues(cacheSize, 44 + position), stored);
                        auto values = makeOperand(mgr(), Elem::F16, randomValues(cacheSize, 45 + position), stored);
                        std::vector<float> sentinel(outOffset + heads * headDim + 3, 7.0f);
                        auto attended = halfOut ? makeOperand(mgr(), Elem::F16, sentinel, stored) : mgr().tensor(sentinel);
                        // (With the norm inside, as the LLM runner records it,
                        // except where lavapipe stages Q8_0/Q4_0 rows, a mode
                        // that does not take it.)
                        bool withNorm = b == Elem::F16 || *mode.disabled;
                        Tensors tensors{ x, w, c };
                        if (withNorm) {
                            tensors.push_back(norm);
                        }
                        tensors.insert(tensors.end(), { positions, keys, values, attended });
                        auto op = std::make_shared<kp::OpMatMul>(tensors, params(l, b, withNorm));
                        EXPECT_EQ(op->algorithms().size(), 1u);
                        mgr()
                          .sequence()
                          ->record<kp::OpSyncDevice>({ x, w, norm, positions, keys, values, attended })
                          ->record(op)
                          ->record<kp::OpSyncLocal>({ c, keys, values, attended })
                          ->eval();
                        std::vector<float> q = floatsOf(*c), kc = floatsOf(*keys), vc = floatsOf(*values);
                        std::vector<float> got = floatsOf(*attended);
                        // The host's attention over what the dispatch left.
                        kp::AttentionParams a;
                        a.rows = 1;
                        a.heads = heads;
                        a.kvHeads = l.kvHeads;
                        a.headDim = headDim;
                        a.kvRowStride = cacheStride;
                        a.kvOffset = cacheOffset;
                        a.kvCapacity = capacity;
                        std::vector<float> want = hostAttention(q, kc, vc, { position }, a);
                        double largest = 0;
                        for (float v : want) {
                            largest = std::max(largest, double(std::fabs(v)));
                        }
                        double tolerance = (halfOut ? 2e-3 : 2e-4) * largest + 1e-6;
                        for (uint32_t i = 0; i < heads * headDim; ++i) {
                            ASSERT_NEAR(got[outOffset + i], want[i], tolerance) << "output " << i;
                        }
                        for (uint32_t i = 0; i < outOffset; ++i) {
                            ASSERT_EQ(got[i], 7.0f) << "written before attentionOffset";
                        }
                        ASSERT_EQ(got[outOffset + heads * headDim], 7.0f) << "written past the output";
                        ++cases;
                    }
                }
            }
        }
    };
    check(layout(8, 2), { { "", "" }, { "matvec-float", "" }, { "matvec-float", "64:16:1:1:0:4" } },
          { Elem::F16, Elem::Q8_0, Elem::Q4_0X8 }, { 0u, 37u, 299u, 310u });
    EXPECT_GE(cases, 24u);
    // Groups that the tail attends in batches of heads it does not fill
    // (ATTN_AT_ONCE, 2): 3 query heads per KV head (batches of 2 and 1),
    // and 1 (multi-head attention).
    for (auto [heads, kvHeads] : { std::pair{ 6u, 2u }, { 2u, 2u } }) {
        SCOPED_TRACE(std::to_string(heads) + " heads over " + std::to_string(kvHeads));
        cases = 0;
        check(layout(heads, kvHeads), { { "", "" } }, { Elem::F16 }, { 37u, 299u });
        EXPECT_EQ(cases, 4u);
    }

    // Refused, naming why.
    const Layout l = layout(8, 2);
    const uint32_t heads = l.heads, kvHeads = l.kvHeads, n = l.n, cacheSize = l.cacheSize;
    auto p = params(l, Elem::F32, true);
    auto w = mgr().tensor(std::vector<float>(size_t(n) * k, 0.5f));
    auto c = mgr().tensor(std::vector<float>(n, 0.0f));
    auto positions = mgr().tensorT<uint32_t>({ 1, 3 });
    std::vector<float> stored;
    auto keys = makeOperand(mgr(), Elem::F16, std::vector<float>(cacheSize, 0.0f), stored);
    auto values = makeOperand(mgr(), Elem::F16, std::vector<float>(cacheSize, 0.0f), stored);
    auto attended = mgr().tensor(std::vector<float>(outOffset + heads * headDim, 0.0f));
    Tensors all{ x, w, c, norm, positions, keys, values, attended };
    EXPECT_NO_THROW(kp::OpMatMul(all, p));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, norm, positions, keys, values }, p); },
                           { "needs 8 tensors", "attended" }));
    auto noRope = p;
    noRope.ropeC = false;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, norm }, noRope); }, { "it needs ropeC" }));
    auto f32Keys = mgr().tensor(std::vector<float>(cacheSize, 0.0f));
    auto f32Values = mgr().tensor(std::vector<float>(cacheSize, 0.0f));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, norm, positions, f32Keys, f32Values, attended }, p); },
                           { "attentionC reads f16 caches" }));
    auto odd = p;
    odd.rope.cacheOffset = 3;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(all, odd); }, { "offset (3) and row stride", "multiples of 8" }));
    auto many = p; // (10 query heads, one KV head: the same row of 12 heads)
    many.rope.heads = 10;
    many.rope.kvHeads = 1;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(all, many); }, { "at most 8 query heads per KV head" }));
    auto wideHeads = p;
    wideHeads.rope.headDim = 12;
    wideHeads.n = (heads + 2 * kvHeads) * 12;
    auto wWide = mgr().tensor(std::vector<float>(size_t(wideHeads.n) * k, 0.5f));
    auto cWide = mgr().tensor(std::vector<float>(wideHeads.n, 0.0f));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, wWide, cWide, norm, positions, keys, values, attended }, wideHeads); },
                           { "headDim a multiple of 8 of at most 128", "not 12" }));
    auto nan = p;
    nan.attentionScale = std::nanf("");
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(all, nan); }, { "attentionScale must be finite" }));
    auto small = mgr().tensor(std::vector<float>(heads * headDim, 0.0f));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, norm, positions, keys, values, small }, p); },
                           { "attended", "attentionOffset" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, norm, positions, keys, values, c }, p); },
                           { "the attention's output must be a tensor of its own" }));
    auto ints = mgr().tensorT<uint32_t>(std::vector<uint32_t>(outOffset + heads * headDim, 0));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, norm, positions, keys, values, ints }, p); },
                           { "attended", "eUnsignedInt" }));
    auto chained = p;
    chained.chained = true;
    auto chain = mgr().tensorT<uint32_t>(std::vector<uint32_t>(8, 0));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, norm, positions, keys, values, attended, chain }, chained); },
                           { "chained does not take attentionC" }));
    {
        DisablePaths off("matvec-attention");
        EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(all, p); }, { "KOMPUTE_ENV_DISABLE has matvec-attention" }));
    }
    {
        DisablePaths off("matvec");
        auto plain = params(l, Elem::F32, false);
        EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(Tensors{ x, w, c, positions, keys, values, attended }, plain); },
                               { "ropeC with attentionC needs the mat-vec" }));
    }
}

// --- Bad input: clear errors before anything is recorded ----------------------

TEST_F(MatMul, RejectsBadInputWithClearErrors)
{
    auto f32 = [&](uint32_t n) { return mgr().tensor(std::vector<float>(n, 1.0f)); };
    auto a = f32(6 * 4), b = f32(4 * 5), c = f32(6 * 5);
    auto p = shape(6, 5, 4);
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(a, b, f32(29), p); }, { "OpMatMul", "C holds 29 elements", "address 30" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(f32(23), b, c, p); }, { "A holds 23 elements" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(a, b, c, shape(6, 5, 0)); }, { "at least 1" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(a, b, a, p); }, { "C must be a tensor of its own" }));
    auto lda = p;
    lda.lda = 3;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(a, b, c, lda); }, { "leading dimension of A is 3" }));
    auto strided = p;
    strided.batch = 2;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(a, b, c, strided); }, { "A holds 24 elements", "address 48" }));
    strided.strideA = 10;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(a, b, c, strided); }, { "batch stride of A", "overlap" }));
    auto ints = mgr().tensorT<uint32_t>(std::vector<uint32_t>(30, 1));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(a, b, ints, p); }, { "C holds eUnsignedInt elements" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(std::vector<std::shared_ptr<kp::Memory>>{ a, b }, p); },
                           { "OpMatMul: needs 3 tensors {A, B, C}, 2 given" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(nullptr, b, c, p); }, { "tensor 'A' (operand 0) is null" }));
    kp::Manager other;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(a, other.tensor(std::vector<float>(20, 1.0f)), c, p); },
                           { "tensor 'B' belongs to another Manager" }));
}

// MatMulParams::chained: three dependent mat-vecs (y = W1 x, z = W2 y, y
// += W3 z) ordered by their shaders give the host's results, with no
// barrier between them where each waits for the one before it (one before
// the first, which waits for nothing); the chain's buffer holds each
// slot's workgroups and its done word, and nothing gave up. Bad chains are
// clear errors: the chain's buffer, the slot to wait for, a product that
// is not a mat-vec, a wait for a slot the operation before does not
// signal. The synchronization validation cannot see the shaders' ordering
// (it reports the chained reads after writes as hazards): the test runs in
// CTest's test_kernels_matmul_chain, with the layer's core checks and
// without it (KOMPUTE_TEST_SYNC_VALIDATION=0), and skips itself elsewhere.
TEST_F(MatMul, ChainedMatVecsOrderThemselves)
{
    if (syncValidation()) {
        GTEST_SKIP() << "runs without the synchronization validation (test_kernels_matmul_chain)";
    }
    kp::Manager* manager = &mgr();
    const uint32_t n = 96;
    std::mt19937 engine(5);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    auto values = [&](size_t count) {
        std::vector<float> v(count);
        for (float& e : v) {
            e = uniform(engine);
        }
        return v;
    };
    std::vector<float> w1 = values(n * n), w2 = values(n * n), w3 = values(n * n), x = values(n);
    auto product = [&](const std::vector<float>& w, const std::vector<float>& v) {
        std::vector<float> out(n, 0.0f);
        for (uint32_t r = 0; r < n; ++r) {
            double sum = 0;
            for (uint32_t k = 0; k < n; ++k) {
                sum += double(w[size_t(r) * n + k]) * v[k];
            }
            out[r] = float(sum);
        }
        return out;
    };
    std::vector<float> y = product(w1, x), z = product(w2, y), expected = product(w3, z);
    for (uint32_t i = 0; i < n; ++i) {
        expected[i] += y[i];
    }
    for (bool chained : { false, true }) {
        SCOPED_TRACE(chained ? "chained" : "barriers");
        auto tx = manager->tensor(x), ty = manager->tensor(std::vector<float>(n, 0.0f)),
             tz = manager->tensor(std::vector<float>(n, 0.0f));
        auto t1 = manager->tensor(w1), t2 = manager->tensor(w2), t3 = manager->tensor(w3);
        auto chain = manager->tensorT<uint32_t>(std::vector<uint32_t>(2 + 2 * 3, 0));
        auto params = [&](uint32_t slot, float beta) {
            kp::MatMulParams p = shape(1, n, n, false, true);
            p.beta = beta;
            p.chained = chained;
            p.chainSlot = slot;
            p.chainWaits = chained && slot > 0;
            return p;
        };
        auto tensors = [&](std::vector<std::shared_ptr<kp::Memory>> list) {
            if (chained) {
                list.push_back(chain);
            }
            return list;
        };
        auto first = std::make_shared<kp::OpMatMul>(tensors({ tx, t1, ty }), params(0, 0.0f));
        auto second = std::make_shared<kp::OpMatMul>(tensors({ ty, t2, tz }), params(1, 0.0f));
        auto third = std::make_shared<kp::OpMatMul>(tensors({ tz, t3, ty }), params(2, 1.0f));
        EXPECT_EQ(first->chainSlots(), chained ? 1u : 0u);
        auto seq = manager->sequence();
        seq->record<kp::OpSyncDevice>({ tx, ty, tz, t1, t2, t3, chain });
        uint32_t before = seq->recordedBarrierCount();
        seq->record(first)->record(second)->record(third);
        EXPECT_EQ(seq->recordedBarrierCount() - before, chained ? 1u : 3u);
        seq->record<kp::OpSyncLocal>({ ty, chain })->eval();
        EXPECT_TRUE(near(ty->vector(), expected, 1e-4f)) << "y + W3 W2 W1 x";
        if (chained) {
            std::vector<uint32_t> words = chain->vector();
            EXPECT_EQ(words[0], 0u) << "a wait gave up";
            for (uint32_t slot = 0; slot < 3; ++slot) {
                EXPECT_GE(words[2 + 2 * slot], 1u) << "slot " << slot << " workgroups";
                EXPECT_EQ(words[3 + 2 * slot], 1u) << "slot " << slot << " done";
            }
        }
        EXPECT_EQ(validationErrorCount(), 0u);
    }

    auto a = manager->tensor(values(n)), w = manager->tensor(values(n * n)), c = manager->tensor(values(n));
    auto chain = manager->tensorT<uint32_t>(std::vector<uint32_t>(4, 0));
    kp::MatMulParams p = shape(1, n, n, false, true);
    p.chained = true;
    p.chainSlot = 1; // needs 2 + 2 * 2 words
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul({ a, w, c, chain }, p); }, { "chained", "at least 2 + 2 * (chainSlot + 1) = 6" }));
    auto floats = manager->tensor(std::vector<float>(8, 0.0f));
    p.chainSlot = 0;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul({ a, w, c, floats }, p); }, { "must be eUnsignedInt" }));
    p.chainWaits = true;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul({ a, w, c, chain }, p); }, { "chainSlot must be at least 1" }));
    auto square = manager->tensor(values(n * n));
    kp::MatMulParams gemm = shape(n, n, n);
    gemm.chained = true;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul({ square, w, manager->tensor(values(n * n)), chain }, gemm); },
                           { "chained takes the mat-vec" }));
    // Waiting for a slot the operation before does not signal.
    p.chainWaits = true;
    p.chainSlot = 1;
    auto longer = manager->tensorT<uint32_t>(std::vector<uint32_t>(8, 0));
    auto waiting = std::make_shared<kp::OpMatMul>(std::vector<std::shared_ptr<kp::Memory>>{ a, w, c, longer }, p);
    auto seq = manager->sequence();
    EXPECT_TRUE(throwsWith([&] { seq->record(waiting); }, { "waits for slot 0 of a dispatch chain" }));
}

TEST_F(MatMul, RejectsBadQuantizedWeights)
{
    auto x = mgr().tensor(std::vector<float>(64, 1.0f));
    auto c = mgr().tensor(std::vector<float>(4, 0.0f));
    auto blocks = [&](uint32_t bytes) {
        return mgr().tensor(std::vector<uint8_t>(bytes, 0).data(), bytes, 1, DataTypes::eUnsignedChar);
    };
    auto p = shape(1, 4, 64, false, true);
    p.formatB = kp::WeightFormat::eQ8_0;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, blocks(34 * 8 - 1), c, p); }, { "not whole q8_0 blocks of 34 bytes" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, blocks(34 * 7), c, p); }, { "B holds 224 weights", "address 256" }));
    auto odd = shape(1, 4, 48, false, true);
    odd.formatB = kp::WeightFormat::eQ4_0;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, blocks(18 * 8), c, odd); }, { "k = 48 is not a multiple of 32" }));
    auto notTransposed = p;
    notTransposed.transB = false;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, blocks(34 * 8), c, notTransposed); }, { "set transB" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, mgr().tensor(std::vector<float>(256, 0.0f)), c, p); },
                           { "B must be an eUnsignedChar tensor of GGUF blocks, not eFloat" }));
    auto offset = p;
    offset.offsetB = 16;
    EXPECT_TRUE(throwsWith([&] { kp::OpMatMul(x, blocks(34 * 9), c, offset); }, { "multiples of 32" }));
}

// --- OpGetRows ------------------------------------------------------------------

class GetRows : public KomputeTest
{
};

TEST_F(GetRows, LooksUpRowsOfEveryTableType)
{
    for (Elem type : { Elem::F32, Elem::F16, Elem::BF16, Elem::Q8_0, Elem::Q4_0, Elem::Q8_0X8, Elem::Q4_0X8 }) {
        SCOPED_TRACE(elemName(type));
        const uint32_t tableRows = 11, cols = blockOf(type) == 256 ? 512 : 96;
        std::vector<float> stored;
        auto table = makeOperand(mgr(), type, randomValues(tableRows * cols, 5), stored);
        std::vector<uint32_t> idValues = { 3, 0, 10, 3, 7 };
        auto ids = mgr().tensorT<uint32_t>(idValues);
        auto out = mgr().tensor(std::vector<float>(idValues.size() * cols, -1.0f));
        kp::GetRowsParams p{ static_cast<uint32_t>(idValues.size()), cols, weightFormat(type) };
        mgr().sequence()
          ->record<kp::OpSyncDevice>({ table, ids, out })
          ->record<kp::OpGetRows>({ table, ids, out }, p)
          ->record<kp::OpSyncLocal>({ out })
          ->eval();
        auto values = out->vector();
        for (size_t i = 0; i < idValues.size(); ++i) {
            for (uint32_t col = 0; col < cols; ++col) {
                ASSERT_EQ(values[i * cols + col], stored[idValues[i] * cols + col]) << "row " << i << " col " << col;
            }
        }
    }
}

TEST_F(GetRows, StridesOffsetsAndIdsPastTheTable)
{
    std::vector<float> stored;
    auto table = makeOperand(mgr(), Elem::F16, randomValues(5 + 4 * 10, 6), stored);
    auto ids = mgr().tensorT<uint32_t>({ 9, 2, 1, 4, 1000 });
    auto out = mgr().tensor(std::vector<float>(2 + 4 * 8, -1.0f));
    kp::GetRowsParams p{ 4, 7 };
    p.tableStride = 10;
    p.tableOffset = 5;
    p.idsOffset = 1;
    p.outStride = 8;
    p.outOffset = 2;
    mgr().sequence()
      ->record<kp::OpSyncDevice>({ table, ids, out })
      ->record<kp::OpGetRows>({ table, ids, out }, p)
      ->record<kp::OpSyncLocal>({ out })
      ->eval();
    auto values = out->vector();
    std::vector<uint32_t> used = { 2, 1, 4, 1000 };
    for (uint32_t i = 0; i < 4; ++i) {
        for (uint32_t col = 0; col < 8; ++col) {
            float v = values[2 + i * 8 + col];
            if (col == 7) {
                EXPECT_EQ(v, -1.0f) << "the gap between rows is kept";
            } else if (used[i] >= 4) {
                EXPECT_TRUE(std::isnan(v)) << "an id past the table gives NaN";
            } else {
                EXPECT_EQ(v, stored[5 + used[i] * 10 + col]);
            }
        }
    }
}

TEST_F(GetRows, RejectsBadInput)
{
    auto table = mgr().tensor(std::vector<float>(40, 1.0f));
    auto ids = mgr().tensorT<uint32_t>({ 0, 1 });
    auto out = mgr().tensor(std::vector<float>(20, 0.0f));
    EXPECT_TRUE(throwsWith([&] { kp::OpGetRows(table, ids, out, { 3, 10 }); }, { "ids holds 2 elements" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpGetRows(table, ids, mgr().tensor(std::vector<float>(19, 0.0f)), { 2, 10 }); },
                           { "out holds 19 elements" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpGetRows(table, table, out, { 2, 10 }); }, { "ids must be an eUnsignedInt" }));
    auto bytes = mgr().tensor(std::vector<uint8_t>(35, 0).data(), 35, 1, DataTypes::eUnsignedChar);
    EXPECT_TRUE(throwsWith([&] { kp::OpGetRows(bytes, ids, out, { 1, 32, kp::WeightFormat::eQ8_0 }); },
                           { "not whole q8_0 blocks" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpGetRows(table, ids, out, { 2, 10, kp::WeightFormat::eQ4_0 }); },
                           { "must be an eUnsignedChar tensor of GGUF blocks" }));
}

} // namespace
} // namespace kp_test
