// SPDX-License-Identifier: Apache-2.0
// Bindings of the kernel library (include/kompute/kernels/): every
// operation takes its tensors as a list and its parameters as keyword
// arguments named as the C++ params fields in snake_case, e.g.
// kp.OpRMSNorm([x, w, y], rows=32, cols=4096, eps=1e-6); a nested params
// struct is a class of its own taking the same keywords (OpMatMul's rope,
// a kp.RoPECacheParams, as kp.OpRoPECache takes them).
#include "common.hpp"

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <tuple>

namespace kp {
namespace python {

namespace {

using namespace nb::literals;
using MemoryList = std::vector<std::shared_ptr<Memory>>;

// Operations are built with the GIL released: building creates pipelines.
const auto releaseGil = nb::call_guard<ReleaseGil>();
const auto keepGil = nb::call_guard<FlushLog>();

/** A new T(tensors, params) without the GIL, in place (nanobind's __init__). */
template<typename T, typename Params>
void
construct(T* self, const MemoryList& tensors, const Params& params)
{
    ReleaseGil release;
    new (self) T(tensors, params);
}

void
bindElementwise(nb::module_& m)
{
    nb::enum_<UnaryOp>(m, "UnaryOp", "The function of kp.OpUnary.")
      .value("cast", UnaryOp::eCast, "y = x, converted to y's dtype")
      .value("scale", UnaryOp::eScale, "y = scale * x")
      .value("relu", UnaryOp::eRelu, "y = max(x, 0)")
      .value("gelu", UnaryOp::eGelu, "y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))")
      .value("silu", UnaryOp::eSilu, "y = x / (1 + exp(-x))")
      .value("sigmoid", UnaryOp::eSigmoid, "y = 1 / (1 + exp(-x))")
      .value("tanh", UnaryOp::eTanh, "y = tanh(x)")
      .value("exp", UnaryOp::eExp, "y = exp(x)")
      .value("neg", UnaryOp::eNeg, "y = -x")
      .value("abs", UnaryOp::eAbs, "y = |x|")
      .value("sqrt", UnaryOp::eSqrt, "y = sqrt(x)")
      .value("square", UnaryOp::eSquare, "y = x * x");

    nb::enum_<BinaryOp>(m, "BinaryOp", "The arithmetic of kp.OpBinary.")
      .value("add", BinaryOp::eAdd, "y = a + b")
      .value("sub", BinaryOp::eSub, "y = a - b")
      .value("mul", BinaryOp::eMul, "y = a * b")
      .value("div", BinaryOp::eDiv, "y = a / b");

    nb::class_<OpUnary, KernelOp>(m,
                                  "OpUnary",
                                  "y[y_offset + i] = f(x[x_offset + i]) for i < count, with f given by "
                                  "`op` (kp.UnaryOp); x and y are float32, float16 or bfloat16 tensors, "
                                  "of one type or two (every op casts: op=kp.UnaryOp.cast is a pure "
                                  "cast). y may be x (in place).")
      .def(
        "__init__",
        [](OpUnary* self, const MemoryList& tensors, UnaryOp op, uint32_t count, float scale, uint64_t xOffset,
           uint64_t yOffset) {
            UnaryParams p;
            p.op = op;
            p.count = count;
            p.scale = scale;
            p.xOffset = xOffset;
            p.yOffset = yOffset;
            construct(self, tensors, p);
        },
        "tensors"_a,
        nb::kw_only(),
        "op"_a = UnaryOp::eCast,
        "count"_a = 0,
        "scale"_a = 1.0f,
        "x_offset"_a = 0,
        "y_offset"_a = 0,
        keepGil,
        "tensors: [x, y]. count = 0: all of y from y_offset. scale: the factor of op=scale. "
        "Raises kp.Error for bad tensors, shapes or types.");

    nb::class_<OpBinary, KernelOp>(m,
                                   "OpBinary",
                                   "y[i] = a[i] op b[i % b_count] for i < count (kp.BinaryOp); b_count < "
                                   "count broadcasts b over rows of b_count elements. a and b of one "
                                   "float type, y of any (float32, float16, bfloat16). y may be a or b.")
      .def(
        "__init__",
        [](OpBinary* self, const MemoryList& tensors, BinaryOp op, uint32_t count, uint32_t bCount,
           uint64_t aOffset, uint64_t bOffset, uint64_t yOffset) {
            BinaryParams p;
            p.op = op;
            p.count = count;
            p.bCount = bCount;
            p.aOffset = aOffset;
            p.bOffset = bOffset;
            p.yOffset = yOffset;
            construct(self, tensors, p);
        },
        "tensors"_a,
        nb::kw_only(),
        "op"_a = BinaryOp::eAdd,
        "count"_a = 0,
        "b_count"_a = 0,
        "a_offset"_a = 0,
        "b_offset"_a = 0,
        "y_offset"_a = 0,
        keepGil,
        "tensors: [a, b, y]. count = 0: all of y from y_offset; b_count = 0: count (must divide "
        "count).");

    nb::class_<OpFma, KernelOp>(m,
                                "OpFma",
                                "y[i] = a[i] * b[i % b_count] + c[i % c_count] (fused multiply-add); a, b "
                                "and c of one float type, y of any.")
      .def(
        "__init__",
        [](OpFma* self, const MemoryList& tensors, uint32_t count, uint32_t bCount, uint32_t cCount,
           uint64_t aOffset, uint64_t bOffset, uint64_t cOffset, uint64_t yOffset) {
            FmaParams p;
            p.count = count;
            p.bCount = bCount;
            p.cCount = cCount;
            p.aOffset = aOffset;
            p.bOffset = bOffset;
            p.cOffset = cOffset;
            p.yOffset = yOffset;
            construct(self, tensors, p);
        },
        "tensors"_a,
        nb::kw_only(),
        "count"_a = 0,
        "b_count"_a = 0,
        "c_count"_a = 0,
        "a_offset"_a = 0,
        "b_offset"_a = 0,
        "c_offset"_a = 0,
        "y_offset"_a = 0,
        keepGil,
        "tensors: [a, b, c, y]. Counts of 0: count (count = 0: all of y from y_offset).");

    nb::class_<OpSwiGLU, KernelOp>(m,
                                   "OpSwiGLU",
                                   "y[i] = silu(gate[i]) * up[i] (Llama's gated feed-forward); gate and up "
                                   "of one float type, y of any. With cols, count is rows of cols elements, each "
                                   "operand's rows its row stride apart (0: cols): gate and up can be the two "
                                   "halves of each row of one product.")
      .def(
        "__init__",
        [](OpSwiGLU* self, const MemoryList& tensors, uint32_t count, uint64_t gateOffset, uint64_t upOffset,
           uint64_t yOffset, uint32_t cols, uint32_t gateRowStride, uint32_t upRowStride, uint32_t yRowStride) {
            SwiGLUParams p;
            p.count = count;
            p.gateOffset = gateOffset;
            p.upOffset = upOffset;
            p.yOffset = yOffset;
            p.cols = cols;
            p.gateRowStride = gateRowStride;
            p.upRowStride = upRowStride;
            p.yRowStride = yRowStride;
            construct(self, tensors, p);
        },
        "tensors"_a,
        nb::kw_only(),
        "count"_a = 0,
        "gate_offset"_a = 0,
        "up_offset"_a = 0,
        "y_offset"_a = 0,
        "cols"_a = 0,
        "gate_row_stride"_a = 0,
        "up_row_stride"_a = 0,
        "y_row_stride"_a = 0,
        keepGil,
        "tensors: [gate, up, y]. count = 0: all of y from y_offset (without cols).");
}

void
bindRows(nb::module_& m)
{
    nb::enum_<ReduceOp>(m, "ReduceOp", "The reduction of kp.OpReduce.")
      .value("sum", ReduceOp::eSum, "sum of the row")
      .value("mean", ReduceOp::eMean, "mean of the row")
      .value("max", ReduceOp::eMax, "largest value of the row")
      .value("argmax", ReduceOp::eArgmax, "index of the largest value (the first on ties; NaN never wins)");

    nb::class_<OpReduce, KernelOp>(m,
                                   "OpReduce",
                                   "y[y_offset + r] = reduce(x[x_offset + r * x_row_stride + c] for c < cols) "
                                   "for r < rows. x: float32/float16/bfloat16; y: float32, or uint32 for "
                                   "op=argmax.")
      .def(
        "__init__",
        [](OpReduce* self, const MemoryList& tensors, ReduceOp op, uint32_t rows, uint32_t cols,
           uint32_t xRowStride, uint64_t xOffset, uint64_t yOffset, uint32_t argmaxGroups) {
            construct(self, tensors, ReduceParams{ op, rows, cols, xRowStride, xOffset, yOffset, argmaxGroups });
        },
        "tensors"_a,
        nb::kw_only(),
        "op"_a = ReduceOp::eSum,
        "rows"_a = 1,
        "cols"_a,
        "x_row_stride"_a = 0,
        "x_offset"_a = 0,
        "y_offset"_a = 0,
        "argmax_groups"_a = 0,
        keepGil,
        "tensors: [x, y]. x_row_stride = 0: cols. argmax_groups: for the argmax of one row, at most this many "
        "workgroups (0: the device's choice, up to 1024 on a GPU, 1 on a CPU device; 1: one workgroup).");

    nb::class_<OpSoftmax, KernelOp>(
      m,
      "OpSoftmax",
      "y = softmax(scale * x) along rows of cols elements, numerically stable (the row maximum is "
      "subtracted). With causal=True, row r keeps columns c <= (r % rows_per_matrix) + causal_shift "
      "and the others of y are 0 (rows_per_matrix = 0: rows). x and y of one float type; y may be x.")
      .def(
        "__init__",
        [](OpSoftmax* self, const MemoryList& tensors, uint32_t rows, uint32_t cols, float scale, bool causal,
           uint32_t rowsPerMatrix, uint32_t causalShift, uint32_t xRowStride, uint32_t yRowStride, uint64_t xOffset,
           uint64_t yOffset) {
            construct(self, tensors,
                      SoftmaxParams{ rows, cols, scale, causal, rowsPerMatrix, causalShift, xRowStride, yRowStride,
                                     xOffset, yOffset });
        },
        "tensors"_a,
        nb::kw_only(),
        "rows"_a = 1,
        "cols"_a,
        "scale"_a = 1.0f,
        "causal"_a = false,
        "rows_per_matrix"_a = 0,
        "causal_shift"_a = 0,
        "x_row_stride"_a = 0,
        "y_row_stride"_a = 0,
        "x_offset"_a = 0,
        "y_offset"_a = 0,
        keepGil,
        "tensors: [x, y]. Row strides of 0: cols.");

    nb::class_<OpRMSNorm, KernelOp>(m,
                                    "OpRMSNorm",
                                    "y[r, c] = x[r, c] / sqrt(mean(x[r, :]^2) + eps) * weight[c]. x and y "
                                    "float32, float16 or bfloat16 (one type or two), weight float32; y may "
                                    "be x.")
      .def(
        "__init__",
        [](OpRMSNorm* self, const MemoryList& tensors, uint32_t rows, uint32_t cols, float eps, uint32_t xRowStride,
           uint32_t yRowStride, uint64_t xOffset, uint64_t weightOffset, uint64_t yOffset, uint32_t heads,
           uint32_t weightHeadStride) {
            construct(self, tensors,
                      RMSNormParams{ rows, cols, eps, xRowStride, yRowStride, xOffset, weightOffset, yOffset, heads,
                                     weightHeadStride });
        },
        "tensors"_a,
        nb::kw_only(),
        "rows"_a = 1,
        "cols"_a,
        "eps"_a = 1e-5f,
        "x_row_stride"_a = 0,
        "y_row_stride"_a = 0,
        "x_offset"_a = 0,
        "weight_offset"_a = 0,
        "y_offset"_a = 0,
        "heads"_a = 1,
        "weight_head_stride"_a = 0,
        keepGil,
        "tensors: [x, weight, y] or [x, y] (no weight). With heads > 1 each row holds `heads` vectors of "
        "`cols`, cols apart, each normalized on its own (Qwen3's query and key norms), head h with the "
        "weights from weight_offset + h * weight_head_stride (0: one weight for all). Row strides of 0: "
        "heads * cols.");

    nb::class_<OpLayerNorm, KernelOp>(m,
                                      "OpLayerNorm",
                                      "y[r, c] = (x[r, c] - mean) / sqrt(var + eps) * weight[c] + bias[c] with "
                                      "the row's mean and biased variance. Types as OpRMSNorm.")
      .def(
        "__init__",
        [](OpLayerNorm* self, const MemoryList& tensors, uint32_t rows, uint32_t cols, float eps, uint32_t xRowStride,
           uint32_t yRowStride, uint64_t xOffset, uint64_t weightOffset, uint64_t biasOffset, uint64_t yOffset) {
            construct(self, tensors,
                      LayerNormParams{ rows, cols, eps, xRowStride, yRowStride, xOffset, weightOffset, biasOffset,
                                       yOffset });
        },
        "tensors"_a,
        nb::kw_only(),
        "rows"_a = 1,
        "cols"_a,
        "eps"_a = 1e-5f,
        "x_row_stride"_a = 0,
        "y_row_stride"_a = 0,
        "x_offset"_a = 0,
        "weight_offset"_a = 0,
        "bias_offset"_a = 0,
        "y_offset"_a = 0,
        keepGil,
        "tensors: [x, weight, bias, y], [x, weight, y] or [x, y]. Row strides of 0: cols.");
}

/** RoPECacheParams from its fields in order: what kp.RoPECacheParams and
 * kp.OpRoPECache make of their keyword arguments (ropeCacheArgs). */
RoPECacheParams
ropeCacheParams(uint32_t rows, uint32_t heads, uint32_t kvHeads, uint32_t headDim, uint32_t ropeDims, float theta,
                float freqScale, RoPEMode mode, bool hasFreqFactors, bool hasBias, uint32_t qkvRowStride,
                uint64_t qkvOffset, uint32_t cacheRowStride, uint64_t cacheOffset, uint64_t positionsOffset,
                uint64_t freqFactorsOffset, uint64_t biasOffset)
{
    return RoPECacheParams{ rows, heads, kvHeads, headDim, ropeDims, theta, freqScale, mode, hasFreqFactors,
                            hasBias, qkvRowStride, qkvOffset, cacheRowStride, cacheOffset, positionsOffset,
                            freqFactorsOffset, biasOffset };
}

/** The __init__s of kp.RoPECacheParams and kp.OpRoPECache, taking
 * ropeCacheParams' arguments. */
template<typename Make>
struct RoPECacheInits;
template<typename... Fields>
struct RoPECacheInits<RoPECacheParams (*)(Fields...)>
{
    static void params(RoPECacheParams* self, Fields... fields)
    {
        new (self) RoPECacheParams(ropeCacheParams(fields...));
    }
    static void op(OpRoPECache* self, const MemoryList& tensors, Fields... fields)
    {
        construct(self, tensors, ropeCacheParams(fields...));
    }
};
using RoPECacheInit = RoPECacheInits<decltype(&ropeCacheParams)>;

/** ropeCacheParams' arguments as keywords (after kp.RoPEMode is bound: a
 * default is one). */
auto
ropeCacheArgs()
{
    return std::make_tuple(nb::kw_only(),
                           "rows"_a = 1,
                           "heads"_a = 1,
                           "kv_heads"_a = 1,
                           "head_dim"_a,
                           "rope_dims"_a = 0,
                           "theta"_a = 10000.0f,
                           "freq_scale"_a = 1.0f,
                           "mode"_a = RoPEMode::eNormal,
                           "has_freq_factors"_a = false,
                           "has_bias"_a = false,
                           "qkv_row_stride"_a = 0,
                           "qkv_offset"_a = 0,
                           "cache_row_stride"_a = 0,
                           "cache_offset"_a = 0,
                           "positions_offset"_a = 0,
                           "freq_factors_offset"_a = 0,
                           "bias_offset"_a = 0);
}

void
bindTransformer(nb::module_& m)
{
    nb::enum_<RoPEMode>(m, "RoPEMode", "The pairs kp.OpRoPE rotates.")
      .value("normal", RoPEMode::eNormal, "adjacent pairs (x[2i], x[2i+1]): GGUF's llama layout")
      .value("neox", RoPEMode::eNeoX, "(x[i], x[i + rope_dims/2]): GPT-NeoX / Hugging Face layout");

    nb::class_<OpRoPE, KernelOp>(
      m,
      "OpRoPE",
      "Rotary position embedding of x laid out [rows][heads][head_dim] (row r at x_offset + r * "
      "x_row_stride): pair i < rope_dims/2 of each head of row r turns by positions[r] * freq_scale * "
      "theta^(-2i / rope_dims); dimensions from rope_dims on are copied. positions is a uint32 tensor "
      "read when the sequence runs (update it between evals). x and y float32 or float16; y may be x.")
      .def(
        "__init__",
        [](OpRoPE* self, const MemoryList& tensors, uint32_t rows, uint32_t heads, uint32_t headDim,
           uint32_t ropeDims, float theta, float freqScale, RoPEMode mode, uint32_t xRowStride, uint32_t yRowStride,
           uint64_t xOffset, uint64_t yOffset, uint64_t positionsOffset, uint64_t freqFactorsOffset) {
            construct(self, tensors,
                      RoPEParams{ rows, heads, headDim, ropeDims, theta, freqScale, mode, xRowStride, yRowStride,
                                  xOffset, yOffset, positionsOffset, freqFactorsOffset });
        },
        "tensors"_a,
        nb::kw_only(),
        "rows"_a = 1,
        "heads"_a = 1,
        "head_dim"_a,
        "rope_dims"_a = 0,
        "theta"_a = 10000.0f,
        "freq_scale"_a = 1.0f,
        "mode"_a = RoPEMode::eNormal,
        "x_row_stride"_a = 0,
        "y_row_stride"_a = 0,
        "x_offset"_a = 0,
        "y_offset"_a = 0,
        "positions_offset"_a = 0,
        "freq_factors_offset"_a = 0,
        keepGil,
        "tensors: [x, positions, y], or [x, positions, y, freq_factors] where a float32 tensor of "
        "rope_dims/2 divisors (Llama 3.1's rope_freqs) divides pair i's angle by freq_factors[i]. "
        "rope_dims = 0: head_dim; row strides of 0: heads * head_dim.");

    nb::class_<RoPECacheParams> ropeCacheParamsClass(
      m,
      "RoPECacheParams",
      "kp.OpRoPECache's parameters, for kp.OpMatMul(rope_c=True, rope=...): the same keyword arguments and "
      "defaults as kp.OpRoPECache, and a field of each (RoPECacheParams in C++).");
    ropeCacheParamsClass.def_rw("rows", &RoPECacheParams::rows, "tokens (rows of qkv)")
      .def_rw("heads", &RoPECacheParams::heads, "query heads per row")
      .def_rw("kv_heads", &RoPECacheParams::kvHeads, "key heads per row, and value heads")
      .def_rw("head_dim", &RoPECacheParams::headDim, "values per head")
      .def_rw("rope_dims", &RoPECacheParams::ropeDims, "even, <= head_dim; 0: head_dim")
      .def_rw("theta", &RoPECacheParams::theta, "the frequency base")
      .def_rw("freq_scale", &RoPECacheParams::freqScale, "positions are multiplied by it (linear scaling)")
      .def_rw("mode", &RoPECacheParams::mode, "which values form pairs")
      .def_rw("has_freq_factors", &RoPECacheParams::hasFreqFactors, "a freq_factors tensor follows the caches")
      .def_rw("has_bias", &RoPECacheParams::hasBias, "a bias tensor follows (after freq_factors when both)")
      .def_rw("qkv_row_stride", &RoPECacheParams::qkvRowStride, "0: (heads + 2 kv_heads) * head_dim")
      .def_rw("qkv_offset", &RoPECacheParams::qkvOffset, "first element of qkv")
      .def_rw("cache_row_stride", &RoPECacheParams::cacheRowStride,
              "elements between cache rows; 0: kv_heads * head_dim")
      .def_rw("cache_offset", &RoPECacheParams::cacheOffset, "first element of row 0 of either cache")
      .def_rw("positions_offset", &RoPECacheParams::positionsOffset, "first element of positions")
      .def_rw("freq_factors_offset", &RoPECacheParams::freqFactorsOffset,
              "first element of freq_factors (when given)")
      .def_rw("bias_offset", &RoPECacheParams::biasOffset, "first element of bias (when given)");
    nb::class_<OpRoPECache, KernelOp> ropeCache(
      m,
      "OpRoPECache",
      "RoPE and the KV-cache write of a transformer layer in one dispatch. qkv is [rows][heads + 2 kv_heads]"
      "[head_dim] (query, key, value heads; row r at qkv_offset + r * qkv_row_stride): the query heads are "
      "rotated in place, the rotated key heads go to row positions[r] of key_cache and the value heads to "
      "row positions[r] of value_cache (rows [kv_heads][head_dim] at cache_offset + positions[r] * "
      "cache_row_stride; a row that would not fit is skipped); qkv's key and value heads are left as they "
      "were. Rotation as kp.OpRoPE. With a bias (float32, (heads + 2 kv_heads) * head_dim values) it is "
      "added to every row first. qkv float32 or float16; caches float32, float16 or bfloat16 (one type).");
    // Both take RoPECacheParams' fields as keyword arguments (ropeCacheArgs).
    std::apply(
      [&](const auto&... args) {
          ropeCacheParamsClass.def("__init__", &RoPECacheInit::params, args...,
                                   "The fields as keyword arguments (head_dim required).");
          ropeCache.def("__init__", &RoPECacheInit::op, "tensors"_a, args..., keepGil,
                        "tensors: [qkv, positions, key_cache, value_cache], then freq_factors if has_freq_factors, "
                        "then bias if has_bias. rope_dims = 0: head_dim; qkv_row_stride = 0: (heads + 2 kv_heads) "
                        "* head_dim; cache_row_stride = 0: kv_heads * head_dim.");
      },
      ropeCacheArgs());

    nb::class_<OpSetRows, KernelOp>(
      m,
      "OpSetRows",
      "dst[dst_offset + positions[r] * dst_row_stride + c] = src[src_offset + r * src_row_stride + c], "
      "converted (src float32/float16 -> dst float32/float16/bfloat16): the KV-cache write. positions "
      "(uint32) is read when the sequence runs; a row that would not fit in dst is skipped.")
      .def(
        "__init__",
        [](OpSetRows* self, const MemoryList& tensors, uint32_t rows, uint32_t cols, uint32_t dstRowStride,
           uint64_t dstOffset, uint32_t srcRowStride, uint64_t srcOffset, uint64_t positionsOffset) {
            construct(self, tensors,
                      SetRowsParams{ rows, cols, dstRowStride, dstOffset, srcRowStride, srcOffset, positionsOffset });
        },
        "tensors"_a,
        nb::kw_only(),
        "rows"_a = 1,
        "cols"_a,
        "dst_row_stride"_a = 0,
        "dst_offset"_a = 0,
        "src_row_stride"_a = 0,
        "src_offset"_a = 0,
        "positions_offset"_a = 0,
        keepGil,
        "tensors: [src, dst, positions]. Row strides of 0: cols.");

    nb::enum_<AttentionPath>(m, "AttentionPath", "The kernel kp.OpAttention uses.")
      .value("auto", AttentionPath::eAuto, "decode for up to 4 query rows, prefill above")
      .value("decode", AttentionPath::eDecode, "split over the context; the last chunk to finish merges (one dispatch)")
      .value("prefill", AttentionPath::ePrefill, "tiled flash-attention kernel");

    nb::class_<OpAttention, KernelOp>(
      m,
      "OpAttention",
      "out[r, h] = softmax_p(scale * q[r, h] . K[p, h // G]) V[p, h // G] with G = heads // kv_heads "
      "(grouped-query attention). q: float32 [rows][heads][head_dim]; out: the same shape, float32, or "
      "float16 where the caches are float16; caches: float16 or float32, position-major [kv_capacity][kv_heads][head_dim] (position p, KV head g at kv_offset + "
      "p * kv_row_stride + g * head_dim); positions: uint32, one per query row, read when the sequence "
      "runs. causal=True: row r attends to positions 0..positions[r]; otherwise every row attends to "
      "0..positions[rows - 1]. Positions past kv_capacity - 1 are clamped. head_dim: a multiple of 4 up "
      "to 256; scale = 0: 1 / sqrt(head_dim).")
      .def(
        "__init__",
        [](OpAttention* self, const MemoryList& tensors, uint32_t rows, uint32_t heads, uint32_t kvHeads,
           uint32_t headDim, uint32_t kvCapacity, float scale, bool causal, uint32_t kvRowStride, uint64_t kvOffset,
           uint32_t qRowStride, uint32_t outRowStride, uint64_t qOffset, uint64_t outOffset, uint64_t positionsOffset,
           AttentionPath path, uint32_t decodeChunk, uint32_t prefillKvTile, uint32_t prefillSubgroups,
           bool prefillPrefetch) {
            construct(self, tensors,
                      AttentionParams{ rows, heads, kvHeads, headDim, kvCapacity, scale, causal, kvRowStride, kvOffset,
                                       qRowStride, outRowStride, qOffset, outOffset, positionsOffset, path,
                                       decodeChunk, prefillKvTile, prefillSubgroups, prefillPrefetch });
        },
        "tensors"_a,
        nb::kw_only(),
        "rows"_a = 1,
        "heads"_a,
        "kv_heads"_a,
        "head_dim"_a,
        "kv_capacity"_a,
        "scale"_a = 0.0f,
        "causal"_a = true,
        "kv_row_stride"_a = 0,
        "kv_offset"_a = 0,
        "q_row_stride"_a = 0,
        "out_row_stride"_a = 0,
        "q_offset"_a = 0,
        "out_offset"_a = 0,
        "positions_offset"_a = 0,
        "path"_a = AttentionPath::eAuto,
        "decode_chunk"_a = 0,
        "prefill_kv_tile"_a = 0,
        "prefill_subgroups"_a = 0,
        "prefill_prefetch"_a = false,
        keepGil,
        "tensors: [q, k_cache, v_cache, positions, out]. decode_chunk: cache positions per workgroup on "
        "the decode path (a power of two from 16 to 256; 0: chosen from the shape). prefill_kv_tile (32 "
        "or 64), prefill_subgroups (1, 2, 4 or 8), prefill_prefetch: a variant of the cooperative-matrix "
        "prefill, which the first two ask for on devices that have it; on NVIDIA devices it is the default "
        "for 64 rows or more (see AttentionParams in C++).");
}


// --- The matrix kernels (OpMatMul, OpGetRows) and GGUF block codecs ----------

// The bytes of `values` as numpy gives them in a contiguous array of
// `dtype` (kp.quantize, kp.dequantize, kp.group_blocks).
nb::bytes
contiguousBytes(const ArrayLike& values, const char* dtype)
{
    nb::module_ np = nb::module_::import_("numpy");
    return nb::cast<nb::bytes>(np.attr("ascontiguousarray")(values.object, nb::arg("dtype") = dtype).attr("tobytes")());
}

// A new numpy array of `dtype` holding a copy of `size` bytes from `data`.
NdArray
arrayOfBytes(const void* data, size_t size, const char* dtype)
{
    nb::module_ np = nb::module_::import_("numpy");
    nb::bytes copy(static_cast<const char*>(data), size);
    return NdArray{ np.attr("frombuffer")(copy, nb::arg("dtype") = dtype).attr("copy")() };
}

void
bindMatMul(nb::module_& m)
{
    nb::class_<OpMatMul, KernelOp>(
      m,
      "OpMatMul",
      "C = alpha * op(A) @ op(B) + beta * C, batched, accumulated in float32. A: float32, float16 or "
      "bfloat16; B: the same, or a uint8 tensor of GGUF blocks (format_b, stored [n][k], trans_b=True); "
      "C: float32 or float16. Row-major matrices inside 1-D tensors; leading dimensions, strides and "
      "offsets count elements (weights for quantized B); 0 means packed. path() names the kernel chosen "
      "('tiled', 'matvec', 'matvec-int-dot', 'coopmat-nv', 'coopmat-khr', 'coopmat-khr-bf16'). The fused "
      "forms of an LLM's layers (swiglu_a, norm_a, rope_c, swiglu_c; see __init__) save a dispatch each; "
      "where one does not apply (shape, path, device) it is refused with a kp.Error naming why.")
      .def(
        "__init__",
        [](OpMatMul* self, const MemoryList& tensors, uint32_t m, uint32_t n, uint32_t k, bool transA, bool transB,
           float alpha, float beta, uint32_t lda, uint32_t ldb, uint32_t ldc, uint32_t batch, uint64_t strideA,
           uint64_t strideB, uint64_t strideC, uint64_t offsetA, uint64_t offsetB, uint64_t offsetC,
           WeightFormat formatB, bool swigluA, uint64_t gateOffsetA, bool normA, float normEps, uint64_t normOffset,
           bool ropeC, const RoPECacheParams* rope, bool swigluC, uint32_t upRowB, bool quantizeC, bool quantizedA) {
            if (ropeC && !rope) {
                throw Error("OpMatMul: rope_c needs rope=kp.RoPECacheParams(...) (the rotation and the caches)");
            }
            MatMulParams p;
            p.m = m;
            p.n = n;
            p.k = k;
            p.transA = transA;
            p.transB = transB;
            p.alpha = alpha;
            p.beta = beta;
            p.lda = lda;
            p.ldb = ldb;
            p.ldc = ldc;
            p.batch = batch;
            p.strideA = strideA;
            p.strideB = strideB;
            p.strideC = strideC;
            p.offsetA = offsetA;
            p.offsetB = offsetB;
            p.offsetC = offsetC;
            p.formatB = formatB;
            p.swigluA = swigluA;
            p.gateOffsetA = gateOffsetA;
            p.normA = normA;
            p.normEps = normEps;
            p.normOffset = normOffset;
            p.ropeC = ropeC;
            if (rope) {
                p.rope = *rope;
            }
            p.swigluC = swigluC;
            p.upRowB = upRowB;
            p.quantizeC = quantizeC;
            p.quantizedA = quantizedA;
            construct(self, tensors, p);
        },
        "tensors"_a,
        nb::kw_only(),
        "m"_a,
        "n"_a,
        "k"_a,
        "trans_a"_a = false,
        "trans_b"_a = false,
        "alpha"_a = 1.0f,
        "beta"_a = 0.0f,
        "lda"_a = 0,
        "ldb"_a = 0,
        "ldc"_a = 0,
        "batch"_a = 1,
        "stride_a"_a = 0,
        "stride_b"_a = 0,
        "stride_c"_a = 0,
        "offset_a"_a = 0,
        "offset_b"_a = 0,
        "offset_c"_a = 0,
        "format_b"_a = WeightFormat::eNone,
        "swiglu_a"_a = false,
        "gate_offset_a"_a = 0,
        "norm_a"_a = false,
        "norm_eps"_a = 1e-5, // (double: the signature shows 1e-05)
        "norm_offset"_a = 0,
        "rope_c"_a = false,
        "rope"_a.none() = nb::none(),
        "swiglu_c"_a = false,
        "up_row_b"_a = 0,
        "quantize_c"_a = false,
        "quantized_a"_a = false,
        keepGil,
        "tensors: [a, b, c]; with norm_a the norm's weights follow ([a, b, c, norm_weights]); with rope_c "
        "kp.OpRoPECache's tensors follow those: positions, key_cache, value_cache, then freq_factors if "
        "rope.has_freq_factors, then bias if rope.has_bias.\n\n"
        "The fused forms (MatMulParams in C++):\n"
        "swiglu_a: A's row is silu(gate) * up, up at offset_a (as without it), the gate at gate_offset_a "
        "(both stride_a apart between batches, lda apart between elements with trans_a). m = 1 only, on the "
        "mat-vec: an LLM's down projection.\n"
        "norm_a: A's row is RMS-normalized as the product reads it, a * w / sqrt(mean(a^2) + norm_eps), w "
        "the norm's weights (float32, float16 or bfloat16) from element norm_offset. m = 1 without trans_a "
        "or swiglu_a, trans_b, on the mat-vec modes that read the whole row of A (float weights; Q8_0/Q4_0 "
        "rows the mat-vec does not stage; the int-dot mat-vec's quantized-x mode).\n"
        "rope_c: kp.OpRoPECache's work on C's row in the same dispatch, as rope (a kp.RoPECacheParams) "
        "describes it: the query heads rotated in C, the rotated keys and the values written to the caches "
        "(float32 or float16) at row positions[rope.positions_offset]. C's row of n = (heads + 2 kv_heads) "
        "* head_dim from offset_c is the qkv row (rope.qkv_offset and rope.qkv_row_stride are not used); "
        "rope.rows = 1 and rope.mode normal. m = 1, trans_b, batch 1, beta 0, no swiglu_a (norm_a may come "
        "with it), on the mat-vec of a device with subgroup shuffles.\n"
        "swiglu_c: C = silu(G) * U element by element, G and U = alpha * op(A) times the gate's n rows of B "
        "(from its first row) and the up's n rows (from row up_row_b >= n), transposed: B holds up_row_b + n "
        "rows of k. trans_b and beta 0, on the GEMM kernels: an LLM's prompt-step gate and up projections. "
        "With m = 1 the int-dot mat-vec's quantized-x mode takes it where it runs the product (path "
        "'matvec-int-dot'; norm_a may come with it there), else the GEMM kernels.\n"
        "quantize_c: with swiglu_c on the int-dot mat-vec (m = 1, batch 1, C float32, n a multiple of 32, "
        "offset_c a multiple of 4), C's row is also written as int8 blocks after it, kp.quantized_row_words(n) "
        "elements from offset_c + n: for each block of 32, 8 words of its int8 values (element 4j + b in byte "
        "b of word j), then for each block the float32 pair (d, d * sum q); element e is d * q[e]. An LLM "
        "decode step's gate and up projections, whose down projection reads the blocks (quantized_a).\n"
        "quantized_a: A's row (m = 1, batch 1, k a multiple of 32) is given as such blocks, from offset_a (a "
        "multiple of 4) of a float32 A; for the int-dot mat-vec's quantized-x mode with the row whole in "
        "shared memory; no swiglu_a or norm_a.")
      .def(
        "tuning",
        [](const OpMatMul& self) {
            const MatMulTuning& t = self.tuning();
            nb::dict d;
            d["kernel"] = t.kernel;
            d["config"] = t.config;
            d["source"] = t.source;
            return d;
        },
        keepGil,
        "The configuration its kernel runs with, and where it came from (kp::MatMulTuning in C++): a dict "
        "with 'kernel' ('matvec-qx', 'coopmat' or 'tiled'; '' for the mat-vec's other modes, as the other "
        "two), 'config' (in the form of the tuning tables, e.g. '256:16:2:1:0:4') and 'source' ('rules', "
        "'table FILE (device ..., driver ...)' for an entry of the file KOMPUTE_ENV_TUNING_FILE names or of "
        "a built-in table, or the KOMPUTE_ENV_ variable that replaced it).");
    m.def("quantized_row_words", &quantizedRowWords, "k"_a,
          "Elements (float32 words) of a row of k elements as int8 blocks (OpMatMul's quantize_c and "
          "quantized_a; k a multiple of 32).");

    nb::class_<OpGetRows, KernelOp>(m,
                                    "OpGetRows",
                                    "out[i, :] = table[ids[i], :] as float32 (an embedding lookup): table float32, "
                                    "float16, bfloat16 or GGUF blocks (format_table); ids uint32, read on the "
                                    "device at each evaluation (an id past the table gives NaN).")
      .def(
        "__init__",
        [](OpGetRows* self, const MemoryList& tensors, uint32_t rows, uint32_t cols, WeightFormat formatTable,
           uint32_t tableStride, uint32_t outStride, uint64_t tableOffset, uint64_t idsOffset, uint64_t outOffset) {
            construct(self, tensors,
                      GetRowsParams{ rows, cols, formatTable, tableStride, outStride, tableOffset, idsOffset, outOffset });
        },
        "tensors"_a,
        nb::kw_only(),
        "rows"_a,
        "cols"_a,
        "format_table"_a = WeightFormat::eNone,
        "table_stride"_a = 0,
        "out_stride"_a = 0,
        "table_offset"_a = 0,
        "ids_offset"_a = 0,
        "out_offset"_a = 0,
        keepGil,
        "tensors: [table, ids, out]. Strides of 0: cols.");

    m.def(
      "quantize",
      [](WeightFormat format, const ArrayLike& values) {
          nb::bytes raw = contiguousBytes(values, "float32");
          std::vector<float> floats(raw.size() / sizeof(float));
          std::memcpy(floats.data(), raw.c_str(), floats.size() * sizeof(float));
          std::vector<uint8_t> blocks = kp::quantize(format, floats.data(), floats.size());
          return arrayOfBytes(blocks.data(), blocks.size(), "uint8");
      },
      "format"_a,
      "values"_a,
      keepGil,
      "GGUF blocks (uint8) of `values` (whole blocks: a multiple of 32 floats, of 256 for the K-quants and "
      "IQ4_XS): Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 rounded as ggml's reference quantizer, the other formats by a "
      "simple quantizer of ours (the scales that span each sub-block, then the nearest level).");
    m.def(
      "dequantize",
      [](WeightFormat format, const ArrayLike& blocks) {
          nb::bytes raw = contiguousBytes(blocks, "uint8");
          uint32_t size = blockBytes(format);
          if (size == 0 || raw.size() % size != 0) {
              throw Error(logger::format("kp.dequantize: {} bytes are not whole {} blocks", raw.size(), toString(format)));
          }
          std::vector<float> values =
            kp::dequantize(format, reinterpret_cast<const uint8_t*>(raw.c_str()), raw.size() / size);
          return arrayOfBytes(values.data(), values.size() * sizeof(float), "float32");
      },
      "format"_a,
      "blocks"_a,
      keepGil,
      "The float32 weights of GGUF blocks (uint8, whole blocks).");
    m.def(
      "group_blocks",
      [](WeightFormat format, const ArrayLike& blocks) {
          nb::bytes raw = contiguousBytes(blocks, "uint8");
          std::vector<uint8_t> grouped =
            kp::groupBlocks(format, reinterpret_cast<const uint8_t*>(raw.c_str()), raw.size());
          return arrayOfBytes(grouped.data(), grouped.size(), "uint8");
      },
      "format"_a,
      "blocks"_a,
      keepGil,
      "Q8_0 or Q4_0 blocks (uint8, a multiple of 8 blocks) regrouped as q8_0x8 or q4_0x8 (the same weights, "
      "each group's 8 scales first): what the mat-vec loads coalesced.");
}

} // namespace

void
bindKernels(nb::module_& m)
{
    nb::enum_<WeightFormat>(m,
                            "WeightFormat",
                            "How a weight tensor stores its values: none (its own dtype) or a GGUF "
                            "block format in a uint8 tensor.")
      .value("none", WeightFormat::eNone, "the tensor's own dtype (float32, float16, bfloat16)")
      .value("q8_0", WeightFormat::eQ8_0, "GGUF Q8_0: 34-byte blocks of 32 weights")
      .value("q4_0", WeightFormat::eQ4_0, "GGUF Q4_0: 18-byte blocks of 32 weights")
      .value("q4_1", WeightFormat::eQ4_1, "GGUF Q4_1: 20-byte blocks of 32 weights")
      .value("q5_0", WeightFormat::eQ5_0, "GGUF Q5_0: 22-byte blocks of 32 weights")
      .value("q5_1", WeightFormat::eQ5_1, "GGUF Q5_1: 24-byte blocks of 32 weights")
      .value("q2_k", WeightFormat::eQ2_K, "GGUF Q2_K: 84-byte super-blocks of 256 weights")
      .value("q3_k", WeightFormat::eQ3_K, "GGUF Q3_K: 110-byte super-blocks of 256 weights")
      .value("q4_k", WeightFormat::eQ4_K, "GGUF Q4_K: 144-byte super-blocks of 256 weights")
      .value("q5_k", WeightFormat::eQ5_K, "GGUF Q5_K: 176-byte super-blocks of 256 weights")
      .value("q6_k", WeightFormat::eQ6_K, "GGUF Q6_K: 210-byte super-blocks of 256 weights")
      .value("iq4_nl", WeightFormat::eIQ4_NL, "GGUF IQ4_NL: 18-byte blocks of 32 weights (non-linear levels)")
      .value("iq4_xs", WeightFormat::eIQ4_XS, "GGUF IQ4_XS: 136-byte super-blocks of 256 weights")
      .value("q8_0x8", WeightFormat::eQ8_0X8,
             "ours: 8 Q8_0 blocks grouped, their scales first (272 bytes per 256 weights; group_blocks)")
      .value("q4_0x8", WeightFormat::eQ4_0X8,
             "ours: 8 Q4_0 blocks grouped, their scales first (144 bytes per 256 weights; group_blocks)");

    nb::class_<KernelOp, OpBase>(m,
                                 "KernelOp",
                                 "Base of the kernel library's operations: built-in shaders dispatched "
                                 "over tensors, checked when the operation is built.")
      .def("name", &KernelOp::name, keepGil, "The operation's name, e.g. 'OpRMSNorm'.")
      .def("path", &KernelOp::path, keepGil,
           "The implementation chosen for this device and these parameters, e.g. 'subgroup' or "
           "'shared-memory'. KOMPUTE_ENV_DISABLE=subgroup,... (read when an operation is built) "
           "turns fast paths off.")
      .def("algorithms", &KernelOp::algorithms, keepGil, "The algorithms it dispatches, in order.");

    bindElementwise(m);
    bindRows(m);
    bindTransformer(m);
    bindMatMul(m);
}

} // namespace python
} // namespace kp
