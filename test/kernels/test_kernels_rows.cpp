// SPDX-License-Identifier: Apache-2.0
// The row kernels: OpReduce (sum, mean, max, argmax), OpSoftmax (with its
// causal mask), OpRMSNorm and OpLayerNorm, against host loops, over every
// float type, rows that do not fill a workgroup or span several, strides
// and offsets, in place, both reduction paths (subgroup and shared memory,
// forced with KOMPUTE_ENV_DISABLE=subgroup); and their argument checks.
#include "KernelTestSupport.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kp_test {
namespace {

using kp::ReduceOp;

/** Both reduction paths: the device's choice, and shared memory only. */
enum class Reduction
{
    Default,
    SharedMemory,
};

class RowKernelTest : public KomputeParamTest<Reduction>
{
  protected:
    /** KOMPUTE_ENV_DISABLE for this parameter, while operations are built. */
    std::unique_ptr<DisablePaths> paths()
    {
        return std::make_unique<DisablePaths>(GetParam() == Reduction::SharedMemory ? "subgroup" : nullptr);
    }
    /** The reduction path of `op`; `split`: the many-workgroup argmax
     * of one row ("split-" and the reduction path). */
    void expectPath(const kp::KernelOp& op, bool split = false)
    {
        std::string prefix = split ? "split-" : "";
        if (GetParam() == Reduction::SharedMemory) {
            EXPECT_EQ(op.path(), prefix + "shared-memory");
        } else {
            EXPECT_TRUE(op.path() == prefix + "subgroup" || op.path() == prefix + "shared-memory") << op.path();
        }
    }
};

struct Shape
{
    uint32_t rows, cols;
};
// One element, rows shorter and longer than a workgroup, and 1-column rows.
const std::vector<Shape> kShapes = { { 1, 1 }, { 3, 5 }, { 2, 257 }, { 5, 1000 }, { 7, 1 }, { 1, 4096 } };

TEST_P(RowKernelTest, ReduceOverEveryTypeAndShape)
{
    for (ReduceOp op : { ReduceOp::eSum, ReduceOp::eMean, ReduceOp::eMax, ReduceOp::eArgmax }) {
        for (DataTypes type : floatTypes()) {
            for (Shape shape : kShapes) {
                SCOPED_TRACE("op " + std::to_string(int(op)) + " " + shortName(type) + " " +
                             std::to_string(shape.rows) + "x" + std::to_string(shape.cols));
                uint32_t stride = shape.cols + 3; // rows 3 apart, and an offset
                uint32_t offset = 2;
                auto values = roundTo(type, randomValues(offset + shape.rows * stride, shape.cols, -2.0f, 2.0f));
                auto x = floatTensor(mgr(), type, values);
                std::shared_ptr<kp::Tensor> y;
                if (op == ReduceOp::eArgmax) {
                    y = mgr().tensorT<uint32_t>(std::vector<uint32_t>(shape.rows + 1, 77));
                } else {
                    y = mgr().tensorT<float>(std::vector<float>(shape.rows + 1, 77.0f));
                }
                kp::ReduceParams params;
                params.op = op;
                params.rows = shape.rows;
                params.cols = shape.cols;
                params.xRowStride = stride;
                params.xOffset = offset;
                params.yOffset = 1;
                std::shared_ptr<kp::OpReduce> reduce;
                {
                    auto disabled = paths();
                    reduce = std::make_shared<kp::OpReduce>(Tensors{ x, y }, params);
                }
                // One row longer than 4 x 256 values: many workgroups on a
                // GPU, one on a CPU device.
                bool cpu = mgr().getDeviceProperties().deviceType == vk::PhysicalDeviceType::eCpu;
                expectPath(*reduce, op == ReduceOp::eArgmax && shape.rows == 1 && shape.cols > 1024 && !cpu);
                runOp(mgr(), { x, y }, reduce, { y }); // y too: its element 0 must stay 77
                for (uint32_t r = 0; r < shape.rows; ++r) {
                    const float* row = values.data() + offset + r * stride;
                    double sum = 0;
                    float best = row[0];
                    uint32_t bestIndex = 0;
                    for (uint32_t c = 0; c < shape.cols; ++c) {
                        sum += row[c];
                        if (row[c] > best) {
                            best = row[c];
                            bestIndex = c;
                        }
                    }
                    if (op == ReduceOp::eArgmax) {
                        EXPECT_EQ(y->vector<uint32_t>()[1 + r], bestIndex) << "row " << r;
                    } else {
                        double expected = op == ReduceOp::eSum ? sum : op == ReduceOp::eMean ? sum / shape.cols : best;
                        EXPECT_NEAR(y->vector<float>()[1 + r], expected, 1e-4 * (1 + std::fabs(expected) + shape.cols * 1e-3))
                          << "row " << r;
                    }
                }
                if (op == ReduceOp::eArgmax) {
                    EXPECT_EQ(y->vector<uint32_t>()[0], 77u); // before yOffset: untouched
                } else {
                    EXPECT_EQ(y->vector<float>()[0], 77.0f);
                }
            }
        }
    }
}

TEST_P(RowKernelTest, ArgmaxTakesTheFirstOfEqualsAndSkipsNaN)
{
    std::vector<float> values(600, 1.0f);
    values[300] = 5.0f;
    values[450] = 5.0f;
    values[10] = NAN;
    auto x = floatTensor(mgr(), DataTypes::eFloat, values);
    auto y = mgr().tensorT<uint32_t>(std::vector<uint32_t>{ 0 });
    kp::ReduceParams params;
    params.op = ReduceOp::eArgmax;
    params.cols = 600;
    std::shared_ptr<kp::OpReduce> op;
    {
        auto disabled = paths();
        op = std::make_shared<kp::OpReduce>(Tensors{ x, y }, params);
    }
    runOp(mgr(), { x }, op, { y });
    EXPECT_EQ(y->vector()[0], 300u);
}

TEST_P(RowKernelTest, ArgmaxOfOneLongRowOverManyWorkgroups)
{
    // A decode step's logits (128256, Llama 3's vocabulary): the row is
    // split between workgroups, and the merge keeps the first of equal
    // maxima wherever they fall (in one chunk, in two, on a chunk's edge),
    // never a NaN; a recorded operation evaluated again gives the new
    // row's answer (the workgroups' count starts from 0 each time).
    // Up to 1024 workgroups (126 of ~1018 values), 7 (chunks of 18323),
    // and the device's choice (one on a CPU device).
    const uint32_t cols = 128256;
    for (auto [type, groups] : std::vector<std::pair<DataTypes, uint32_t>>{ { DataTypes::eFloat, 1024 },
                                                                          { DataTypes::eHalf, 1024 },
                                                                          { DataTypes::eBFloat16, 1024 },
                                                                          { DataTypes::eFloat, 7 },
                                                                          { DataTypes::eFloat, 0 } }) {
        SCOPED_TRACE(shortName(type) + " argmaxGroups " + std::to_string(groups));
        auto values = roundTo(type, randomValues(cols + 1, 7, -4.0f, 4.0f));
        auto x = floatTensor(mgr(), type, values);
        auto y = mgr().tensorT<uint32_t>(std::vector<uint32_t>{ 77 });
        kp::ReduceParams params;
        params.op = ReduceOp::eArgmax;
        params.cols = cols;
        params.xOffset = 1;
        params.argmaxGroups = groups;
        std::shared_ptr<kp::OpReduce> op;
        {
            auto disabled = paths();
            op = std::make_shared<kp::OpReduce>(Tensors{ x, y }, params);
        }
        bool cpu = mgr().getDeviceProperties().deviceType == vk::PhysicalDeviceType::eCpu;
        expectPath(*op, groups != 0 || !cpu);
        auto seq = mgr().sequence();
        seq->record<kp::OpSyncDevice>({ x })->record(op)->record<kp::OpSyncLocal>({ y });
        auto hostArgmax = [&](const std::vector<float>& v) {
            uint32_t best = 0;
            for (uint32_t c = 1; c < cols; ++c) {
                if (v[1 + c] > v[1 + best]) {
                    best = c;
                }
            }
            return best;
        };
        struct Case
        {
            const char* what;
            std::vector<std::pair<uint32_t, float>> set; // (column, value)
            uint32_t expected;
        };
        std::vector<Case> cases = {
            { "random", {}, hostArgmax(values) },
            { "equals far apart", { { 100000, 9.0f }, { 5000, 9.0f }, { 127000, 9.0f } }, 5000 },
            { "equals in one chunk", { { 20001, 9.0f }, { 20000, 9.0f } }, 20000 },
            { "equals on either side of every 1000th column", {}, 0 },
            { "NaN above the maximum", { { 3, NAN }, { 64000, 9.0f }, { 128255, NAN } }, 64000 },
            { "the last column", { { 128255, 9.0f } }, 128255 },
        };
        // Ties at columns 999 and 1000, 1999 and 2000, ...: the first, 999,
        // whatever chunks the op made.
        for (uint32_t c = 1000; c < cols; c += 1000) {
            cases[3].set.push_back({ c, 9.0f });
            cases[3].set.push_back({ c - 1, 9.0f });
        }
        cases[3].expected = 999;
        for (const Case& c : cases) {
            SCOPED_TRACE(c.what);
            std::vector<float> row = values;
            for (auto [column, value] : c.set) {
                row[1 + column] = value;
            }
            auto stored = floatTensor(mgr(), type, row); // the row as its type stores it
            std::memcpy(x->rawData(), stored->rawData(), x->memorySize());
            seq->eval();
            EXPECT_EQ(y->vector()[0], c.expected);
        }
        // Every value NaN or -inf: 0, as one workgroup says.
        std::vector<float> none(cols + 1, -INFINITY);
        none[500] = NAN;
        auto stored = floatTensor(mgr(), type, none);
        std::memcpy(x->rawData(), stored->rawData(), x->memorySize());
        seq->eval();
        EXPECT_EQ(y->vector()[0], 0u);
    }
}

void
hostSoftmax(const std::vector<float>& x,
            std::vector<float>& y,
            const kp::SoftmaxParams& p,
            uint32_t xStride,
            uint32_t yStride)
{
    uint32_t perMatrix = p.rowsPerMatrix == 0 ? p.rows : p.rowsPerMatrix;
    for (uint32_t r = 0; r < p.rows; ++r) {
        uint32_t kept = p.causal ? std::min(p.cols, r % perMatrix + p.causalShift + 1) : p.cols;
        double m = -INFINITY;
        for (uint32_t c = 0; c < kept; ++c) {
            m = std::max(m, double(p.scale) * x[p.xOffset + r * xStride + c]);
        }
        double s = 0;
        for (uint32_t c = 0; c < kept; ++c) {
            s += std::exp(double(p.scale) * x[p.xOffset + r * xStride + c] - m);
        }
        for (uint32_t c = 0; c < p.cols; ++c) {
            y[p.yOffset + r * yStride + c] =
              c < kept ? float(std::exp(double(p.scale) * x[p.xOffset + r * xStride + c] - m) / s) : 0.0f;
        }
    }
}

TEST_P(RowKernelTest, SoftmaxOverEveryTypeShapeAndMask)
{
    for (DataTypes type : floatTypes()) {
        for (Shape shape : kShapes) {
            for (bool causal : { false, true }) {
                SCOPED_TRACE(shortName(type) + " " + std::to_string(shape.rows) + "x" + std::to_string(shape.cols) +
                             (causal ? " causal" : ""));
                kp::SoftmaxParams params;
                params.rows = shape.rows;
                params.cols = shape.cols;
                params.scale = 0.7f;
                params.causal = causal;
                params.causalShift = shape.cols > 4 ? 2 : 0;
                params.rowsPerMatrix = shape.rows > 2 ? 2 : 0; // batched matrices of 2 rows
                params.xOffset = 1;
                // Large values: a softmax without the maximum would overflow.
                auto values = roundTo(type, randomValues(1 + shape.rows * shape.cols, 5, -30.0f, 90.0f));
                auto x = floatTensor(mgr(), type, values);
                auto y = floatTensor(mgr(), type, std::vector<float>(shape.rows * shape.cols, 9.0f));
                std::shared_ptr<kp::OpSoftmax> op;
                {
                    auto disabled = paths();
                    op = std::make_shared<kp::OpSoftmax>(Tensors{ x, y }, params);
                }
                expectPath(*op);
                runOp(mgr(), { x }, op, { y });
                std::vector<float> expected(shape.rows * shape.cols);
                hostSoftmax(values, expected, params, shape.cols, shape.cols);
                EXPECT_TRUE(near(floatsOf(*y), roundTo(type, expected), tolerance(type) * 4, 1e-3f));
            }
        }
    }
}

TEST_P(RowKernelTest, SoftmaxInPlaceWithStrides)
{
    uint32_t rows = 3, cols = 300, stride = 310;
    auto values = randomValues(rows * stride, 9, -5.0f, 5.0f);
    auto t = floatTensor(mgr(), DataTypes::eFloat, values);
    kp::SoftmaxParams params;
    params.rows = rows;
    params.cols = cols;
    params.xRowStride = stride;
    params.yRowStride = stride;
    std::shared_ptr<kp::OpSoftmax> op;
    {
        auto disabled = paths();
        op = std::make_shared<kp::OpSoftmax>(Tensors{ t, t }, params);
    }
    runOp(mgr(), { t }, op, { t });
    std::vector<float> expected = values;
    hostSoftmax(values, expected, params, stride, stride);
    EXPECT_TRUE(near(floatsOf(*t), expected, 1e-5f, 1e-3f));
}

// RMSNorm (layer false) or LayerNorm of `shape.rows` packed rows on the
// host, in double; weights and biases where given (one per column).
std::vector<float>
hostNorm(bool layer, const std::vector<float>& values, Shape shape, float eps, const float* weights, const float* biases)
{
    std::vector<float> y(values.size());
    for (uint32_t r = 0; r < shape.rows; ++r) {
        const float* row = values.data() + r * shape.cols;
        double mean = 0;
        if (layer) {
            for (uint32_t c = 0; c < shape.cols; ++c) {
                mean += row[c];
            }
            mean /= shape.cols;
        }
        double squares = 0;
        for (uint32_t c = 0; c < shape.cols; ++c) {
            squares += (row[c] - mean) * (row[c] - mean);
        }
        double inverse = 1.0 / std::sqrt(squares / shape.cols + eps);
        for (uint32_t c = 0; c < shape.cols; ++c) {
            double v = (row[c] - mean) * inverse;
            if (weights) {
                v *= weights[c];
            }
            if (biases) {
                v += biases[c];
            }
            y[r * shape.cols + c] = float(v);
        }
    }
    return y;
}

TEST_P(RowKernelTest, RMSNormAndLayerNormOverEveryTypeAndShape)
{
    // Beside kShapes, rows that the norms keep in registers only in part
    // (up to 4 values an invocation, 1024 invocations: 2049 and 4096 are
    // cached, 4097 and 9000 take the loops).
    std::vector<Shape> shapes = kShapes;
    shapes.insert(shapes.end(), { { 3, 2049 }, { 2, 4097 }, { 1, 9000 } });
    for (bool layer : { false, true }) {
        for (DataTypes type : floatTypes()) {
            for (Shape shape : shapes) {
                for (size_t operands : { 2u, 3u, 4u }) {
                    if (operands == 4 && !layer) {
                        continue;
                    }
                    SCOPED_TRACE(std::string(layer ? "layernorm " : "rmsnorm ") + shortName(type) + " " +
                                 std::to_string(shape.rows) + "x" + std::to_string(shape.cols) + " with " +
                                 std::to_string(operands) + " tensors");
                    uint32_t n = shape.rows * shape.cols;
                    // An offset mean: LayerNorm must not lose it to cancellation.
                    auto values = roundTo(type, randomValues(n, shape.cols + 1, 2.0f, 6.0f));
                    auto weights = randomValues(shape.cols + 2, 2, 0.5f, 1.5f);
                    auto biases = randomValues(shape.cols, 3, -1.0f, 1.0f);
                    auto x = floatTensor(mgr(), type, values);
                    auto w = floatTensor(mgr(), DataTypes::eFloat, weights);
                    auto b = floatTensor(mgr(), DataTypes::eFloat, biases);
                    auto y = floatTensor(mgr(), type, std::vector<float>(n, 0.0f));
                    Tensors tensors = operands == 2 ? Tensors{ x, y } : operands == 3 ? Tensors{ x, w, y } : Tensors{ x, w, b, y };
                    const float eps = 1e-5f;
                    std::shared_ptr<kp::KernelOp> op;
                    {
                        auto disabled = paths();
                        if (layer) {
                            kp::LayerNormParams params;
                            params.rows = shape.rows;
                            params.cols = shape.cols;
                            params.eps = eps;
                            params.weightOffset = 2;
                            op = std::make_shared<kp::OpLayerNorm>(tensors, params);
                        } else {
                            kp::RMSNormParams params;
                            params.rows = shape.rows;
                            params.cols = shape.cols;
                            params.eps = eps;
                            params.weightOffset = 2;
                            op = std::make_shared<kp::OpRMSNorm>(tensors, params);
                        }
                    }
                    expectPath(*op);
                    runOp(mgr(), { x, w, b }, op, { y });
                    auto expected = roundTo(type, hostNorm(layer, values, shape, eps, operands >= 3 ? &weights[2] : nullptr,
                                                           operands == 4 ? biases.data() : nullptr));
                    // A 1-column LayerNorm row is 0 / sqrt(eps): exactly the bias.
                    EXPECT_TRUE(near(floatsOf(*y), expected, std::max(tolerance(type), 2e-4f), 1e-2f));
                }
            }
        }
    }
}

// y of another float type than x (a prefill step normalizes its f32 rows
// into the f16 ones the products read), on rows kept in registers (4096)
// and rows that take the loops (4097): computed in f32, rounded once.
TEST_P(RowKernelTest, RMSNormAndLayerNormIntoAnotherType)
{
    const float eps = 1e-5f;
    for (bool layer : { false, true }) {
        for (DataTypes type : floatTypes()) {
            for (DataTypes yType : floatTypes()) {
                for (Shape shape : { Shape{ 3, 4096 }, Shape{ 2, 4097 } }) {
                    if (yType == type) {
                        continue; // RMSNormAndLayerNormOverEveryTypeAndShape
                    }
                    SCOPED_TRACE(std::string(layer ? "layernorm " : "rmsnorm ") + shortName(type) + " -> " +
                                 shortName(yType) + " " + std::to_string(shape.rows) + "x" + std::to_string(shape.cols));
                    uint32_t n = shape.rows * shape.cols;
                    auto values = roundTo(type, randomValues(n, shape.cols, -2.0f, 6.0f));
                    auto weights = randomValues(shape.cols, 7, 0.5f, 1.5f);
                    auto biases = randomValues(shape.cols, 8, -1.0f, 1.0f);
                    auto x = floatTensor(mgr(), type, values);
                    auto w = floatTensor(mgr(), DataTypes::eFloat, weights);
                    auto b = floatTensor(mgr(), DataTypes::eFloat, biases);
                    auto y = floatTensor(mgr(), yType, std::vector<float>(n, 0.0f));
                    std::shared_ptr<kp::KernelOp> op;
                    {
                        auto disabled = paths();
                        if (layer) {
                            op = std::make_shared<kp::OpLayerNorm>(Tensors{ x, w, b, y },
                                                                   kp::LayerNormParams{ shape.rows, shape.cols, eps });
                        } else {
                            op = std::make_shared<kp::OpRMSNorm>(Tensors{ x, w, y },
                                                                 kp::RMSNormParams{ shape.rows, shape.cols, eps });
                        }
                    }
                    expectPath(*op);
                    runOp(mgr(), { x, w, b }, op, { y });
                    auto expected = roundTo(yType, hostNorm(layer, values, shape, eps, weights.data(),
                                                            layer ? biases.data() : nullptr));
                    EXPECT_TRUE(near(floatsOf(*y), expected, std::max(tolerance(yType), 2e-4f), 1e-2f));
                }
            }
        }
    }
}

TEST_P(RowKernelTest, RMSNormInPlace)
{
    auto values = randomValues(4 * 4096, 4);
    auto t = floatTensor(mgr(), DataTypes::eFloat, values);
    auto w = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(4096, 2.0f));
    std::shared_ptr<kp::OpRMSNorm> op;
    {
        auto disabled = paths();
        op = std::make_shared<kp::OpRMSNorm>(Tensors{ t, w, t }, kp::RMSNormParams{ 4, 4096, 1e-6f });
    }
    runOp(mgr(), { t, w }, op, { t });
    auto got = floatsOf(*t);
    for (uint32_t r = 0; r < 4; ++r) {
        double squares = 0;
        for (uint32_t c = 0; c < 4096; ++c) {
            squares += double(values[r * 4096 + c]) * values[r * 4096 + c];
        }
        double inverse = 1.0 / std::sqrt(squares / 4096 + 1e-6);
        for (uint32_t c = 0; c < 4096; c += 511) {
            EXPECT_NEAR(got[r * 4096 + c], values[r * 4096 + c] * inverse * 2.0, 1e-4) << r << " " << c;
        }
    }
}

TEST_P(RowKernelTest, RMSNormPerHeadInPlaceInRowsOfAFusedBuffer)
{
    // Qwen3's query norm: rows of [q heads | k heads | v heads], each query
    // head normalized on its own with one weight of headDim values.
    for (DataTypes type : { DataTypes::eFloat, DataTypes::eHalf }) {
        SCOPED_TRACE(shortName(type));
        const uint32_t rows = 3, heads = 5, headDim = 24, stride = heads * headDim + 40, offset = 8;
        auto values = roundTo(type, randomValues(offset + rows * stride, 11, -3.0f, 3.0f));
        auto weights = randomValues(headDim + 1, 12, 0.5f, 1.5f);
        auto t = floatTensor(mgr(), type, values);
        auto w = floatTensor(mgr(), DataTypes::eFloat, weights);
        kp::RMSNormParams params;
        params.rows = rows;
        params.cols = headDim;
        params.heads = heads;
        params.eps = 1e-6f;
        params.xRowStride = stride;
        params.yRowStride = stride;
        params.xOffset = offset;
        params.yOffset = offset;
        params.weightOffset = 1;
        std::shared_ptr<kp::OpRMSNorm> op;
        {
            auto disabled = paths();
            op = std::make_shared<kp::OpRMSNorm>(Tensors{ t, w, t }, params);
        }
        runOp(mgr(), { t, w }, op, { t });
        std::vector<float> expected = values; // what lies outside the heads stays
        for (uint32_t r = 0; r < rows; ++r) {
            for (uint32_t h = 0; h < heads; ++h) {
                const size_t base = offset + size_t(r) * stride + h * headDim;
                double squares = 0;
                for (uint32_t c = 0; c < headDim; ++c) {
                    squares += double(values[base + c]) * values[base + c];
                }
                double inverse = 1.0 / std::sqrt(squares / headDim + 1e-6);
                for (uint32_t c = 0; c < headDim; ++c) {
                    expected[base + c] = roundTo(type, float(values[base + c] * inverse * weights[1 + c]));
                }
            }
        }
        EXPECT_TRUE(near(floatsOf(*t), expected, std::max(tolerance(type), 2e-4f), 1e-2f));
    }
    {
        // A weight per head (weightHeadStride): Qwen3's query heads with
        // one weight, its key heads with another, in one dispatch.
        const uint32_t rows = 2, heads = 3, headDim = 8, stride = 40;
        auto values = randomValues(rows * stride, 13, -3.0f, 3.0f);
        auto weights = randomValues(heads * 10, 14, 0.5f, 1.5f);
        auto t = floatTensor(mgr(), DataTypes::eFloat, values);
        auto w = floatTensor(mgr(), DataTypes::eFloat, weights);
        kp::RMSNormParams params;
        params.rows = rows;
        params.cols = headDim;
        params.heads = heads;
        params.weightHeadStride = 10;
        params.xRowStride = stride;
        params.yRowStride = stride;
        std::shared_ptr<kp::OpRMSNorm> op;
        {
            auto disabled = paths();
            op = std::make_shared<kp::OpRMSNorm>(Tensors{ t, w, t }, params);
        }
        runOp(mgr(), { t, w }, op, { t });
        std::vector<float> expected = values;
        for (uint32_t r = 0; r < rows; ++r) {
            for (uint32_t h = 0; h < heads; ++h) {
                const size_t base = size_t(r) * stride + h * headDim;
                double squares = 0;
                for (uint32_t c = 0; c < headDim; ++c) {
                    squares += double(values[base + c]) * values[base + c];
                }
                double inverse = 1.0 / std::sqrt(squares / headDim + params.eps);
                for (uint32_t c = 0; c < headDim; ++c) {
                    expected[base + c] = float(values[base + c] * inverse * weights[h * 10 + c]);
                }
            }
        }
        EXPECT_TRUE(near(floatsOf(*t), expected, 2e-4f, 1e-2f));
        kp::RMSNormParams beyond = params;
        beyond.weightHeadStride = 12; // the last head's weights would end at 32 of 30
        EXPECT_THROW(kp::OpRMSNorm({ t, w, t }, beyond), kp::Error);
    }
    auto x = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(64, 1.0f));
    kp::RMSNormParams wide;
    wide.rows = 2;
    wide.cols = 8;
    wide.heads = 3;
    wide.xRowStride = 16;
    EXPECT_THROW(kp::OpRMSNorm({ x, x }, wide), kp::Error); // rows of 3 heads x 8 do not fit a stride of 16
}

INSTANTIATE_TEST_SUITE_P(Paths,
                         RowKernelTest,
                         ::testing::Values(Reduction::Default, Reduction::SharedMemory),
                         [](const ::testing::TestParamInfo<Reduction>& info) {
                             return info.param == Reduction::Default ? std::string("Default")
                                                                     : std::string("SharedMemory");
                         });

// --- Bad input -------------------------------------------------------------------

class RowKernelErrorTest : public KomputeTest
{};

TEST_F(RowKernelErrorTest, BadInputIsAClearError)
{
    auto x = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(64, 1.0f));
    auto y = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(8, 0.0f));
    auto yh = floatTensor(mgr(), DataTypes::eHalf, std::vector<float>(64, 0.0f));
    auto u = mgr().tensorT<uint32_t>(std::vector<uint32_t>(8, 0));
    kp::ReduceParams sum;
    sum.rows = 8;
    sum.cols = 8;
    EXPECT_TRUE(throwsWith([&] { kp::OpReduce({ x, u }, sum); }, { "OpReduce", "'y' holds eUnsignedInt", "eFloat" }));
    kp::ReduceParams argmax = sum;
    argmax.op = ReduceOp::eArgmax;
    EXPECT_TRUE(throwsWith([&] { kp::OpReduce({ x, y }, argmax); }, { "'y' holds eFloat", "eUnsignedInt" }));
    kp::ReduceParams tall = sum;
    tall.rows = 9;
    EXPECT_TRUE(throwsWith([&] { kp::OpReduce({ x, y }, tall); }, { "'x' has 64 elements", "9 rows of 8" }));
    kp::ReduceParams strided = sum;
    strided.xRowStride = 4;
    EXPECT_TRUE(throwsWith([&] { kp::OpReduce({ x, y }, strided); }, { "xRowStride = 4 is less than cols = 8" }));
    kp::ReduceParams empty;
    EXPECT_TRUE(throwsWith([&] { kp::OpReduce({ x, y }, empty); }, { "rows and cols must be at least 1" }));
    kp::ReduceParams split = argmax;
    split.rows = 1;
    split.argmaxGroups = 1025;
    EXPECT_TRUE(throwsWith([&] { kp::OpReduce({ x, u }, split); }, { "argmaxGroups = 1025 is more than 1024" }));
    kp::ReduceParams splitRows = argmax;
    splitRows.argmaxGroups = 4;
    EXPECT_TRUE(throwsWith([&] { kp::OpReduce({ x, u }, splitRows); },
                           { "argmaxGroups = 4 applies to the argmax of one row only", "rows 8" }));
    kp::ReduceParams splitSum = sum;
    splitSum.rows = 1;
    splitSum.argmaxGroups = 4;
    EXPECT_TRUE(throwsWith([&] { kp::OpReduce({ x, y }, splitSum); }, { "applies to the argmax of one row only" }));

    kp::SoftmaxParams softmax;
    softmax.rows = 8;
    softmax.cols = 8;
    EXPECT_TRUE(throwsWith([&] { kp::OpSoftmax({ x, yh }, softmax); }, { "OpSoftmax", "same data type" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpSoftmax({ x, y }, softmax); }, { "'y' has 8 elements", "8 rows of 8" }));
    kp::SoftmaxParams shifted = softmax;
    shifted.rows = 4;
    shifted.yOffset = 4;
    EXPECT_TRUE(throwsWith([&] { kp::OpSoftmax({ x, x }, shifted); }, { "one tensor", "overlap" }));

    auto w = floatTensor(mgr(), DataTypes::eFloat, std::vector<float>(4, 1.0f));
    auto wh = floatTensor(mgr(), DataTypes::eHalf, std::vector<float>(8, 1.0f));
    kp::RMSNormParams norm{ 8, 8, 1e-6f };
    EXPECT_TRUE(throwsWith([&] { kp::OpRMSNorm({ x, w, x }, norm); }, { "OpRMSNorm", "'weight' has 4 elements", "cols = 8" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpRMSNorm({ x, wh, x }, norm); }, { "'weight' holds eHalf", "eFloat" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpRMSNorm({ x }, norm); }, { "OpRMSNorm", "{x, weight, y} or {x, y}", "1 given" }));
    kp::RMSNormParams negative{ 8, 8, -1.0f };
    EXPECT_TRUE(throwsWith([&] { kp::OpRMSNorm({ x, x }, negative); }, { "eps must not be negative" }));
    kp::LayerNormParams layer;
    layer.rows = 8;
    layer.cols = 8;
    EXPECT_TRUE(throwsWith([&] { kp::OpLayerNorm({ x, w, w, x }, layer); }, { "OpLayerNorm", "'weight' has 4 elements" }));
    EXPECT_TRUE(throwsWith([&] { kp::OpLayerNorm({ x, x, x, x, x }, layer); }, { "OpLayerNorm", "5 given" }));

    auto other = makeManager();
    auto foreign = other->tensorT<float>(std::vector<float>(64, 1.0f));
    EXPECT_TRUE(throwsWith([&] { kp::OpRMSNorm({ x, foreign }, norm); }, { "'y' belongs to another Manager" }));
}

} // namespace
} // namespace kp_test
