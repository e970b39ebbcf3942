// SPDX-License-Identifier: Apache-2.0
#include "kompute/kernels/MatMul.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>

#include "kernels/CoopmatRewrite.hpp"
#include "kernels/KernelSupport.hpp"
#include "kernels/MatMulConfig.hpp"
#include "kernels/MatMulDevice.hpp"
#include "kernels/MatMulTuning.hpp"
#include "kernels/RoPECache.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using logger::format;
using namespace kernels;
using namespace kernels::matmul;

namespace {

constexpr const char* kOp = "OpMatMul";

uint32_t
elementType(const Checker& check, const Memory& tensor, const char* name, bool allowQuantBytes, WeightFormat weightFormat)
{
    using DT = Memory::DataTypes;
    DT type = tensor.dataType();
    if (weightFormat != WeightFormat::eNone && allowQuantBytes) {
        if (type != DT::eUnsignedChar) {
            check.fail(format("formatB is {}, so B must be an eUnsignedChar tensor of GGUF blocks, not {}",
                        toString(weightFormat),
                        Memory::toString(type)));
        }
        return quantElementType(weightFormat);
    }
    switch (type) {
        case DT::eFloat: return kF32;
        case DT::eHalf: return kF16;
        case DT::eBFloat16: return kBF16;
        default: break;
    }
    check.fail(format("{} holds {} elements; it must be eFloat, eHalf or eBFloat16{}",
                name,
                Memory::toString(type),
                allowQuantBytes ? " (or GGUF blocks, with formatB)" : ""));
}

// One operand stored as `batch` matrices of rows x cols, `ld` apart within a
// matrix and `stride` apart between them, from `offset`: resolves 0 (packed)
// and checks that the tensor covers it. Returns the resolved (ld, stride).
void
resolveOperand(const Checker& check,
               const char* name,
               uint64_t elements,
               uint32_t rows,
               uint32_t cols,
               uint32_t batch,
               uint32_t& ld,
               uint64_t& stride,
               uint64_t offset,
               const char* unit)
{
    if (ld == 0) {
        ld = cols;
    }
    if (ld < cols) {
        check.fail(format("the leading dimension of {} is {}, less than the {} {} of a row", name, ld, cols, unit));
    }
    uint64_t matrix = kernels::rowsExtent(rows, cols, ld);
    if (stride == 0) {
        stride = uint64_t(rows) * ld;
    }
    if (batch > 1 && stride < matrix) {
        check.fail(format("the batch stride of {} ({} {}) is less than one matrix ({} {}): the batches "
                    "would overlap",
                    name,
                    stride,
                    unit,
                    matrix,
                    unit));
    }
    uint64_t needed = offset + (uint64_t(batch) - 1) * stride + matrix;
    if (needed > elements) {
        check.fail(format("{} holds {} {}, but the shape, strides and offset address {} (offset {} + "
                    "{} batch(es) of {} x {} with leading dimension {} and stride {})",
                    name,
                    elements,
                    unit,
                    needed,
                    offset,
                    batch,
                    rows,
                    cols,
                    ld,
                    stride));
    }
    if (needed > std::numeric_limits<uint32_t>::max()) {
        check.fail(format("{} addresses {} {}, beyond the kernels' 32-bit indices", name, needed, unit));
    }
}

bool
aligned(uint64_t value, uint32_t multiple)
{
    return value % multiple == 0;
}

// Whether an operand's chunks of `width` elements along its rows load whole:
// rows start aligned, and the row length is a multiple of the width.
bool
wideLoads(uint32_t ld, uint64_t stride, uint64_t offset, uint32_t cols, uint32_t batch, uint32_t width)
{
    return aligned(ld, width) && aligned(offset, width) && aligned(cols, width) &&
           (batch == 1 || aligned(stride, width));
}

GemmPush
gemmPush(const MatMulParams& p)
{
    return { p.m,
             p.n,
             p.k,
             p.lda,
             p.ldb,
             p.ldc,
             static_cast<uint32_t>(p.strideA),
             static_cast<uint32_t>(p.strideB),
             static_cast<uint32_t>(p.strideC),
             static_cast<uint32_t>(p.offsetA),
             static_cast<uint32_t>(p.offsetB),
             static_cast<uint32_t>(p.offsetC),
             p.alpha,
             p.beta,
             p.upRowB };
}

void
checkGrid(const Checker& check, const DeviceView& device, uint64_t x, uint64_t y, uint64_t z)
{
    uint64_t counts[3] = { x, y, z };
    for (int axis = 0; axis < 3; ++axis) {
        if (counts[axis] > device.maxGroupCount[axis]) {
            check.fail(format("the product needs {} workgroups along {}, more than the device's "
                        "maxComputeWorkGroupCount of {}: split it into smaller products",
                        counts[axis],
                        "xyz"[axis],
                        device.maxGroupCount[axis]));
        }
    }
}

uint32_t
groups(uint64_t extent, uint32_t tile)
{
    return static_cast<uint32_t>((extent + tile - 1) / tile);
}

// A kernel's configuration: the rules' choice (`config` as given),
// replaced by the entry of `tables` for this device and product
// (MatMulTuning.hpp), and that by the KOMPUTE_ENV_ variable `variable`, a
// tuning knob (kompute-llm runs with each candidate measure it end to end).
// `parse` reads a configuration's text into a copy of `config`; `fits`
// says what keeps one from running this product (empty: nothing). A table
// entry or a value that does not parse or fit is reported and passed over.
// Returns where the configuration came from (MatMulTuning::source).
template<typename Config>
std::string
tuneConfig(Config& config,
           const DeviceView& view,
           const std::vector<std::shared_ptr<const TuningTable>>& tables,
           const TuningQuery& query,
           const char* variable,
           const std::function<std::string(const std::string&, Config&)>& parse,
           const std::function<std::string(const Config&)>& fits)
{
    std::string source = "rules";
    auto fitting = [&](const std::string& text, Config& out) {
        Config c = config;
        std::string problem = parse(text, c);
        if (problem.empty()) {
            problem = fits(c);
        }
        if (problem.empty()) {
            out = c;
        }
        return problem;
    };
    Config tuned = config;
    if (auto entry = findTuning(tables, view, query,
                                [&](const std::string& text) { return fitting(text, tuned); })) {
        config = tuned;
        source = entry->source;
    }
    const char* text = variable ? std::getenv(variable) : nullptr;
    if (text && *text) {
        std::string problem = fitting(text, config);
        if (problem.empty()) {
            source = variable;
        } else {
            KP_LOG_WARN("{}={} is ignored: {}", variable, text, problem);
        }
    }
    return source;
}

// KOMPUTE_ENV_COOPMAT_AHEAD=N replaces the cooperative-matrix GEMM's count
// of tiles whose loads are in flight (CoopmatConfig::loadAhead, 1-4) after
// the tile is chosen (KOMPUTE_ENV_COOPMAT_TILE keeps the count): a tuning
// knob, so that kompute-llm can measure each end to end. A value that does
// not parse or fit the tile is reported and ignored. Returns whether it
// applied.
bool
overrideCoopmatAhead(CoopmatConfig& config, const DeviceView& view)
{
    const char* text = std::getenv("KOMPUTE_ENV_COOPMAT_AHEAD");
    if (!text || !*text) {
        return false;
    }
    unsigned ahead = 0;
    char end = 0;
    if (std::sscanf(text, "%u%c", &ahead, &end) != 1) {
        KP_LOG_WARN("KOMPUTE_ENV_COOPMAT_AHEAD={} is ignored: expected a count of tiles, e.g. 2", text);
        return false;
    }
    CoopmatConfig c = config;
    c.loadAhead = ahead;
    std::string problem = coopmatProblem(c, view);
    if (!problem.empty()) {
        KP_LOG_WARN("KOMPUTE_ENV_COOPMAT_AHEAD={} is ignored: {}", text, problem);
        return false;
    }
    config = c;
    return true;
}

/** MatMulParams::attentionC's checks that do not depend on the mat-vec's
 * configuration (see MatMul.hpp): kp::Error naming what is wrong. `rope` is
 * ropeC's, resolved; the output is tensor `attendedAt`. */
void
checkAttentionC(const Checker& check, const MatMulParams& p, const RoPECacheResolved& rope,
                const std::vector<std::shared_ptr<Memory>>& tensors, size_t attendedAt)
{
    if (!p.ropeC) {
        check.fail("attentionC attends with the queries and caches that ropeC writes: it needs ropeC");
    }
    if (p.chained) {
        check.fail("chained does not take attentionC (record the product without chained)");
    }
    if (check.caps().isDisabled("matvec-attention")) {
        check.fail("attentionC is turned off (KOMPUTE_ENV_DISABLE has matvec-attention)");
    }
    const RoPECachePush& r = rope.push;
    if (rope.cacheType != StorageType::eF16) {
        check.fail("attentionC reads f16 caches (eHalf), 8 values at a time (record OpAttention after the product)");
    }
    if (r.headDim % 8 != 0 || r.headDim > 128) {
        check.fail(format("attentionC takes headDim a multiple of 8 of at most 128 (a K row a thread), not {}",
                          r.headDim));
    }
    if (r.heads % r.kvHeads != 0 || r.heads / r.kvHeads > 8) {
        check.fail(format("attentionC takes at most 8 query heads per KV head, heads a multiple of kvHeads: heads = "
                          "{}, kvHeads = {}",
                          r.heads, r.kvHeads));
    }
    if (r.cacheOffset % 8 != 0 || r.cacheRowStride % 8 != 0) {
        check.fail(format("attentionC loads the caches 8 f16 values at a time: their offset ({}) and row stride ({}) "
                          "must be multiples of 8",
                          r.cacheOffset, r.cacheRowStride));
    }
    if (!(std::isfinite(p.attentionScale))) {
        check.fail(format("attentionScale must be finite, not {}", p.attentionScale));
    }
    check.dataType(attendedAt, { Memory::DataTypes::eFloat, Memory::DataTypes::eHalf });
    check.covers(attendedAt, p.attentionOffset, uint64_t(r.heads) * r.headDim,
                 "the attention's heads * headDim outputs from attentionOffset");
    check.offset32(p.attentionOffset + uint64_t(r.heads) * r.headDim, "attentionOffset");
    // The output is written while the other tensors are read (or written).
    for (size_t i = 0; i < attendedAt; ++i) {
        if (tensors[i] == tensors[attendedAt]) {
            check.fail("the attention's output must be a tensor of its own, not one the product reads or writes");
        }
    }
}

} // namespace

OpMatMul::OpMatMul(const std::vector<std::shared_ptr<Memory>>& memObjects, const MatMulParams& given)
  : KernelOp(kOp)
{
    std::vector<const char*> names = { "A", "B", "C" };
    if (given.normA) {
        names.push_back("normWeights");
    }
    // ropeC: OpRoPECache's tensors after them, C being its qkv.
    RoPECacheTensors ropeAt{ 2, names.size(), names.size() + 1, names.size() + 2, names.size() + 3,
                             names.size() + (given.rope.hasFreqFactors ? 4 : 3) };
    if (given.ropeC) {
        names.insert(names.end(), { "positions", "keyCache", "valueCache" });
        if (given.rope.hasFreqFactors) {
            names.push_back("freqFactors");
        }
        if (given.rope.hasBias) {
            names.push_back("bias");
        }
    }
    const size_t attendedAt = names.size(); // with attentionC
    if (given.ropeC && given.attentionC) {
        names.push_back("attended");
    }
    if (given.chained) {
        names.push_back("chain");
    }
    Checker check(kOp, memObjects, names);
    const auto& device = check.device();
    Memory& a = *memObjects[0];
    Memory& b = *memObjects[1];
    Memory& c = *memObjects[2];
    MatMulParams p = given;
    bool quantB = p.formatB != WeightFormat::eNone;

    if (p.m == 0 || p.n == 0 || p.k == 0 || p.batch == 0) {
        check.fail(format("m, n, k and batch must be at least 1 (m = {}, n = {}, k = {}, batch = {})",
                    p.m,
                    p.n,
                    p.k,
                    p.batch));
    }
    if (memObjects[2] == memObjects[0] || memObjects[2] == memObjects[1]) {
        check.fail("C must be a tensor of its own, not A or B (the product reads A and B while it writes C)");
    }
    GemmVariant variant;
    variant.a = elementType(check, a, "A", false, WeightFormat::eNone);
    variant.b = elementType(check, b, "B", true, p.formatB);
    variant.c = elementType(check, c, "C", false, WeightFormat::eNone);
    if (variant.c == kBF16) {
        check.fail("C must be eFloat or eHalf (bf16 output is not supported)");
    }
    variant.transA = p.transA;
    variant.transB = p.transB;
    variant.swigluC = p.swigluC;

    DeviceView view = matMulDevice(*device, check.caps());
    if (!view.storage16Bit) {
        check.fail(format("the matrix kernels need the device feature storageBuffer16BitAccess, which "
                    "'{}' does not have (or, for a Manager on your own VkDevice, did not enable)",
                    view.name));
    }

    // Operands as stored: A is [m][k] or [k][m]; B [k][n] or [n][k].
    uint32_t aRows = p.transA ? p.k : p.m, aCols = p.transA ? p.m : p.k;
    uint32_t bRows = p.transB ? p.n : p.k, bCols = p.transB ? p.k : p.n;
    if (p.swigluC) {
        if (!p.transB || p.beta != 0.0f || p.swigluA || (p.normA && p.m != 1) || p.ropeC) {
            check.fail(format("swigluC multiplies by the gate's and the up's rows of a transposed B into C (transB, "
                              "beta 0, no swigluA or ropeC, normA only with m = 1): transB = {}, beta = {}, "
                              "swigluA = {}, normA = {}, ropeC = {}, m = {}",
                              p.transB, p.beta, p.swigluA, p.normA, p.ropeC, p.m));
        }
        if (p.upRowB < p.n || uint64_t(p.upRowB) + p.n > UINT32_MAX) {
            check.fail(format("swigluC: the up rows (from upRowB = {}) must come after the gate's n = {} rows of B "
                              "(and end below row 2^32)",
                              p.upRowB, p.n));
        }
        bRows = p.upRowB + p.n; // B holds both
        if (check.caps().isDisabled("gemm-swiglu")) {
            check.fail("swigluC is turned off (KOMPUTE_ENV_DISABLE has gemm-swiglu)");
        }
    }
    uint64_t bElements = b.size();
    const char* bUnit = "elements";
    if (quantB) {
        uint32_t block = blockBytes(p.formatB);
        if (!p.transB) {
            check.fail(format("a quantized B ({}) is stored [n][k] as GGUF stores weights: set transB", toString(p.formatB)));
        }
        if (b.memorySize() % block != 0) {
            check.fail(format("B holds {} bytes, not whole {} blocks of {} bytes", b.memorySize(), toString(p.formatB), block));
        }
        uint32_t weights = blockWeights(p.formatB);
        if (p.k % weights != 0) {
            check.fail(format("k = {} is not a multiple of {}: {} rows are whole blocks of {} weights",
                        p.k,
                        weights,
                        toString(p.formatB),
                        weights));
        }
        if (p.ldb % weights || p.offsetB % weights || p.strideB % weights) {
            check.fail(format("ldb, strideB and offsetB count weights of a {} B and must be multiples of {} "
                        "(whole blocks): ldb = {}, strideB = {}, offsetB = {}",
                        toString(p.formatB),
                        weights,
                        p.ldb,
                        p.strideB,
                        p.offsetB));
        }
        bElements = uint64_t(b.memorySize() / block) * weights;
        bUnit = "weights";
    }
    if (p.quantizedA) {
        // A's row as int8 blocks (quantizedRowWords(k) words), not k elements.
        if (p.m != 1 || p.transA || p.batch != 1 || p.k % 32 != 0 || p.swigluA || p.normA || p.chained) {
            check.fail(format("quantizedA gives the one row of A of a mat-vec as int8 blocks (m = 1, A not transposed, "
                              "batch 1, k a multiple of 32, no swigluA, normA or chained): m = {}, transA = {}, "
                              "batch = {}, k = {}, swigluA = {}, normA = {}, chained = {}",
                              p.m, p.transA, p.batch, p.k, p.swigluA, p.normA, p.chained));
        }
        if (variant.a != kF32 || p.offsetA % 4 != 0) {
            check.fail(format("quantizedA: A must be eFloat with offsetA a multiple of 4 (the blocks are read as "
                              "16-byte words): offsetA = {}",
                              p.offsetA));
        }
        check.covers(0, p.offsetA, quantizedRowWords(p.k), "A's row of k as int8 blocks (quantizedRowWords(k))");
    } else {
        resolveOperand(check, "A", a.size(), aRows, aCols, p.batch, p.lda, p.strideA, p.offsetA, "elements");
    }
    resolveOperand(check, "B", bElements, bRows, bCols, p.batch, p.ldb, p.strideB, p.offsetB, bUnit);
    resolveOperand(check, "C", c.size(), p.m, p.n, p.batch, p.ldc, p.strideC, p.offsetC, "elements");
    if (p.quantizeC) {
        if (!p.swigluC || p.m != 1 || p.batch != 1 || p.n % 32 != 0 || variant.c != kF32 || p.offsetC % 4 != 0 ||
            p.chained) {
            check.fail(format("quantizeC writes the SwiGLU row of a mat-vec also as int8 blocks (swigluC, m = 1, batch "
                              "1, n a multiple of 32, C eFloat from offsetC a multiple of 4, not chained): swigluC = "
                              "{}, m = {}, batch = {}, n = {}, offsetC = {}, chained = {}",
                              p.swigluC, p.m, p.batch, p.n, p.offsetC, p.chained));
        }
        check.covers(2, p.offsetC + p.n, quantizedRowWords(p.n),
                     "C's row of n as int8 blocks after it (quantizedRowWords(n) elements from offsetC + n)");
    }
    if (p.chained && p.swigluC) {
        check.fail("chained does not take swigluC (record the product without chained)");
    }
    if (p.swigluA) {
        if (p.m != 1) {
            check.fail(format("swigluA is an input of the mat-vec (m = 1), not of a product with m = {}", p.m));
        }
        uint32_t lda = p.lda;
        uint64_t strideA = p.strideA;
        resolveOperand(check, "A (its gate, from gateOffsetA)", a.size(), aRows, aCols, p.batch, lda, strideA,
                       p.gateOffsetA, "elements");
    }

    uint32_t normType = 0; // MatVecVariant::norm
    if (p.normA) {
        if (p.m != 1 || p.transA || p.swigluA) {
            check.fail(format("normA normalizes the one row of A of a mat-vec (m = 1, A not transposed, no swigluA): "
                              "m = {}, transA = {}, swigluA = {}",
                              p.m, p.transA, p.swigluA));
        }
        if (!(p.normEps >= 0.0f) || !std::isfinite(p.normEps)) {
            check.fail(format("normEps must be finite and >= 0, not {}", p.normEps));
        }
        if (memObjects[3] == memObjects[2]) {
            check.fail("the norm's weights must not be C (the product reads them while it writes C)");
        }
        if (check.caps().isDisabled("matvec-norm")) {
            check.fail("normA is turned off (KOMPUTE_ENV_DISABLE has matvec-norm)");
        }
        // (+ 4: weights from a multiple of 4 elements, loaded 4 at a time)
        normType = 1 + static_cast<uint32_t>(check.storageType(3)) + (p.normOffset % 4 == 0 ? 4 : 0);
        check.covers(3, p.normOffset, p.k, "the norm's k weights from normOffset");
        check.offset32(p.normOffset, "normOffset");
    }

    RoPECacheResolved rope{}; // with ropeC
    if (p.ropeC) {
        if (p.m != 1 || !p.transB || p.batch != 1 || p.beta != 0.0f || p.swigluA) {
            check.fail(format("ropeC rotates the one row of C of a mat-vec (m = 1, B transposed, batch 1, beta 0, no "
                              "swigluA): m = {}, transB = {}, batch = {}, beta = {}, swigluA = {}",
                              p.m, p.transB, p.batch, p.beta, p.swigluA));
        }
        if (p.rope.rows != 1) {
            check.fail(format("ropeC takes rope.rows = 1 (C's one row), not {}", p.rope.rows));
        }
        if (p.rope.mode != RoPEMode::eNormal) {
            check.fail("ropeC pairs neighbouring elements of C's row: rope.mode must be RoPEMode::eNormal (with "
                       "RoPEMode::eNeoX record OpRoPECache after the product)");
        }
        RoPECacheParams onC = p.rope;
        onC.qkvOffset = p.offsetC;
        onC.qkvRowStride = 0;
        rope = resolveRoPECache(check, onC, ropeAt);
        if (rope.cacheType == StorageType::eBF16) {
            check.fail("ropeC writes f32 or f16 caches (eFloat or eHalf), not bf16 ones (record OpRoPECache after the "
                       "product)");
        }
        if (rope.rowWidth != p.n) {
            check.fail(format("ropeC: C's row of n = {} is not one row of qkv, (heads + 2 kvHeads) * headDim = {}",
                              p.n, rope.rowWidth));
        }
        // The caches are written while A, B and the norm's weights are read.
        for (size_t read = 0; read < (p.normA ? 4u : 2u); ++read) {
            if (read == 2) {
                continue;
            }
            if (memObjects[read] == memObjects[ropeAt.keys] || memObjects[read] == memObjects[ropeAt.values]) {
                check.fail(format("the caches must not be {} (the product reads it while it writes them)", names[read]));
            }
        }
        if (memObjects[ropeAt.positions] == memObjects[ropeAt.keys] ||
            memObjects[ropeAt.positions] == memObjects[ropeAt.values] || memObjects[ropeAt.positions] == memObjects[2]) {
            check.fail("positions must not be C or a cache (the product reads it while it writes them)");
        }
        if (check.caps().isDisabled("matvec-rope")) {
            check.fail("ropeC is turned off (KOMPUTE_ENV_DISABLE has matvec-rope)");
        }
        if (!check.caps().subgroupShuffle) {
            check.fail(format("ropeC needs subgroup shuffles, which '{}' does not have (record OpRoPECache after "
                              "the product)",
                              view.name));
        }
    }
    if (p.attentionC) {
        checkAttentionC(check, p, rope, memObjects, attendedAt);
        if (p.attentionScale == 0.0f) {
            p.attentionScale = 1.0f / std::sqrt(static_cast<float>(rope.push.headDim));
        }
    }

    mParams = p;

    // The tuning tables ("tuning-tables" turns them off: the rules alone),
    // read where a kernel is tuned: a product that no table tunes does not
    // pay for the file's check (tuningTables stats it).
    std::optional<std::vector<std::shared_ptr<const TuningTable>>> tablesRead;
    auto tables = [&]() -> const std::vector<std::shared_ptr<const TuningTable>>& {
        if (!tablesRead) {
            tablesRead = check.caps().isDisabled("tuning-tables") ? std::vector<std::shared_ptr<const TuningTable>>{}
                                                                  : tuningTables();
        }
        return *tablesRead;
    };

    // --- Mat-vec: one row (or one column) of C ----------------------------------
    // (swigluC: the int-dot mat-vec only, below; else the GEMM kernels.)
    bool oneRow = p.m == 1 && (!p.swigluC || !check.caps().isDisabled("matvec-glu"));
    bool oneColumn = p.n == 1 && !quantB && !p.swigluC && !p.quantizedA;
    const DeviceCaps& caps = check.caps();
    std::string matVecRefused; // why the mat-vec did not take this product, where it says
    if ((oneRow || oneColumn) && view.subgroupArithmetic && !caps.isDisabled("matvec")) {
        MatVecVariant mv;
        MatVecPush push{};
        std::vector<std::shared_ptr<Memory>> bound;
        if (oneRow) { // out[j] = sum_k A[0][k] * op(B)[k][j]
            mv.x = variant.a;
            mv.w = variant.b;
            mv.columnMode = !p.transB;
            push = { p.n, p.k, p.transA ? p.lda : 1u, p.ldb, 1u,
                     static_cast<uint32_t>(p.strideA), static_cast<uint32_t>(p.strideB),
                     static_cast<uint32_t>(p.strideC), static_cast<uint32_t>(p.offsetA),
                     static_cast<uint32_t>(p.offsetB), static_cast<uint32_t>(p.offsetC), p.alpha, p.beta,
                     static_cast<int32_t>(int64_t(p.gateOffsetA) - int64_t(p.offsetA)), p.normEps,
                     static_cast<uint32_t>(p.normOffset) };
            if (p.swigluC) {
                push.rows = 2 * p.n; // a gate row and an up row per output (GLU_OUT)
            }
            mv.glu = p.swigluA;
            mv.norm = normType;
            // (Binding 3, the norm's weights, holds A where there is no norm.)
            bound = { memObjects[0], memObjects[1], memObjects[2], memObjects[p.normA ? 3 : 0] };
        } else { // out[i] = sum_k op(A)[i][k] * B[k][0]
            mv.x = variant.b;
            mv.w = variant.a;
            mv.columnMode = p.transA;
            push = { p.m, p.k, p.transB ? 1u : p.ldb, p.lda, p.ldc,
                     static_cast<uint32_t>(p.strideB), static_cast<uint32_t>(p.strideA),
                     static_cast<uint32_t>(p.strideC), static_cast<uint32_t>(p.offsetB),
                     static_cast<uint32_t>(p.offsetA), static_cast<uint32_t>(p.offsetC), p.alpha, p.beta, 0, 0.0f, 0 };
            bound = { memObjects[1], memObjects[0], memObjects[2], memObjects[1] };
        }
        mv.out = variant.c;
        // Q8_0/Q4_0 take the int-dot build where the device accelerates it;
        // "matvec-float" turns their float build off, so that devices which
        // only support the instructions (lavapipe) run it too (tests).
        // Q4_K and Q5_K take it in the quantized-x mode only (the float unit row
        // mode otherwise).
        bool intDot = hasQxRowMode(mv.w) && matVecIntDot(view, caps);
        bool wholeChunks = !mv.columnMode &&
                           matVecStageable(mv.w, p.k, push.ldw, push.wOffset, push.wBatchStride, p.batch);
        bool stageable = wholeChunks && hasUnitRowModes(mv.w) && !isGrouped(mv.w) && !caps.isDisabled("staged");
        // The quantized-x mode (x quantized to int8 once per workgroup) is
        // the int-dot build's default: on the H200 it beat the staged mode
        // end to end (Llama-8B tg128: Q4_0 261.5 -> 294.5 t/s, Q8_0 203.7 ->
        // 215.6, Q4_K_M 164.8 -> 232.2; docs/performance.md). "matvec-qx"
        // turns it off (the staged mode for Q8_0/Q4_0, the float unit row
        // mode for Q4_K/Q5_K).
        bool quantizedX = wholeChunks && intDot && !caps.isDisabled("matvec-qx");
        MatVecConfig config = chooseMatVec(view, push.rows, mv.w, mv.columnMode, stageable, quantizedX, p.k);
        intDot = intDot && (hasUnitRowModes(mv.w) || config.qxBlocks != 0);
        // The modes in which a workgroup reads the whole row of A: the
        // int-dot build's quantized-x mode (qxWhole: with that row whole in
        // shared memory), and the row mode of float weights and of
        // Q8_0/Q4_0 rows not staged.
        auto qxRowsOf = [&](const MatVecConfig& c) { return intDot && c.qxBlocks != 0 && !mv.columnMode; };
        auto plainRowsOf = [&](const MatVecConfig& c) {
            return !mv.columnMode && c.qxBlocks == 0 && !c.staged && (!isQuantized(mv.w) || hasUnitRowModes(mv.w));
        };
        // What keeps configuration `c` from running this product (empty:
        // nothing): the device's limits, and what the fused inputs and
        // epilogues ask of a workgroup's rows and threads.
        auto modeProblem = [&](const MatVecConfig& c) -> std::string {
            std::string problem = matVecProblem(c, view, mv.w);
            if (!problem.empty()) {
                return problem;
            }
            bool qxRows = qxRowsOf(c);
            if (p.ropeC && c.rows % 2 != 0) {
                // (ropeWrite: a pair's rows are a workgroup's rows 2i and 2i + 1)
                return format("ropeC pairs a workgroup's rows, and this configuration gives it {} rows", c.rows);
            }
            if (p.attentionC) {
                // (AttentionTail.glsl: a tile's rows in one head; the threads
                // split into slices of headDim / 4 parts of a V row.)
                uint32_t headDim = rope.push.headDim;
                if (headDim % c.rows != 0 || c.threads % (headDim / 4) != 0) {
                    return format("attentionC counts a workgroup's {} rows into one head of {} and splits its {} "
                                  "threads by {} parts of 4 values",
                                  c.rows, headDim, c.threads, headDim / 4);
                }
            }
            if (p.normA && groups(c.threads, std::max(view.subgroupSize, 1u)) > 64) {
                return format("{} subgroups per workgroup exceed the norm's 64",
                              groups(c.threads, std::max(view.subgroupSize, 1u)));
            }
            if (p.swigluC) {
                // (finishRow pairs a workgroup's rows 2i and 2i + 1.)
                // The int-dot build's quantized-x mode, or the float row mode of
                // float weights (without quantizeC).
                bool floatRows = plainRowsOf(c) && !isQuantized(mv.w);
                if ((!qxRows && !floatRows) || p.batch != 1) {
                    return "swigluC takes the int-dot mat-vec's quantized-x mode or the float row mode of float "
                           "weights (batch 1)";
                }
                if (p.quantizeC && !qxRows) {
                    return "quantizeC takes the int-dot mat-vec's quantized-x mode";
                }
                if (c.rows % 2 != 0 || (p.quantizeC && 32 % (c.rows / 2) != 0)) {
                    // (quantizeC: a tile's outputs, rows / 2, in one block of 32)
                    return format("swigluC pairs a workgroup's rows (and quantizeC counts a tile's rows / 2 outputs "
                                  "into one 32-element block), and this configuration gives it {} rows",
                                  c.rows);
                }
                if (!caps.subgroupShuffle) {
                    return "swigluC on the mat-vec needs subgroup shuffles";
                }
            }
            if (p.quantizedA && !(qxRows && c.qxBlocks * 32 >= p.k)) {
                return "quantizedA takes the int-dot mat-vec's quantized-x mode with the row of A whole in shared "
                       "memory";
            }
            return {};
        };
        if (config.qxBlocks) {
            mTuning.kernel = tunedKernelName(TunedKernel::eMatVecQx);
            mTuning.source = tuneConfig<MatVecConfig>(
              config, view, tables(), TuningQuery{ TunedKernel::eMatVecQx, mv.x, mv.w, 1, push.rows, p.k },
              "KOMPUTE_ENV_MATVEC_QX",
              [&](const std::string& text, MatVecConfig& c) { return parseQxConfig(text, view.smCount, c); },
              modeProblem);
            mTuning.config = qxConfigText(config, view.smCount);
        }
        std::string problem = modeProblem(config);
        bool qxRows = qxRowsOf(config);
        bool plainRows = plainRowsOf(config);
        if (p.normA && problem.empty() && !qxRows && !plainRows) {
            check.fail(format("normA needs a mat-vec mode that reads the whole row of A in each workgroup, which "
                              "this product does not take on '{}' ({}): B transposed, and float weights, or Q8_0, "
                              "Q4_0, Q4_K or Q5_K rows of whole 16-byte chunks (k, ldb, strideB and offsetB "
                              "multiples of 256 weights) on a device with integer dot products (the quantized-x "
                              "mode), or Q8_0/Q4_0 rows the mat-vec does not stage",
                              view.name,
                              mv.columnMode ? std::string("B is not transposed: the column mode")
                              : config.staged
                                ? std::string("Q8_0/Q4_0 rows staged: no quantized-x mode taken")
                                : format("{} rows take the block row mode", elementTypeName(mv.w))));
        }
        if (p.chained && problem.empty() && !oneRow) {
            check.fail("chained takes the mat-vec of one row of C (m = 1), not of one column");
        }
        if (problem.empty()) {
            // Units of 16 bytes of float weights; x in 4-element loads, or 8
            // for 16-bit x beside 16-bit weights.
            uint32_t unit = mv.w == kF32 ? 4 : 8;
            uint32_t xWidth = (!isQuantized(mv.w) && unit == 8 && mv.x != kF32) ? 8 : 4;
            mv.vecW = !mv.columnMode && !isQuantized(mv.w) && aligned(push.ldw, unit) &&
                      aligned(push.wOffset, unit) && (p.batch == 1 || aligned(push.wBatchStride, unit));
            mv.vecX = push.xStride == 1 && aligned(push.xOffset, xWidth) &&
                      (!mv.glu || aligned(p.gateOffsetA, xWidth)) &&
                      (p.batch == 1 || aligned(push.xBatchStride, xWidth));
            uint32_t rowGroups = mv.columnMode ? groups(push.rows, config.threads / config.kSplit)
                                               : matVecGroups(config, push.rows);
            Workgroup grid{ rowGroups, p.batch, 1 };
            checkGrid(check, view, grid[0], grid[1], grid[2]);
            // swigluA in the quantized-x mode with x whole: x quantized once,
            // by a pass before the product (a thread a 32-element block,
            // into a buffer of the operation), where each workgroup of the
            // product would read both f32 rows and take an exp per element
            // (H200, Llama-8B's ffn_down: docs/matmul-tuning.md).
            // "matvec-x-pass" turns it off.
            bool xPass = mv.glu && intDot && config.qxBlocks != 0 && config.qxBlocks * 32 >= p.k &&
                         !caps.isDisabled("matvec-x-pass");
            // chained: the _chain builds, the chain's buffer at the binding
            // after the others (Chain.glsl; 4, or 9 after the rotation's),
            // its mode at specialization constant 22 and the dispatch's
            // slot after the push constants. The x pass waits where the
            // operation does, the product after it for the pass.
            const std::shared_ptr<Memory>& chain = memObjects.back();
            uint32_t dispatches = xPass ? 2 : 1;
            if (p.chained) {
                if (chain->dataType() != Memory::DataTypes::eUnsignedInt ||
                    chain->size() < 2u + 2u * (uint64_t(p.chainSlot) + dispatches)) {
                    check.fail(format("chained: the chain's buffer (the last tensor) must be eUnsignedInt with at "
                                      "least 2 + 2 * (chainSlot + {}) = {} elements for slots {} to {}",
                                      dispatches, 2u + 2u * (uint64_t(p.chainSlot) + dispatches), p.chainSlot,
                                      p.chainSlot + dispatches - 1));
                }
                if (p.chainWaits && p.chainSlot == 0) {
                    check.fail("chainWaits waits for slot chainSlot - 1: chainSlot must be at least 1");
                }
            }
            auto chainConstants = [&](std::vector<uint32_t> constants, bool waits) {
                if (p.chained) {
                    constants.resize(23, 0u);
                    constants[22] = (waits ? 1u : 0u) | 2u;
                }
                return constants;
            };
            auto chainBound = [&](std::vector<std::shared_ptr<Memory>> tensors) {
                if (p.chained) {
                    tensors.push_back(chain);
                }
                return tensors;
            };
            auto chainName = [&](std::string shader) { return p.chained ? shader + "_chain" : shader; };
            struct ChainedPush
            {
                MatVecPush matVec;
                uint32_t chainSlot;
            };
            auto addMatVec = [&](const std::vector<std::shared_ptr<Memory>>& tensors, const std::string& shader,
                                 const Workgroup& at, const std::vector<uint32_t>& constants, const MatVecPush& values,
                                 uint32_t slot, bool waits) {
                if (p.chained) {
                    addDispatch(buildAlgorithm(device, chainBound(tensors), builtinSpirv(chainName(shader)), at,
                                               chainConstants(constants, waits), ChainedPush{ values, slot }));
                } else {
                    addDispatch(buildAlgorithm(device, tensors, builtinSpirv(shader), at, constants, values));
                }
            };
            if (xPass) {
                // Per batch: k / 32 blocks of 8 words of int8 values and a
                // (scale, scale * sum) pair (MatVec.comp's qxQuantsAt).
                uint32_t blockWords = 10, blocks = p.k / 32;
                auto quantizedX = std::make_shared<TensorT<float>>(
                  check.device(), size_t(blocks) * blockWords * p.batch, Memory::MemoryTypes::eStorage);
                MatVecConfig passConfig = config;
                passConfig.threads = 64;
                MatVecVariant passVariant = mv;
                passVariant.qxSource = 1;
                MatVecPush passPush = push;
                passPush.outOffset = 0;
                passPush.outBatchStride = blocks * blockWords;
                Workgroup passGrid{ groups(blocks, passConfig.threads), p.batch, 1 };
                checkGrid(check, view, passGrid[0], passGrid[1], passGrid[2]);
                addMatVec({ memObjects[0], memObjects[1], quantizedX, memObjects[0] }, "matvec_int_dot", passGrid,
                          matVecSpecialization(passConfig, passVariant), passPush, p.chainSlot, p.chainWaits);
                // The product reads that buffer as x.
                mv.glu = false;
                mv.qxSource = 2;
                mv.vecX = true;
                push.xOffset = 0;
                push.xStride = 1;
                push.xBatchStride = blocks * blockWords;
                push.xGateDelta = 0;
                bound = { quantizedX, memObjects[1], memObjects[2], quantizedX };
            }
            if (p.quantizedA) {
                // x as a product with quantizeC wrote it (the x pass's layout).
                mv.qxSource = 2;
                mv.vecX = true;
                push.xStride = 1;
                push.xBatchStride = 0;
                bound = { memObjects[0], memObjects[1], memObjects[2], memObjects[0] };
            }
            std::string shader = intDot ? "matvec_int_dot" : "matvec";
            if (p.swigluC) {
                // The GLU_OUT build: rows 2i and 2i + 1 are the gate's row i
                // and the up's, the SwiGLU of their sums into C; quantizeC:
                // the blocks after C's row, the tile that completes a block
                // quantizing it, with a counter per block at binding 4
                // (zero here, left zero by each dispatch; without quantizeC
                // C is bound there, unread).
                std::shared_ptr<Memory> counts = memObjects[2];
                if (p.quantizeC) {
                    counts = std::make_shared<TensorT<uint32_t>>(
                      check.device(), std::vector<uint32_t>(p.n / 32, 0u), Memory::MemoryTypes::eStorage);
                }
                bound.push_back(counts);
                std::vector<uint32_t> constants = matVecSpecialization(config, mv);
                constants.resize(23, 0u); // (id 22 follows the rotation's 19 to 21)
                constants[22] = p.quantizeC ? 1u : 0u;
                struct
                {
                    MatVecPush matVec;
                    uint32_t upRow;
                } gluPush{ push, p.upRowB };
                addDispatch(
                  buildAlgorithm(device, bound, builtinSpirv(shader + "_glu"), grid, constants, gluPush));
                setPath(intDot ? "matvec-int-dot" : "matvec");
                return;
            }
            if (p.ropeC) {
                // The ROPE_EPILOGUE build: OpRoPECache's tensors at bindings
                // 4 to 8 (the positions in place of absent ones, unread), its
                // parameters after the mat-vec's.
                const RoPECacheParams& r = p.rope;
                const auto& at = [&](size_t index) { return memObjects[index]; };
                bound.insert(bound.end(),
                             { at(ropeAt.positions), at(ropeAt.keys), at(ropeAt.values),
                               at(r.hasFreqFactors ? ropeAt.factors : ropeAt.positions),
                               at(r.hasBias ? ropeAt.bias : ropeAt.positions) });
                struct
                {
                    MatVecPush matVec;
                    RoPECachePush rope;
                } ropePush{ push, rope.push };
                std::vector<uint32_t> constants = matVecSpecialization(config, mv);
                constants.resize(19, 0u); // (ids 19 to 21 follow the mat-vec's)
                constants.insert(constants.end(), { static_cast<uint32_t>(rope.cacheType), r.hasFreqFactors ? 1u : 0u,
                                                    r.hasBias ? 1u : 0u });
                if (p.attentionC) {
                    // The ATTN_TAIL build: the output at binding 9, a counter
                    // per KV head at 10 (zero here, left zero by each
                    // dispatch), the group, head size and output type at ids
                    // 22 to 24, the scale and output offset after the
                    // rotation's parameters.
                    auto counts = std::make_shared<TensorT<uint32_t>>(
                      check.device(), std::vector<uint32_t>(r.kvHeads, 0u), Memory::MemoryTypes::eStorage);
                    bound.insert(bound.end(), { memObjects[attendedAt], counts });
                    constants.insert(constants.end(),
                                     { r.heads / r.kvHeads, r.headDim,
                                       memObjects[attendedAt]->dataType() == Memory::DataTypes::eHalf ? 1u : 0u });
                    struct
                    {
                        MatVecPush matVec;
                        RoPECachePush rope;
                        float scale;
                        uint32_t outOffset;
                    } attnPush{ push, rope.push, p.attentionScale, static_cast<uint32_t>(p.attentionOffset) };
                    addDispatch(
                      buildAlgorithm(device, bound, builtinSpirv(shader + "_rope_attn"), grid, constants, attnPush));
                    setPath(intDot ? "matvec-int-dot" : "matvec");
                    return;
                }
                struct
                {
                    MatVecPush matVec;
                    RoPECachePush rope;
                    uint32_t chainSlot;
                } chainedRopePush{ push, rope.push, p.chainSlot };
                if (p.chained) {
                    addDispatch(buildAlgorithm(device, chainBound(bound), builtinSpirv(chainName(shader + "_rope")),
                                               grid, chainConstants(constants, p.chainWaits), chainedRopePush));
                } else {
                    addDispatch(
                      buildAlgorithm(device, bound, builtinSpirv(shader + "_rope"), grid, constants, ropePush));
                }
            } else {
                // (After the x pass, the product waits for it.)
                addMatVec(bound, shader, grid, matVecSpecialization(config, mv), push, p.chainSlot + dispatches - 1,
                          xPass || p.chainWaits);
            }
            if (p.chained) {
                setChain(chain.get(), p.chainSlot, p.chainWaits);
            }
            setPath(intDot ? "matvec-int-dot" : "matvec");
            return;
        }
        matVecRefused = problem;
    }

    if (p.chained) {
        check.fail(format("chained takes the mat-vec (m = 1), which '{}' does not run for this product: its "
                          "dispatches are ordered by barriers (record it without chained)",
                          view.name));
    }
    if (p.swigluA || p.normA || p.ropeC || p.quantizeC || p.quantizedA) {
        check.fail(format("{} needs the mat-vec, which '{}' does not run here ({})",
                          p.swigluA  ? "swigluA"
                          : p.normA  ? "normA"
                          : p.ropeC  ? (p.attentionC ? "ropeC with attentionC" : "ropeC")
                          : p.quantizeC ? "quantizeC"
                                        : "quantizedA",
                          view.name,
                          caps.isDisabled("matvec")   ? "KOMPUTE_ENV_DISABLE has matvec"
                          : p.swigluC && caps.isDisabled("matvec-glu") ? "KOMPUTE_ENV_DISABLE has matvec-glu"
                          : !view.subgroupArithmetic ? "no subgroup arithmetic"
                          : !matVecRefused.empty()   ? matVecRefused
                                                     : "no mat-vec configuration fits"));
    }

    // --- GEMM ---------------------------------------------------------------------
    GemmPush push = gemmPush(p);
    std::vector<std::shared_ptr<Memory>> bound = { memObjects[0], memObjects[1], memObjects[2] };

    // Cooperative matrices: f16 operands (f32 rounded to f16, quantized
    // blocks dequantized to f16), or bf16 ones on bf16 matrices.
    bool anyBf16 = variant.a == kBF16 || variant.b == kBF16;
    bool bothBf16OrF32 = (variant.a == kBF16 || variant.a == kF32) && (variant.b == kBF16 || variant.b == kF32);
    // An f32 x f32 product stays in f32 (the tiled kernel): rounding both
    // operands to 16 bits is a choice the caller makes by storing one so.
    bool bothF32 = variant.a == kF32 && variant.b == kF32;
    if (!caps.isDisabled("coopmat") && !bothF32) {
        struct Candidate
        {
            bool usable;
            const std::vector<CoopmatShape>* shapes;
            const char* path;
            bool khr, bf16;
        };
        std::vector<Candidate> candidates;
        if (anyBf16) {
            candidates.push_back({ view.coopmatKHR && bothBf16OrF32, &view.khrBf16Shapes, "coopmat-khr-bf16", true, true });
        } else {
            candidates.push_back({ view.coopmatKHR && !caps.isDisabled("coopmat-khr"), &view.khrF16Shapes,
                                   "coopmat-khr", true, false });
            candidates.push_back({ view.coopmatNV && !caps.isDisabled("coopmat-nv"), &view.nvF16Shapes, "coopmat-nv",
                                   false, false });
        }
        for (const auto& candidate : candidates) {
            CoopmatConfig config;
            if (!candidate.usable || !chooseCoopmat(view, *candidate.shapes, p.m, p.n, p.batch, config)) {
                continue;
            }
            // (swigluC pairs each subgroup's fragment j with fragment j +
            // FN / 2 in an epilogue that holds both in shared memory.)
            auto swigluProblem = [&](const CoopmatConfig& c) -> std::string {
                if (p.swigluC && ((c.wn / c.shape.n) % 2 != 0 ||
                                  coopmatSharedBytes(c, p.transA, p.transB, true) > view.maxSharedBytes)) {
                    return "swigluC needs an even count of fragments per subgroup along n and its epilogue in "
                           "shared memory";
                }
                return {};
            };
            mTuning.kernel = tunedKernelName(TunedKernel::eCoopmat);
            mTuning.source = tuneConfig<CoopmatConfig>(
              config, view, tables(), TuningQuery{ TunedKernel::eCoopmat, variant.a, variant.b, p.m, p.n, p.k },
              "KOMPUTE_ENV_COOPMAT_TILE", parseCoopmatConfig, [&](const CoopmatConfig& c) {
                  std::string problem = coopmatProblem(c, view);
                  return problem.empty() ? swigluProblem(c) : problem;
              });
            if (overrideCoopmatAhead(config, view)) {
                mTuning.source = mTuning.source == "rules" ? "KOMPUTE_ENV_COOPMAT_AHEAD"
                                                           : mTuning.source + ", KOMPUTE_ENV_COOPMAT_AHEAD";
            }
            mTuning.config = coopmatConfigText(config);
            config.quantWords = !caps.isDisabled("coopmat-quant-words") &&
                                coopmatQuantWordsFit(config, variant.b, p.k, p.ldb, p.offsetB, p.strideB, p.batch);
            if (config.quantWords && !coopmatProblem(config, view).empty()) {
                config.quantWords = false; // its raw words do not fit in shared memory
            }
            if (!swigluProblem(config).empty()) {
                continue;
            }
            variant.vecA = wideLoads(p.lda, p.strideA, p.offsetA, aCols, p.batch, 8);
            variant.vecB = !quantB && wideLoads(p.ldb, p.strideB, p.offsetB, bCols, p.batch, 8);
            Workgroup grid{ groups(p.n, p.swigluC ? config.bn / 2 : config.bn), groups(p.m, config.bm), p.batch };
            checkGrid(check, view, grid[0], grid[1], grid[2]);
            std::vector<uint32_t> spirv = builtinSpirv(coopmatVariant(config));
            // The KHR form uses SPIR-V newer than the linked SPIRV-Tools: the
            // Algorithm leaves its validation to the driver (and the
            // validation layer); the pass's own tests check its structure.
            if (candidate.khr) {
                spirv = internal::coopmatNvToKhr(spirv, candidate.bf16);
            }
            addDispatch(buildAlgorithm(device, bound, spirv, grid, coopmatSpecialization(config, variant, candidate.bf16), push));
            setPath(candidate.path);
            return;
        }
    }

    TiledConfig config = chooseTiled(view, p.m, p.n, p.batch, variant.b);
    mTuning.kernel = tunedKernelName(TunedKernel::eTiled);
    mTuning.source = tuneConfig<TiledConfig>(
      config, view, tables(), TuningQuery{ TunedKernel::eTiled, variant.a, variant.b, p.m, p.n, p.k }, nullptr, parseTiledConfig,
      [&](const TiledConfig& c) { return tiledProblem(c, variant.b, view); });
    mTuning.config = tiledConfigText(config);
    std::string problem = tiledProblem(config, variant.b, view);
    if (!problem.empty()) {
        check.fail(format("no tile shape of the tiled kernel fits '{}': {}", view.name, problem));
    }
    variant.vecA = wideLoads(p.lda, p.strideA, p.offsetA, aCols, p.batch, 4);
    variant.vecB = !quantB && wideLoads(p.ldb, p.strideB, p.offsetB, bCols, p.batch, 4);
    Workgroup grid{ groups(p.n, p.swigluC ? config.bn / 2 : config.bn), groups(p.m, config.bm), p.batch };
    checkGrid(check, view, grid[0], grid[1], grid[2]);
    addDispatch(buildAlgorithm(device, bound, builtinSpirv("matmul_tiled"), grid, tiledSpecialization(config, variant), push));
    setPath("tiled");
}

OpMatMul::OpMatMul(std::shared_ptr<Tensor> a,
                   std::shared_ptr<Tensor> b,
                   std::shared_ptr<Tensor> c,
                   const MatMulParams& params)
  : OpMatMul(std::vector<std::shared_ptr<Memory>>{ a, b, c }, params)
{
}

OpMatMul::~OpMatMul() = default;

} // namespace kp
