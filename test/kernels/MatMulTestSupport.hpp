// SPDX-License-Identifier: Apache-2.0
// The matrix kernels' test harness: operands of every element type made from
// random values (GGUF blocks through kp::quantize), a host reference product
// in double precision, and the comparison with its tolerances.
//
// Tolerances (per element of C, against the reference on the operands as
// the device holds them: rounded to f16/bf16, dequantized blocks):
//   |c - ref| <= 4e-5 * S + r * |ref|,   S = |alpha| sum_k |a_ik b_kj| + |beta c0|
// where 4e-5 covers f32 accumulation over the tests' k <= 600 (k * 2^-24
// plus the reference's order), and r is the output rounding: 0 for f32 C,
// 2^-10 for f16 C. The cooperative-matrix paths multiply f32 operands
// rounded to f16 (to bf16 on bf16 matrices), so their reference rounds them
// the same way (dequantized Q8_0/Q4_0 values too), with 1e-4 for the order
// of their sums. The int-dot
// mat-vec quantizes activations to int8 per 4 values, to within 1/254 of
// the largest of them: |c - ref| <= S / 127 for it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <kompute/kernels/GetRows.hpp>
#include <kompute/kernels/MatMul.hpp>

#include "KernelTestSupport.hpp"

namespace kp_test {

enum class Elem
{
    F32,
    F16,
    BF16,
    Q8_0,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    IQ4_NL,
    IQ4_XS,
    Q8_0X8, ///< ours: Q8_0 blocks grouped by 8, their scales first
    Q4_0X8,
};

/** The block formats beyond Q8_0 and Q4_0, in kp::WeightFormat's order
 * (with our grouped forms of those two). */
inline const std::vector<Elem> kBlockFormats = { Elem::Q4_1, Elem::Q5_0,   Elem::Q5_1,   Elem::Q2_K,
                                                 Elem::Q3_K, Elem::Q4_K,   Elem::Q5_K,   Elem::Q6_K,
                                                 Elem::IQ4_NL, Elem::IQ4_XS, Elem::Q8_0X8, Elem::Q4_0X8 };

inline bool
isQuant(Elem e)
{
    return e >= Elem::Q8_0;
}

inline kp::WeightFormat
weightFormat(Elem e)
{
    return isQuant(e) ? static_cast<kp::WeightFormat>(static_cast<int>(e) - static_cast<int>(Elem::Q8_0) + 1)
                      : kp::WeightFormat::eNone;
}

inline const char*
elemName(Elem e)
{
    switch (e) {
        case Elem::F32: return "f32";
        case Elem::F16: return "f16";
        case Elem::BF16: return "bf16";
        default: return kp::toString(weightFormat(e));
    }
}

/** Weights per block of a quantized type (1 for the float types). */
inline uint32_t
blockOf(Elem e)
{
    return isQuant(e) ? kp::blockWeights(weightFormat(e)) : 1;
}

/** `blocks` blocks of `format` of random bytes, with finite f16 scales (in
 * +-2^-3, so that products stay well inside f32 and f16 ranges) where the
 * format keeps its d, m, dmin. */
inline std::vector<uint8_t>
randomBlocks(kp::WeightFormat format, size_t blocks, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(-0.125f, 0.125f);
    std::vector<uint32_t> halves; // byte offsets of the f16 fields
    switch (format) {
        case kp::WeightFormat::eQ4_1:
        case kp::WeightFormat::eQ5_1:
        case kp::WeightFormat::eQ4_K:
        case kp::WeightFormat::eQ5_K: halves = { 0, 2 }; break;
        case kp::WeightFormat::eQ2_K: halves = { 80, 82 }; break;
        case kp::WeightFormat::eQ3_K: halves = { 108 }; break;
        case kp::WeightFormat::eQ6_K: halves = { 208 }; break;
        case kp::WeightFormat::eQ8_0X8:
        case kp::WeightFormat::eQ4_0X8: halves = { 0, 2, 4, 6, 8, 10, 12, 14 }; break;
        default: halves = { 0 }; break;
    }
    uint32_t size = kp::blockBytes(format);
    std::vector<uint8_t> bytes(blocks * size);
    for (auto& b : bytes) {
        b = static_cast<uint8_t>(byte(rng));
    }
    for (size_t i = 0; i < blocks; ++i) {
        for (uint32_t at : halves) {
            uint16_t bits = kp::float16_t::fromFloat(scale(rng));
            std::memcpy(bytes.data() + i * size + at, &bits, 2);
        }
    }
    return bytes;
}

inline DataTypes
dataTypeOf(Elem e)
{
    return e == Elem::F16 ? DataTypes::eHalf : e == Elem::BF16 ? DataTypes::eBFloat16 : DataTypes::eFloat;
}

/** A tensor of `values` stored as `type`; `stored` gets the values as the
 * device holds them (rounded, or dequantized). */
inline std::shared_ptr<kp::Tensor>
makeOperand(kp::Manager& mgr, Elem type, const std::vector<float>& values, std::vector<float>& stored)
{
    if (isQuant(type)) {
        auto bytes = kp::quantize(weightFormat(type), values.data(), values.size());
        stored = kp::dequantize(weightFormat(type), bytes.data(), values.size() / blockOf(type));
        return mgr.tensor(bytes.data(), static_cast<uint32_t>(bytes.size()), 1, DataTypes::eUnsignedChar);
    }
    stored = roundTo(dataTypeOf(type), values);
    return floatTensor(mgr, dataTypeOf(type), values);
}

/** One matrix product to run and check. */
struct GemmCase
{
    kp::MatMulParams p;
    Elem a = Elem::F32, b = Elem::F32, c = Elem::F32;
    uint32_t seed = 1;
    /** A quantized B of random bytes (randomBlocks) rather than quantized
     * random values. */
    bool rawBlocks = false;
    /** With p.normA: the type of the norm's weights (the fourth tensor,
     * p.normOffset + k elements). */
    Elem normType = Elem::F32;
    std::string label() const
    {
        return kp::logger::format("{}x{}x{} batch {} A {}{} B {}{} C {} alpha {} beta {} lda {} ldb {} ldc {} "
                                  "off {}/{}/{}{}",
                                  p.m, p.n, p.k, p.batch, elemName(a), p.transA ? "^T" : "", elemName(b),
                                  p.transB ? "^T" : "", elemName(c), p.alpha, p.beta, p.lda, p.ldb, p.ldc,
                                  p.offsetA, p.offsetB, p.offsetC,
                                  p.normA ? kp::logger::format(" normA {} from {} eps {}", elemName(normType), p.normOffset,
                                                               p.normEps)
                                          : std::string());
    }
};

/** Elements an operand needs: offset + (batch - 1) * stride + rows x ld. */
inline uint64_t
operandElements(uint32_t rows, uint32_t cols, uint32_t ld, uint64_t stride, uint64_t offset, uint32_t batch)
{
    ld = ld ? ld : cols;
    stride = stride ? stride : uint64_t(rows) * ld;
    return offset + (batch - 1) * stride + uint64_t(rows - 1) * ld + cols;
}

/** Runs `gc` on `mgr` and checks every element of C against the reference
 * (and that elements of C outside the product kept their values). Returns
 * the path the operation chose; `built`, if given, receives the operation
 * (its dispatches' grids). */
inline std::string
runGemmCase(kp::Manager& mgr, const GemmCase& gc, std::shared_ptr<kp::OpMatMul>* built = nullptr)
{
    SCOPED_TRACE(gc.label());
    kp::MatMulParams p = gc.p;
    p.formatB = weightFormat(gc.b);
    uint32_t aRows = p.transA ? p.k : p.m, aCols = p.transA ? p.m : p.k;
    uint32_t bRows = p.swigluC ? p.upRowB + p.n : p.transB ? p.n : p.k, bCols = p.transB ? p.k : p.n;
    uint32_t lda = p.lda ? p.lda : aCols, ldb = p.ldb ? p.ldb : bCols, ldc = p.ldc ? p.ldc : p.n;
    uint64_t sA = p.strideA ? p.strideA : uint64_t(aRows) * lda;
    uint64_t sB = p.strideB ? p.strideB : uint64_t(bRows) * ldb;
    uint64_t sC = p.strideC ? p.strideC : uint64_t(p.m) * ldc;
    uint64_t nA = operandElements(aRows, aCols, lda, sA, p.offsetA, p.batch) + 3;
    uint64_t nB = operandElements(bRows, bCols, ldb, sB, p.offsetB, p.batch);
    if (isQuant(gc.b)) {
        nB = (nB + blockOf(gc.b) - 1) / blockOf(gc.b) * blockOf(gc.b);
    } else {
        nB += 5;
    }
    uint64_t nC = operandElements(p.m, p.n, ldc, sC, p.offsetC, p.batch) + 2;

    std::vector<float> aStored, bStored, cStored;
    auto a = makeOperand(mgr, gc.a, randomValues(nA, gc.seed), aStored);
    std::shared_ptr<kp::Tensor> b;
    if (gc.rawBlocks && isQuant(gc.b)) {
        auto bytes = randomBlocks(weightFormat(gc.b), nB / blockOf(gc.b), gc.seed + 1);
        bStored = kp::dequantize(weightFormat(gc.b), bytes.data(), nB / blockOf(gc.b));
        b = mgr.tensor(bytes.data(), static_cast<uint32_t>(bytes.size()), 1, DataTypes::eUnsignedChar);
    } else {
        b = makeOperand(mgr, gc.b, randomValues(nB, gc.seed + 1), bStored);
    }
    // beta = 0 must not read C: start it as NaN there.
    std::vector<float> c0 = p.beta != 0 ? randomValues(nC, gc.seed + 2) : std::vector<float>(nC, NAN);
    auto c = makeOperand(mgr, gc.c, c0, cStored);

    // normA: A's one row as the product sees it, RMS-normalized with the
    // weights g (the fourth tensor).
    std::vector<std::shared_ptr<kp::Memory>> tensors{ a, b, c };
    if (p.normA) {
        std::vector<float> gStored;
        auto g = makeOperand(mgr, gc.normType, randomValues(p.normOffset + p.k, gc.seed + 3), gStored);
        tensors.push_back(g);
        double squares = 0;
        for (uint32_t kk = 0; kk < p.k; ++kk) {
            squares += double(aStored[p.offsetA + kk]) * aStored[p.offsetA + kk];
        }
        double inv = 1.0 / std::sqrt(squares / p.k + p.normEps);
        for (uint32_t kk = 0; kk < p.k; ++kk) {
            aStored[p.offsetA + kk] = static_cast<float>(aStored[p.offsetA + kk] * gStored[p.normOffset + kk] * inv);
        }
    }
    auto op = std::make_shared<kp::OpMatMul>(tensors, p);
    if (built) {
        *built = op;
    }
    mgr.sequence()->eval<kp::OpSyncDevice>(tensors);
    mgr.sequence()
      ->record(op)
      ->record<kp::OpSyncLocal>({ c })
      ->eval();
    std::vector<float> result = floatsOf(*c);

    bool coopmat = op->path().rfind("coopmat", 0) == 0;
    bool intDot = op->path() == "matvec-int-dot";
    // What the multiplier sees: the cooperative-matrix paths round f32
    // operands to f16, or to bf16 on bf16 matrices.
    bool bf16Matrices = op->path() == "coopmat-khr-bf16";
    // f32 operands and dequantized blocks (d * q is not exact in f16) enter
    // the cooperative matrices rounded.
    auto seen = [&](Elem type, float v) {
        if (!coopmat || type == Elem::F16 || type == Elem::BF16) {
            return v;
        }
        return bf16Matrices ? static_cast<float>(kp::bfloat16_t(v)) : static_cast<float>(kp::float16_t(v));
    };
    // (Converted once: the reference's inner loop runs m x n x k times.)
    std::vector<double> aSeen(aStored.size()), bSeen(bStored.size());
    for (size_t i = 0; i < aStored.size(); ++i) {
        aSeen[i] = seen(gc.a, aStored[i]);
    }
    for (size_t i = 0; i < bStored.size(); ++i) {
        bSeen[i] = seen(gc.b, bStored[i]);
    }
    std::vector<bool> written(nC, false);
    size_t failures = 0;
    double outRounding = gc.c == Elem::F16 ? 1.0 / 1024 : 0.0;
    double tolerance = intDot ? 1.0 / 127 : (coopmat ? 1e-4 : 4e-5);
    for (uint32_t batch = 0; batch < p.batch; ++batch) {
        for (uint32_t i = 0; i < p.m; ++i) {
            for (uint32_t j = 0; j < p.n; ++j) {
                // Column j's sum (swigluC: also the up's, row upRowB + j of B).
                auto product = [&](uint32_t column, double& magnitude) {
                    double sum = 0;
                    magnitude = 0;
                    for (uint32_t kk = 0; kk < p.k; ++kk) {
                        uint64_t ia = p.offsetA + batch * sA + (p.transA ? uint64_t(kk) * lda + i : uint64_t(i) * lda + kk);
                        uint64_t ib = p.offsetB + batch * sB + (p.transB ? uint64_t(column) * ldb + kk : uint64_t(kk) * ldb + column);
                        double x = aSeen[ia], y = bSeen[ib];
                        sum += x * y;
                        magnitude += std::fabs(x * y);
                    }
                    return sum;
                };
                double magnitude = 0;
                double sum = product(j, magnitude);
                uint64_t ic = p.offsetC + batch * sC + uint64_t(i) * ldc + j;
                written[ic] = true;
                double ref = p.alpha * sum + (p.beta != 0 ? p.beta * cStored[ic] : 0.0);
                double old = p.beta != 0 ? std::fabs(p.beta * cStored[ic]) : 0.0;
                double bound = tolerance * (std::fabs(p.alpha) * magnitude + old) +
                               outRounding * std::fabs(ref) + 1e-6;
                if (p.swigluC) {
                    // silu(g) * u, its error from each sum's: |silu'| <= 1.1.
                    double upMagnitude = 0;
                    double g = p.alpha * sum, u = p.alpha * product(p.upRowB + j, upMagnitude);
                    double silu = g / (1 + std::exp(-g));
                    ref = silu * u;
                    bound = tolerance * std::fabs(p.alpha) * (1.1 * std::fabs(u) * magnitude + std::fabs(silu) * upMagnitude) +
                            outRounding * std::fabs(ref) + 1e-6;
                }
                double error = std::fabs(result[ic] - ref);
                if (!(error <= bound) && failures++ < 8) {
                    ADD_FAILURE() << "C[" << batch << "][" << i << "][" << j << "] = " << result[ic]
                                  << ", expected " << ref << " (error " << error << " > " << bound << ", path "
                                  << op->path() << ")";
                }
            }
        }
    }
    for (uint64_t i = 0; i < nC; ++i) {
        bool same = std::isnan(cStored[i]) ? std::isnan(result[i]) : result[i] == cStored[i];
        if (!written[i] && !same && failures++ < 8) {
            ADD_FAILURE() << "C element " << i << " outside the product changed from " << cStored[i] << " to "
                          << result[i];
        }
    }
    EXPECT_EQ(failures, 0u) << "path " << op->path();
    return op->path();
}

} // namespace kp_test
