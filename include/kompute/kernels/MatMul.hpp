// SPDX-License-Identifier: Apache-2.0
// kp::OpMatMul: C = alpha * op(A) * op(B) + beta * C, batched, with f32
// accumulation; B may hold GGUF blocks (kp::WeightFormat, dequantized on load).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kompute/Tensor.hpp"
#include "kompute/kernels/KernelOp.hpp"
#include "kompute/kernels/Quantization.hpp"
#include "kompute/kernels/RoPE.hpp"

namespace kp {

/**
 * Shape and layout of a matrix product C[m][n] = alpha * op(A)[m][k] *
 * op(B)[k][n] + beta * C, over row-major matrices inside 1-D tensors.
 * op(X) is X, or X transposed when transX is set (then X is stored [k][m]
 * for A, [n][k] for B). Leading dimensions, strides and offsets count
 * elements (for a quantized B: weights, multiples of the format's block,
 * blockWeights: 32, or 256 for the K-quants and IQ4_XS); 0 means packed:
 * lda = transA ? m : k, ldb = transB ? k : n, ldc = n, and a batch stride of
 * one whole matrix.
 */
struct MatMulParams
{
    /** Rows of C, columns of C, and the inner dimension. */
    ///@{
    uint32_t m = 0, n = 0, k = 0;
    ///@}
    /** Whether A (B) is stored transposed. */
    ///@{
    bool transA = false, transB = false;
    ///@}
    /** The scale of the product, and of the C added to it (0: C is not
     * read). */
    ///@{
    float alpha = 1, beta = 0;
    ///@}
    /** Elements between rows of A, B and C as stored; 0: packed. */
    ///@{
    uint32_t lda = 0, ldb = 0, ldc = 0;
    ///@}
    /** Number of products (matrices of A, B and C taken in step). */
    uint32_t batch = 1;
    /** Elements between the matrices of a batch; 0: one whole matrix. */
    ///@{
    uint64_t strideA = 0, strideB = 0, strideC = 0;
    ///@}
    /** First element of the first matrix of A, B and C. */
    ///@{
    uint64_t offsetA = 0, offsetB = 0, offsetC = 0;
    ///@}
    /** eNone: B holds elements of its data type; a block format (eQ8_0,
     * eQ4_K, ...): B is an eUnsignedChar tensor of GGUF blocks stored
     * [n][k] (transB = true), k a multiple of blockWeights(formatB). */
    WeightFormat formatB = WeightFormat::eNone;
    /** Ours: the row of A is the SwiGLU of two rows of A, silu(gate) * up
     * with silu(g) = g / (1 + e^-g): up at offsetA (as without it), gate at
     * gateOffsetA, both strideA apart between batches and lda apart between
     * elements when transA. For m = 1 (the mat-vec: an LLM's down
     * projection reading its feed-forward's gate and up projections, one
     * dispatch fewer); other shapes, or with the mat-vec turned off
     * (KOMPUTE_ENV_DISABLE=matvec), are refused. In the int-dot mat-vec's
     * quantized-x mode with x whole, the operation computes and quantizes
     * x once, in a dispatch before the product, into a buffer it owns
     * (KOMPUTE_ENV_DISABLE=matvec-x-pass: in each workgroup instead). */
    bool swigluA = false;
    /** With swigluA: first element of the gate vector in A. */
    uint64_t gateOffsetA = 0;
    /** Ours: the row of A is RMS-normalized as the product reads it,
     * a[k] * w[k] / sqrt(mean(a^2) + normEps), w the fourth tensor of the
     * operation (eFloat, eHalf or eBFloat16; from element normOffset): an
     * LLM's RMSNorm inside the product that reads it, one dispatch fewer.
     * For m = 1 without transA or swigluA, B transposed, where the mat-vec
     * reads the whole row of A in each workgroup and sums its squares on
     * the way: the int-dot mat-vec's quantized-x mode (path
     * "matvec-int-dot" with Q8_0, Q4_0, Q4_K or Q5_K rows of whole 16-byte
     * chunks, see OpMatMul), and the row mode of float weights (f32, f16,
     * bf16) and of Q8_0/Q4_0 rows the mat-vec does not stage. Anything
     * else is refused, naming why (record OpRMSNorm and the product
     * instead). */
    bool normA = false;
    /** With normA: the norm's epsilon and its weights' first element. */
    ///@{
    float normEps = 1e-5f;
    uint64_t normOffset = 0;
    ///@}
    /** Ours: OpRoPECache's work on the row the product writes, in the same
     * dispatch: an LLM decode step's query, key and value projection that
     * also rotates the query and key heads and writes the keys and values
     * into the caches (one dispatch and one barrier fewer per layer). For
     * the mat-vec (m = 1, B transposed, batch 1, beta = 0, no swigluA; normA
     * may come with it) whose row of C, n = (heads + 2 kvHeads) * headDim
     * elements from offsetC, is one row of qkv as `rope` describes it:
     * rope.rows must be 1, rope.qkvOffset and rope.qkvRowStride are not
     * used (C's row is the row), and rope.mode must be RoPEMode::eNormal
     * (the pairs are neighbouring rows of the product), and the caches
     * eFloat or eHalf (bf16 caches are refused). The tensors
     * positions, keyCache and valueCache (then freqFactors and bias, where
     * rope says so) follow A, B, C and the norm's weights. Afterwards C and
     * the caches hold what OpMatMul then OpRoPECache on C would leave: the
     * query heads rotated in C, the key and value heads of C as the product
     * gives them, the keys rotated into the key cache and the values into
     * the value cache at row positions[rope.positionsOffset] (the bias added
     * to all three where given). Refused, naming why, where the mat-vec
     * does not run or the device has no subgroup shuffles. */
    bool ropeC = false;
    /** With ropeC: the rotation and the caches (see OpRoPECache). */
    RoPECacheParams rope;
    /** Ours, with ropeC: the same dispatch also computes the attention of
     * C's row, what OpAttention (rows = 1, causal) computes from the rotated
     * queries of C and the caches as ropeC leaves them: each query head h
     * attends to cache positions 0..positions[rope.positionsOffset]
     * (clamped to the caches' rows) of KV head h / (heads / kvHeads), with
     * scale attentionScale (0: 1 / sqrt(headDim)), into the operation's
     * last tensor (after ropeC's; eFloat or eHalf), heads * headDim
     * elements from attentionOffset. An LLM decode step's attention without
     * a dispatch and a barrier of its own: each KV head is attended by the
     * one workgroup that completes its rows, so its time grows with the
     * context (a step at a long context takes OpAttention, which splits the
     * context over many workgroups). Needs f16 caches whose offset and row
     * stride are multiples of 8 elements, headDim a multiple of 8 of at most
     * 128, at most 8 query heads per KV head, and a mat-vec configuration
     * whose workgroup rows divide headDim; refused, naming why, elsewhere,
     * with chained, or with KOMPUTE_ENV_DISABLE=matvec-attention. One
     * operation object is evaluated once at a time (its counters, as
     * OpAttention's). */
    bool attentionC = false;
    /** With attentionC: the scores' scale (0: 1 / sqrt(headDim)). */
    float attentionScale = 0.0f;
    /** With attentionC: the output's first element in its tensor. */
    uint64_t attentionOffset = 0;
    /** Ours: C is the SwiGLU of two products of A, silu(G) * U element by
     * element with silu(g) = g / (1 + e^-g), G = alpha * op(A) * Bg^T and
     * U = alpha * op(A) * Bu^T. B is transposed and holds upRowB + n rows
     * of k (from offsetB, ldb apart; strideB between batches): the gate's n
     * rows first, the up's n rows from row upRowB on (upRowB >= n). beta
     * must be 0. An LLM's prompt-step gate and up projections with the
     * SwiGLU after them: one dispatch fewer, and C the size of one product
     * where the two together wrote twice as much. With m = 1 (a decode
     * step's gate and up projections) the mat-vec takes it where it runs
     * the product in the int-dot build's quantized-x mode (path
     * "matvec-int-dot": Q8_0, Q4_0, Q4_K or Q5_K rows of whole 16-byte
     * chunks, batch 1) or in the float row mode (path "matvec": f32, f16 or
     * bf16 weights, batch 1); normA may come with it there, and in the
     * quantized-x mode so may quantizeC (KOMPUTE_ENV_DISABLE=matvec-glu
     * turns the mat-vec's off); elsewhere the GEMM kernels run it, and
     * normA or quantizeC with it are refused. */
    bool swigluC = false;
    /** With swigluC: the row of B where the up projection's rows start. */
    uint32_t upRowB = 0;
    /** Ours: the operation takes part in a dispatch chain, whose dispatches
     * are ordered by the shaders instead of by barriers (an LLM decode
     * step's products: no barrier drains the GPU between them, and each
     * product's first weights are in flight while the one before it ends;
     * docs/performance.md, fourteenth session). The chain's buffer is the
     * operation's last tensor (eUnsignedInt, at least 2 + 2 * slots
     * elements, zeroed before each submission: element 0 becomes 1 where a
     * wait gave up, and the submission's results are then wrong). Its
     * dispatches take chainSlots() slots from chainSlot on, and each
     * signals its slot once all its workgroups are done. For the mat-vec
     * only (m = 1); refused elsewhere, naming why. The synchronization
     * validation cannot see this ordering and reports it as hazards. */
    bool chained = false;
    /** With chained: the operation's first slot. */
    uint32_t chainSlot = 0;
    /** With chained: the first dispatch waits, in the shader, for the
     * dispatch of slot chainSlot - 1, which must be the dispatch recorded
     * just before it in the same sequence (the sequence then records no
     * barrier between them); false: the sequence orders it as any other
     * operation. */
    bool chainWaits = false;
    /** Ours, with swigluC on the int-dot mat-vec (see swigluC; m = 1,
     * batch 1, C eFloat, n a multiple of 32, offsetC a multiple of 4): C's
     * row of n is also written as int8 blocks, quantizedRowWords(n) words
     * after it (from offsetC + n), which a product with quantizedA reads as
     * its row of A: the decode step's down projection then copies its x
     * instead of computing and quantizing it in a dispatch of its own, one
     * dependent dispatch fewer per layer. The blocks are laid out as
     * quantizedA says. Refused, naming why, where the mat-vec does not take
     * swigluC. */
    bool quantizeC = false;
    /** Ours: A's one row (m = 1, not transposed, batch 1, k a multiple of
     * 32) is given as int8 blocks, as a product with quantizeC writes them,
     * quantizedRowWords(k) elements of an eFloat A from offsetA (a multiple
     * of 4): for each block of 32 elements 8 words of its int8 values q
     * (element 4j + b in byte b of word j), then for each block the f32
     * pair (d, d * sum q); element e of the row is d * q[e]. For the
     * int-dot mat-vec's quantized-x mode with the row whole in shared
     * memory (path "matvec-int-dot"); refused elsewhere, naming why, and
     * with swigluA, normA or chained. */
    bool quantizedA = false;
};

/** Elements (f32 words) of a row of k elements as int8 blocks
 * (MatMulParams::quantizeC and quantizedA; k a multiple of 32). */
inline uint64_t
quantizedRowWords(uint32_t k)
{
    return uint64_t(k) / 32 * 10;
}

/** The configuration an OpMatMul runs its kernel with, where a tuning
 * table could have chosen it (OpMatMul::tuning(); the README, "Tuning
 * tables"). */
struct MatMulTuning
{
    /** "matvec-qx" (the int-dot mat-vec's quantized-x mode), "coopmat"
     * (the cooperative-matrix GEMM) or "tiled" (the tiled GEMM); empty,
     * as the other two fields, for the mat-vec's other modes, which no
     * table tunes. */
    std::string kernel;
    /** The configuration in the tables' form, e.g. "256:16:2:1:0:4" for
     * the mat-vec or "128:128:64:64:32:1:1" for the cooperative-matrix
     * GEMM. */
    std::string config;
    /** Where it came from: "rules" (the library's choice for the device),
     * "table SOURCE (device 'NAME', driver D)" (an entry of the file
     * KOMPUTE_ENV_TUNING_FILE names or of a built-in table), or the
     * KOMPUTE_ENV_ variable that replaced it. */
    std::string source;
};

/**
 * Records C = alpha * op(A) * op(B) + beta * C.
 *   A: eFloat, eHalf or eBFloat16; B: the same, or eUnsignedChar GGUF blocks
 *   (formatB); C: eFloat or eHalf. All three live on one Manager; C is
 *   neither A nor B.
 * Every shape, type and size is checked here, before anything is recorded:
 * mistakes throw kp::Error saying what is wrong. Constructing the operation
 * builds its pipeline (shared between operations with the same kernel and
 * constants); recording it is one dispatch (two for swigluA in the
 * quantized-x mode: see MatMulParams::swigluA). beta = 0 never reads C.
 * path() names the kernel chosen for the device and shape: "tiled" (shared
 * memory, every device), "matvec" (one row or column of C: LLM decode),
 * "matvec-int-dot" (the same for Q8_0, Q4_0, Q4_K and Q5_K through
 * integer dot products, on devices that accelerate them;
 * KOMPUTE_ENV_DISABLE=matvec-float takes it wherever the device has them
 * at all),
 * "coopmat-nv", "coopmat-khr", "coopmat-khr-bf16" (cooperative matrices);
 * see the README's kernel table. tuning() says which configuration of
 * that kernel runs and where it came from (a per-device tuning table, the
 * rules, or a KOMPUTE_ENV_ knob).
 * Precision: products are accumulated in f32. An f32 x f32 product is
 * computed in f32 (tiled). Beside a 16-bit or quantized operand, the
 * cooperative-matrix paths round an f32 operand to f16 (to bf16 on the bf16
 * matrices that bf16 operands take) before multiplying; the int-dot mat-vec
 * rounds the activations to int8, with a scale per 32 values where the rows
 * of B are whole 16-byte chunks (Q8_0/Q4_0: k, ldb, strideB and offsetB
 * multiples of 256 weights; Q4_K, Q5_K: always; x quantized once per
 * workgroup into shared memory; KOMPUTE_ENV_DISABLE=matvec-qx turns that
 * off, and Q4_K, Q5_K back to the float mat-vec), else per 4 values; the
 * other paths multiply in f32.
 */
class OpMatMul : public KernelOp
{
  public:
    /** Checks a, b and c against `params` (kp::Error naming what is wrong)
     * and builds the pipeline of the path chosen for the device. */
    OpMatMul(std::shared_ptr<Tensor> a,
             std::shared_ptr<Tensor> b,
             std::shared_ptr<Tensor> c,
             const MatMulParams& params);
    /** The form Sequence::record<OpMatMul>({a, b, c}, params) builds;
     * with params.normA the tensors are {a, b, c, normWeights}; with
     * params.ropeC positions, keyCache, valueCache (freqFactors, bias)
     * follow, and with params.attentionC the attention's output after
     * them. */
    OpMatMul(const std::vector<std::shared_ptr<Memory>>& memObjects, const MatMulParams& params);
    ~OpMatMul() override;

    /** The parameters, with leading dimensions and strides resolved. */
    const MatMulParams& params() const { return mParams; }
    /** The configuration of its kernel and where it came from. */
    const MatMulTuning& tuning() const { return mTuning; }

  private:
    MatMulParams mParams;
    MatMulTuning mTuning;
};

} // namespace kp
