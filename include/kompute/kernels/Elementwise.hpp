// SPDX-License-Identifier: Apache-2.0
// Element-wise operations: unary functions and casts, binary arithmetic with
// broadcasting, fused multiply-add and SwiGLU. Tensors hold f32 (eFloat),
// f16 (eHalf) or bf16 (eBFloat16); arithmetic is done in f32.
#pragma once

#include <cstdint>

#include "kompute/kernels/KernelOp.hpp"

namespace kp {

/** The function OpUnary applies. */
enum class UnaryOp
{
    eCast = 0,    ///< y = x (converted to y's data type)
    eScale = 1,   ///< y = scale * x
    eRelu = 2,    ///< y = max(x, 0)
    eGelu = 3,    ///< y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (the tanh form)
    eSilu = 4,    ///< y = x / (1 + exp(-x))
    eSigmoid = 5, ///< y = 1 / (1 + exp(-x))
    eTanh = 6,    ///< y = tanh(x)
    eExp = 7,     ///< y = exp(x)
    eNeg = 8,     ///< y = -x
    eAbs = 9,     ///< y = |x|
    eSqrt = 10,   ///< y = sqrt(x)
    eSquare = 11, ///< y = x * x
};

/** y[yOffset + i] = f(x[xOffset + i]) for i < count. x and y may have
 * different data types (f32, f16, bf16): every op casts. */
struct UnaryParams
{
    UnaryOp op = UnaryOp::eCast; ///< the function
    uint32_t count = 0; ///< elements; 0: all of y from yOffset
    float scale = 1.0f; ///< eScale's factor
    uint64_t xOffset = 0; ///< first element of x
    uint64_t yOffset = 0; ///< first element of y
};

/** OpUnary({x, y}, UnaryParams): y may be x (in place, same data type). */
class OpUnary : public KernelOp
{
  public:
    /** Checks the two tensors against `params` (kp::Error naming what is
     * wrong) and builds the pipeline. */
    OpUnary(const std::vector<std::shared_ptr<Memory>>& tensors, const UnaryParams& params);
};

/** The arithmetic OpBinary applies. */
enum class BinaryOp
{
    eAdd = 0, ///< a + b
    eSub = 1, ///< a - b
    eMul = 2, ///< a * b
    eDiv = 3, ///< a / b
};

/** y[i] = a[i] op b[i % bCount] for i < count: with bCount < count, b is
 * broadcast over rows of bCount elements (a bias, a per-channel scale).
 * a and b hold one data type (f32, f16 or bf16), y that one or another of
 * the three (arithmetic in f32, rounded once into y). */
struct BinaryParams
{
    BinaryOp op = BinaryOp::eAdd; ///< the arithmetic
    uint32_t count = 0;  ///< elements; 0: all of y from yOffset
    uint32_t bCount = 0; ///< elements of b; 0: count (no broadcast); must divide count
    uint64_t aOffset = 0; ///< first element of a
    uint64_t bOffset = 0; ///< first element of b
    uint64_t yOffset = 0; ///< first element of y
};

/** OpBinary({a, b, y}, BinaryParams): y may be a or b. */
class OpBinary : public KernelOp
{
  public:
    /** Checks the three tensors against `params` (kp::Error naming what is
     * wrong) and builds the pipeline. */
    OpBinary(const std::vector<std::shared_ptr<Memory>>& tensors, const BinaryParams& params);
};

/** y[i] = a[i] * b[i % bCount] + c[i % cCount]; a, b and c of one data
 * type, y of any float type. */
struct FmaParams
{
    uint32_t count = 0;  ///< 0: all of y from yOffset
    uint32_t bCount = 0; ///< 0: count
    uint32_t cCount = 0; ///< 0: count
    uint64_t aOffset = 0; ///< first element of a
    uint64_t bOffset = 0; ///< first element of b
    uint64_t cOffset = 0; ///< first element of c
    uint64_t yOffset = 0; ///< first element of y
};

/** OpFma({a, b, c, y}, FmaParams): y may be any of a, b, c. */
class OpFma : public KernelOp
{
  public:
    /** Checks the four tensors against `params` (kp::Error naming what is
     * wrong) and builds the pipeline. */
    OpFma(const std::vector<std::shared_ptr<Memory>>& tensors, const FmaParams& params);
};

/** y[i] = silu(gate[i]) * up[i] (the gated feed-forward of Llama-family
 * models); gate and up of one data type, y of any float type (a prefill
 * step writes f16 rows for the down projection). With `cols`, the count
 * elements are count / cols rows of cols, each operand's rows its row
 * stride apart: gate and up can be the two halves of each row of one
 * [rows][2 cols] product (an LLM's gate and up projections computed
 * together). */
struct SwiGLUParams
{
    uint32_t count = 0; ///< 0: all of y from yOffset (without cols)
    uint64_t gateOffset = 0; ///< first element of gate
    uint64_t upOffset = 0; ///< first element of up
    uint64_t yOffset = 0; ///< first element of y
    /** 0: one row of count; else elements per row (count a multiple). */
    uint32_t cols = 0;
    /** With cols: elements between the rows of gate, up and y (0: cols). */
    ///@{
    uint32_t gateRowStride = 0, upRowStride = 0, yRowStride = 0;
    ///@}
};

/** OpSwiGLU({gate, up, y}, SwiGLUParams): y may be gate or up. */
class OpSwiGLU : public KernelOp
{
  public:
    /** Checks the three tensors against `params` (kp::Error naming what is
     * wrong) and builds the pipeline. */
    OpSwiGLU(const std::vector<std::shared_ptr<Memory>>& tensors, const SwiGLUParams& params);
};

} // namespace kp
