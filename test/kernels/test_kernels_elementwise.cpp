// SPDX-License-Identifier: Apache-2.0
// OpUnary (functions and casts), OpBinary, OpFma, OpSwiGLU against host
// loops, over every float type, sizes around the workgroup size, offsets,
// broadcasting and in-place use; and their argument checks.
#include "KernelTestSupport.hpp"

#include <algorithm>
#include <functional>

namespace kp_test {
namespace {

using kp::UnaryOp;
using kp::BinaryOp;

double
hostUnary(UnaryOp op, double v, double scale)
{
    switch (op) {
        case UnaryOp::eCast: return v;
        case UnaryOp::eScale: return scale * v;
        case UnaryOp::eRelu: return std::max(v, 0.0);
        case UnaryOp::eGelu: return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        case UnaryOp::eSilu: return v / (1.0 + std::exp(-v));
        case UnaryOp::eSigmoid: return 1.0 / (1.0 + std::exp(-v));
        case UnaryOp::eTanh: return std::tanh(v);
        case UnaryOp::eExp: return std::exp(v);
        case UnaryOp::eNeg: return -v;
        case UnaryOp::eAbs: return std::fabs(v);
        case UnaryOp::eSqrt: return std::sqrt(v);
        case UnaryOp::eSquare: return v * v;
    }
    return v;
}

const std::vector<UnaryOp>&
allUnaryOps()
{
    static const std::vector<UnaryOp> ops = { UnaryOp::eCast, UnaryOp::eScale, UnaryOp::eRelu,    UnaryOp::eGelu,
                                              UnaryOp::eSilu, UnaryOp::eSigmoid, UnaryOp::eTanh, UnaryOp::eExp,
                                              UnaryOp::eNeg,  UnaryOp::eAbs,    UnaryOp::eSqrt,  UnaryOp::eSquare };
    return ops;
}

class ElementwiseTest : public KomputeTest
{};

// Sizes: one element, a workgroup minus and plus one, and several groups.
const std::vector<uint32_t> kSizes = { 1, 255, 257, 1000 };

TEST_F(ElementwiseTest, UnaryOpsOverEveryTypePairAndSize)
{
    for (UnaryOp op : allUnaryOps()) {
        for (DataTypes xType : floatTypes()) {
            for (DataTypes yType : floatTypes()) {
                for (uint32_t n : { 1u, 257u }) {
                    SCOPED_TRACE("op " + std::to_string(int(op)) + " " + shortName(xType) + " -> " +
                                 shortName(yType) + " n=" + std::to_string(n));
                    float low = op == UnaryOp::eSqrt ? 0.0f : -4.0f;
                    auto input = roundTo(xType, randomValues(n, 7 + n, low, 4.0f));
                    auto x = floatTensor(mgr(), xType, input);
                    auto y = floatTensor(mgr(), yType, std::vector<float>(n, 0.0f));
                    kp::UnaryParams params;
                    params.op = op;
                    params.count = n;
                    params.scale = 0.5f;
                    runOp(mgr(), { x }, std::make_shared<kp::OpUnary>(Tensors{ x, y }, params), { y });
                    std::vector<float> expected(n);
                    for (uint32_t i = 0; i < n; ++i) {
                        expected[i] = roundTo(yType, static_cast<float>(hostUnary(op, input[i], 0.5)));
                    }
                    float tol = std::max(tolerance(yType), 1e-5f);
                    EXPECT_TRUE(near(floatsOf(*y), expected, tol, 1e-3f));
                }
            }
        }
    }
}

TEST_F(ElementwiseTest, CastsRoundLikeTheHostTypes)
{
    // Values that round differently in f16 and bf16, ties included, and
    // specials: infinities and NaN survive every cast.
    std::vector<float> values = { 0.0f,          -0.0f,       1.0f,         1.0009765625f, 1.00048828125f,
                                  65504.0f,      70000.0f,    1e-8f,        3.14159265f,   -2.71828f,
                                  1.00390625f,   1.005859375f, 300.5f,     -1e30f,        INFINITY,
                                  -INFINITY,     NAN };
    uint32_t n = static_cast<uint32_t>(values.size());
    for (DataTypes xType : floatTypes()) {
        for (DataTypes yType : floatTypes()) {
            SCOPED_TRACE(shortName(xType) + " -> " + shortName(yType));
            auto input = roundTo(xType, values);
            auto x = floatTensor(mgr(), xType, input);
            auto y = floatTensor(mgr(), yType, std::vector<float>(n, 0.0f));
            runOp(mgr(), { x }, std::make_shared<kp::OpUnary>(Tensors{ x, y }, kp::UnaryParams{}), { y });
            auto got = floatsOf(*y);
            for (uint32_t i = 0; i < n; ++i) {
                float expected = roundTo(yType, input[i]);
                if (std::isnan(expected)) {
                    EXPECT_TRUE(std::isnan(got[i])) << i;
                } else if (yType == DataTypes::eHalf && std::fabs(expected) < 6.2e-5f) {
                    // Subnormal halves: devices may flush them to zero.
                    EXPECT_NEAR(got[i], expected, 6.2e-5f) << i;
                } else {
                    EXPECT_EQ(got[i], expected) << i << ": " << input[i];
                }
            }
        }
    }
}

TEST_F(ElementwiseTest, UnaryWithOffsetsInPlaceAndCountFromOutput)
{
    auto values = randomValues(600, 3, -2.0f, 2.0f);
    auto t = floatTensor(mgr(), DataTypes::eFloat, values);
    kp::UnaryParams params;
    params.op = UnaryOp::eRelu;
    params.count = 300;
    params.xOffset = 100;
    params.yOffset = 100;
    runOp(mgr(), { t }, std::make_shared<kp::OpUnary>(Tensors{ t, t }, params), { t });
    auto got = floatsOf(*t);
    for (size_t i = 0; i < values.size(); ++i) {
        float expected = (i >= 100 && i < 400) ? std::max(values[i], 0.0f) : values[i];
        ASSERT_EQ(got[i], expected) << i;
    }

    // count = 0: the whole output from its offset.
    auto x = floatTensor(mgr(), DataTypes::eFloat, values);
    auto y = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(50, 0.0f));
    kp::UnaryParams all;
    all.op = UnaryOp::eNeg;
    all.xOffset = 500;
    all.yOffset = 10;
    runOp(mgr(), { x }, std::make_shared<kp::OpUnary>(Tensors{ x, y }, all), { y });
    auto out = floatsOf(*y);
    for (size_t i = 10; i < 50; ++i) {
        ASSERT_EQ(out[i], -values[500 + i - 10]) << i;
    }
}

double
hostBinary(BinaryOp op, double a, double b)
{
    switch (op) {
        case BinaryOp::eAdd: return a + b;
        case BinaryOp::eSub: return a - b;
        case BinaryOp::eMul: return a * b;
        case BinaryOp::eDiv: return a / b;
    }
    return 0;
}

TEST_F(ElementwiseTest, BinaryOpsWithBroadcastOverEveryType)
{
    for (BinaryOp op : { BinaryOp::eAdd, BinaryOp::eSub, BinaryOp::eMul, BinaryOp::eDiv }) {
        for (DataTypes type : floatTypes()) {
            for (uint32_t n : kSizes) {
                for (uint32_t bCount : { 0u, 1u, n }) {
                    if (n == 1000 && bCount == 0) {
                        bCount = 250; // rows of 250
                    }
                    SCOPED_TRACE("op " + std::to_string(int(op)) + " " + shortName(type) + " n=" +
                                 std::to_string(n) + " bCount=" + std::to_string(bCount));
                    uint32_t bn = bCount == 0 ? n : bCount;
                    auto av = roundTo(type, randomValues(n, n, -3.0f, 3.0f));
                    auto bv = roundTo(type, randomValues(bn, n + 1, 0.5f, 2.0f));
                    auto a = floatTensor(mgr(), type, av);
                    auto b = floatTensor(mgr(), type, bv);
                    auto y = floatTensor(mgr(), type, std::vector<float>(n, 0.0f));
                    kp::BinaryParams params;
                    params.op = op;
                    params.count = n;
                    params.bCount = bCount;
                    runOp(mgr(), { a, b }, std::make_shared<kp::OpBinary>(Tensors{ a, b, y }, params), { y });
                    std::vector<float> expected(n);
                    for (uint32_t i = 0; i < n; ++i) {
                        expected[i] = roundTo(type, static_cast<float>(hostBinary(op, av[i], bv[i % bn])));
                    }
                    EXPECT_TRUE(near(floatsOf(*y), expected, tolerance(type), 1e-2f));
                }
            }
        }
    }
}

TEST_F(ElementwiseTest, BinaryWithOffsetsIntoOneTensor)
{
    // a, b and y are three ranges of one tensor.
    auto values = randomValues(900, 11);
    auto t = floatTensor(mgr(), DataTypes::eFloat, values);
    kp::BinaryParams params;
    params.op = BinaryOp::eMul;
    params.count = 300;
    params.aOffset = 0;
    params.bOffset = 300;
    params.yOffset = 600;
    runOp(mgr(), { t }, std::make_shared<kp::OpBinary>(Tensors{ t, t, t }, params), { t });
    auto got = floatsOf(*t);
    for (size_t i = 0; i < 300; ++i) {
        ASSERT_FLOAT_EQ(got[600 + i], values[i] * values[300 + i]) << i;
    }
}

TEST_F(ElementwiseTest, FmaAndSwiGLUOverEveryType)
{
    for (DataTypes type : floatTypes()) {
        for (uint32_t n : kSizes) {
            SCOPED_TRACE(shortName(type) + " n=" + std::to_string(n));
            auto av = roundTo(type, randomValues(n, 1 + n, -3.0f, 3.0f));
            auto bv = roundTo(type, randomValues(n, 2 + n, -3.0f, 3.0f));
            uint32_t cCount = n % 2 == 0 ? n / 2 : n;
            auto cv = roundTo(type, randomValues(cCount, 3 + n, -3.0f, 3.0f));
            auto a = floatTensor(mgr(), type, av);
            auto b = floatTensor(mgr(), type, bv);
            auto c = floatTensor(mgr(), type, cv);
            auto y = floatTensor(mgr(), type, std::vector<float>(n, 0.0f));
            kp::FmaParams fma;
            fma.cCount = cCount;
            runOp(mgr(), { a, b, c }, std::make_shared<kp::OpFma>(Tensors{ a, b, c, y }, fma), { y });
            std::vector<float> expected(n);
            for (uint32_t i = 0; i < n; ++i) {
                expected[i] = roundTo(type, av[i] * bv[i] + cv[i % cCount]);
            }
            EXPECT_TRUE(near(floatsOf(*y), expected, tolerance(type), 1e-2f));

            runOp(mgr(), {}, std::make_shared<kp::OpSwiGLU>(Tensors{ a, b, y }, kp::SwiGLUParams{}), { y });
            for (uint32_t i = 0; i < n; ++i) {
                expected[i] = roundTo(type, static_cast<float>(av[i] / (1.0 + std::exp(-double(av[i]))) * bv[i]));
            }
            EXPECT_TRUE(near(floatsOf(*y), expected, tolerance(type), 1e-2f));
        }
    }
}

// OpSwiGLU over rows (SwiGLUParams::cols): gate and up the two halves of
// each row of one [rows][2 cols] tensor (an LLM's gate and up projections as
// one product), y packed or strided and of another type. (In place over the
// gate halves, y's rows would interleave with up's: refused as an overlap,
// which the checks see as ranges.)
TEST_F(ElementwiseTest, SwiGLUOverTheHalvesOfRows)
{
    for (DataTypes type : floatTypes()) {
        for (auto [rows, cols] : std::vector<std::pair<uint32_t, uint32_t>>{ { 1, 7 }, { 5, 64 }, { 37, 300 } }) {
            SCOPED_TRACE(shortName(type) + " " + std::to_string(rows) + "x" + std::to_string(cols));
            uint32_t width = 2 * cols + 3; // each row: gate, up, 3 unused
            auto values = roundTo(type, randomValues(rows * width + 1, rows + cols, -3.0f, 3.0f));
            auto both = floatTensor(mgr(), type, values);
            std::vector<float> expected(size_t(rows) * cols);
            for (uint32_t r = 0; r < rows; ++r) {
                for (uint32_t c = 0; c < cols; ++c) {
                    double g = values[1 + r * width + c], u = values[1 + r * width + cols + c];
                    expected[r * cols + c] = static_cast<float>(g / (1.0 + std::exp(-g)) * u);
                }
            }
            kp::SwiGLUParams p;
            p.count = rows * cols;
            p.cols = cols;
            p.gateOffset = 1;
            p.upOffset = 1 + cols;
            p.gateRowStride = width;
            p.upRowStride = width;
            // Packed into an f32 y.
            auto y = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(rows * cols, 0.0f));
            runOp(mgr(), { both }, std::make_shared<kp::OpSwiGLU>(Tensors{ both, both, y }, p), { y });
            EXPECT_TRUE(near(floatsOf(*y), expected, tolerance(type), 1e-2f));
            // Strided into y (rows 2 cols apart from 5; between them nothing
            // changes).
            auto wide = floatTensor(mgr(), type, std::vector<float>(5 + size_t(rows) * 2 * cols, -1.0f));
            kp::SwiGLUParams strided = p;
            strided.yOffset = 5;
            strided.yRowStride = 2 * cols;
            runOp(mgr(), { wide }, std::make_shared<kp::OpSwiGLU>(Tensors{ both, both, wide }, strided), { wide });
            auto gotWide = floatsOf(*wide);
            std::vector<float> fromWide;
            for (uint32_t r = 0; r < rows; ++r) {
                for (uint32_t c = 0; c < 2 * cols; ++c) {
                    if (c < cols) {
                        fromWide.push_back(gotWide[5 + r * 2 * cols + c]);
                    } else {
                        EXPECT_EQ(gotWide[5 + r * 2 * cols + c], -1.0f) << "between the rows of y";
                    }
                }
            }
            EXPECT_TRUE(near(fromWide, roundTo(type, expected), tolerance(type), 1e-2f));
            if (rows > 1) {
                kp::SwiGLUParams inPlace = p;
                inPlace.yOffset = 1;
                inPlace.yRowStride = width;
                EXPECT_TRUE(throwsWith([&] { kp::OpSwiGLU({ both, both, both }, inPlace); },
                                       { "'up' and 'y' are one tensor", "overlap" }));
            }
        }
    }
    auto t = mgr().tensor(std::vector<float>(64, 1.0f));
    kp::SwiGLUParams p;
    p.count = 30;
    p.cols = 7;
    EXPECT_TRUE(throwsWith([&] { kp::OpSwiGLU({ t, t, mgr().tensor(std::vector<float>(30, 0.0f)) }, p); },
                           { "OpSwiGLU", "count = 30 is not whole rows of cols = 7" }));
    p.count = 28;
    p.gateRowStride = 5;
    EXPECT_TRUE(throwsWith([&] { kp::OpSwiGLU({ t, t, mgr().tensor(std::vector<float>(28, 0.0f)) }, p); },
                           { "gateRowStride = 5 is shorter than a row" }));
    p.gateRowStride = 20;
    EXPECT_TRUE(throwsWith([&] { kp::OpSwiGLU({ t, t, mgr().tensor(std::vector<float>(28, 0.0f)) }, p); },
                           { "'gate' has 64 elements", "rows of 7" }));
    kp::SwiGLUParams noCols;
    noCols.yRowStride = 8;
    EXPECT_TRUE(throwsWith([&] { kp::OpSwiGLU({ t, t, mgr().tensor(std::vector<float>(64, 0.0f)) }, noCols); },
                           { "row strides need cols" }));
    kp::SwiGLUParams overlap;
    overlap.count = 28;
    overlap.cols = 7;
    overlap.upOffset = 32;
    overlap.yRowStride = 8;
    EXPECT_TRUE(throwsWith([&] { kp::OpSwiGLU({ t, t, t }, overlap); }, { "one tensor", "overlap" }));
}

// The result in another float type than the operands' (a prefill step's
// SwiGLU writes f16 rows from f32 ones): computed in f32 and rounded once
// into y.
TEST_F(ElementwiseTest, BinaryFmaAndSwiGLUIntoAnotherType)
{
    const uint32_t n = 257;
    for (DataTypes type : floatTypes()) {
        for (DataTypes yType : floatTypes()) {
            if (yType == type) {
                continue; // FmaAndSwiGLUOverEveryType
            }
            SCOPED_TRACE(shortName(type) + " -> " + shortName(yType));
            auto av = roundTo(type, randomValues(n, 21, -3.0f, 3.0f));
            auto bv = roundTo(type, randomValues(n, 22, -3.0f, 3.0f));
            auto cv = roundTo(type, randomValues(n, 23, -3.0f, 3.0f));
            auto a = floatTensor(mgr(), type, av);
            auto b = floatTensor(mgr(), type, bv);
            auto c = floatTensor(mgr(), type, cv);
            auto y = floatTensor(mgr(), yType, std::vector<float>(n, 0.0f));
            std::vector<float> expected(n);

            kp::BinaryParams sub;
            sub.op = BinaryOp::eSub;
            runOp(mgr(), { a, b, c }, std::make_shared<kp::OpBinary>(Tensors{ a, b, y }, sub), { y });
            for (uint32_t i = 0; i < n; ++i) {
                expected[i] = roundTo(yType, av[i] - bv[i]);
            }
            EXPECT_TRUE(near(floatsOf(*y), expected, tolerance(yType), 1e-2f));

            runOp(mgr(), {}, std::make_shared<kp::OpFma>(Tensors{ a, b, c, y }, kp::FmaParams{}), { y });
            for (uint32_t i = 0; i < n; ++i) {
                expected[i] = roundTo(yType, av[i] * bv[i] + cv[i]);
            }
            EXPECT_TRUE(near(floatsOf(*y), expected, tolerance(yType), 1e-2f));

            runOp(mgr(), {}, std::make_shared<kp::OpSwiGLU>(Tensors{ a, b, y }, kp::SwiGLUParams{}), { y });
            for (uint32_t i = 0; i < n; ++i) {
                expected[i] = roundTo(yType, static_cast<float>(av[i] / (1.0 + std::exp(-double(av[i]))) * bv[i]));
            }
            EXPECT_TRUE(near(floatsOf(*y), expected, tolerance(yType), 1e-2f));
        }
    }
}

TEST_F(ElementwiseTest, ARecordedSequenceRerunsOnNewData)
{
    auto a = floatTensor(mgr(), DataTypes::eFloat, { 1, 2, 3 });
    auto b = floatTensor(mgr(), DataTypes::eFloat, { 10, 20, 30 });
    auto y = floatTensor(mgr(), DataTypes::eFloat, { 0, 0, 0 });
    auto seq = runOp(mgr(), { a, b }, std::make_shared<kp::OpBinary>(Tensors{ a, b, y }, kp::BinaryParams{}), { y });
    EXPECT_EQ(y->vector<float>(), (std::vector<float>{ 11, 22, 33 }));
    a->setData(std::vector<float>{ 5, 5, 5 });
    seq->eval();
    EXPECT_EQ(y->vector<float>(), (std::vector<float>{ 15, 25, 35 }));
}

TEST_F(ElementwiseTest, BFloat16IsADataTypeOfItsOwn)
{
    static_assert(kp::Memory::dataType<kp::bfloat16_t>() == DataTypes::eBFloat16);
    EXPECT_EQ(static_cast<int>(DataTypes::eBFloat16), 13);
    EXPECT_EQ(kp::Memory::toString(DataTypes::eBFloat16), "eBFloat16");
    EXPECT_EQ(kp::Memory::dataTypeMemorySize(DataTypes::eBFloat16), 2u);
    // Round to nearest even on the dropped 16 bits; NaN stays NaN.
    EXPECT_EQ(kp::bfloat16_t(1.0f).bits, 0x3F80);
    EXPECT_EQ(kp::bfloat16_t(1.00390625f).bits, 0x3F80);  // a tie: to even
    EXPECT_EQ(kp::bfloat16_t(1.01171875f).bits, 0x3F82);  // a tie: to even (up)
    EXPECT_EQ(kp::bfloat16_t(1.0048828125f).bits, 0x3F81); // above the tie
    EXPECT_TRUE(std::isnan(static_cast<float>(kp::bfloat16_t(NAN))));
    EXPECT_EQ(static_cast<float>(kp::bfloat16_t(-INFINITY)), -INFINITY);
    auto tensor = mgr().tensorT<kp::bfloat16_t>({ 1.5f, -2.0f });
    EXPECT_EQ(tensor->dataType(), DataTypes::eBFloat16);
    EXPECT_EQ(tensor->memorySize(), 4u);
    EXPECT_EQ(static_cast<float>(tensor->vector()[1]), -2.0f);
    EXPECT_TRUE(throwsWith([&] { tensor->setData(std::vector<kp::float16_t>{ 1.0f, 2.0f }); }, { "eHalf", "eBFloat16" }));
}

// --- Bad input: a clear kp::Error before anything is recorded ---------------

TEST_F(ElementwiseTest, BadInputIsAClearError)
{
    auto f = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(16, 1.0f));
    auto g = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(16, 1.0f));
    auto h = floatTensor(mgr(), DataTypes::eHalf, std::vector<float>(16, 1.0f));
    auto small = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(8, 1.0f));
    auto ints = mgr().tensorT<int32_t>(std::vector<int32_t>(16, 1));
    kp::UnaryParams sixteen;
    sixteen.count = 16;

    EXPECT_TRUE(throwsWith([&] { kp::OpUnary({ f }, sixteen); }, { "OpUnary", "needs 2 tensors {x, y}", "1 given" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpUnary({ f, nullptr }, sixteen); }, { "OpUnary", "'y'", "null" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpUnary({ ints, f }, sixteen); }, { "OpUnary", "'x'", "eInt", "eFloat, eHalf or eBFloat16" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpUnary({ f, small }, sixteen); }, { "OpUnary", "'y' has 8 elements", "16" }));
    kp::UnaryParams offset = sixteen;
    offset.xOffset = 1;
    EXPECT_TRUE(throwsWith([&] { kp::OpUnary({ f, g }, offset); }, { "'x' has 16 elements", "offset 1" }));
    kp::UnaryParams overlap;
    overlap.count = 8;
    overlap.yOffset = 4;
    EXPECT_TRUE(throwsWith([&] { kp::OpUnary({ f, f }, overlap); }, { "one tensor", "overlap" }));
    kp::UnaryParams unknown = sixteen;
    unknown.op = static_cast<UnaryOp>(99);
    EXPECT_TRUE(throwsWith([&] { kp::OpUnary({ f, g }, unknown); }, { "unknown UnaryOp 99" }));
    kp::UnaryParams pastEnd;
    pastEnd.yOffset = 16;
    EXPECT_TRUE(throwsWith([&] { kp::OpUnary({ f, g }, pastEnd); }, { "count = 0", "offset 16" }));

    EXPECT_TRUE(throwsWith([&] { kp::OpBinary({ f, h, g }, kp::BinaryParams{}); }, { "OpBinary", "'a' (eFloat)", "'b' (eHalf)", "same data type" }));
    kp::BinaryParams broadcast;
    broadcast.bCount = 5;
    EXPECT_TRUE(throwsWith([&] { kp::OpBinary({ f, g, g }, broadcast); }, { "bCount = 5 must divide count = 16" }));
    broadcast.bCount = 4;
    EXPECT_TRUE(throwsWith([&] { kp::OpBinary({ f, g, g }, broadcast); }, { "'b' and 'y' are one tensor", "overlap" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpFma({ f, g, small, g }, kp::FmaParams{}); }, { "OpFma", "'c' has 8 elements" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpSwiGLU({ f, h, g }, kp::SwiGLUParams{}); }, { "OpSwiGLU", "same data type" }));

    // Tensors of two Managers.
    auto other = makeManager();
    auto foreign = other->tensorT<float>(std::vector<float>(16, 1.0f));
    EXPECT_TRUE(throwsWith([&] { kp::OpUnary({ f, foreign }, sixteen); }, { "OpUnary", "'y' belongs to another Manager" }));
    foreign.reset();
    other.reset();

    // A destroyed tensor.
    g->destroy();
    EXPECT_TRUE(throwsWith<kp::DestroyedError>([&] { kp::OpUnary({ f, g }, sixteen); }, { "OpUnary" }));
}

} // namespace
} // namespace kp_test
