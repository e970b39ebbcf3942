// SPDX-License-Identifier: Apache-2.0
// Context: the forward pass of a Llama-family model (llama, qwen2 with its
// q/k/v biases, qwen3 with its per-head query/key norms) as sequences of kernel-library
// operations, recorded once per step shape (number of tokens, which outputs)
// and re-evaluated for every step. Everything that changes from step to
// step (token ids, positions) is read by the kernels from small device
// tensors that the host writes before each evaluation, so a decode step is
// one submission and one wait, with no allocation or descriptor update.
#include "kompute/llm/Model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include <kompute/kernels/Kernels.hpp>
#include <kompute/logger/Logger.hpp>

#include "WeightFormats.hpp"

namespace kp {
namespace llm {

namespace {

/** KOMPUTE_ENV_ROPE_INSIDE: decode steps rotate inside the qkv product on
 * every mat-vec mode ("all", the default) or only on the float one
 * ("float": the int-dot product then records OpRoPECache after it); for
 * tuning, read each time a step is recorded; other values are reported and
 * the default kept. */
bool
ropeInsideEverywhere()
{
    const char* text = std::getenv("KOMPUTE_ENV_ROPE_INSIDE");
    if (text == nullptr || *text == '\0' || std::string(text) == "all") {
        return true;
    }
    if (std::string(text) == "float") {
        return false;
    }
    KP_LOG_WARN("KOMPUTE_ENV_ROPE_INSIDE={} is ignored: it is 'all' (the default) or 'float'", text);
    return true;
}

/** An on/off variable: "1" or "0" overrides `fallback`; other values are
 * reported and ignored. */
bool
switchFromEnv(const char* name, bool fallback)
{
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') {
        return fallback;
    }
    if (std::string(text) == "1" || std::string(text) == "0") {
        return text[0] == '1';
    }
    KP_LOG_WARN("{}={} is ignored: it is 1 or 0", name, text);
    return fallback;
}

/** KOMPUTE_ENV_DECODE_CHAIN overrides ContextOptions::dispatchChain. */
bool
dispatchChainWanted(bool option)
{
    return switchFromEnv("KOMPUTE_ENV_DECODE_CHAIN", option);
}

/** Where the decode's gate/up product writes the SwiGLU, which ffn_down
 * reads (MatMulParams::swigluC). */
enum class DecodeGlu
{
    eOff,    ///< ffn_down computes the SwiGLU of gate and up (swigluA)
    eIntDot, ///< on the int-dot mat-vec, with its int8 blocks (quantizeC, quantizedA)
    eAll,    ///< there, and on the float mat-vec (the SwiGLU's row of floats)
};

/** KOMPUTE_ENV_DECODE_GLU: "0", "1" or "int-dot", "all" (the default).
 * The int-dot mat-vec's form ran Q4_0 at 374-378 t/s on the H100 against
 * 368-371 with the down product's x pass, and Q8_0 at 221.5 against 217-218
 * (docs/performance.md, seventeenth session); the float mat-vec's (f16
 * models) ran 155.27 and 156.02 t/s against 153.69 and 153.98 without it,
 * alternated in one H100 call (nineteenth session; +0.9% in the eighteenth).
 * Read each time a step is recorded. */
DecodeGlu
decodeGluWanted()
{
    const char* text = std::getenv("KOMPUTE_ENV_DECODE_GLU");
    if (text == nullptr || *text == '\0') {
        return DecodeGlu::eAll;
    }
    std::string value = text;
    if (value == "0") {
        return DecodeGlu::eOff;
    }
    if (value == "1" || value == "int-dot") {
        return DecodeGlu::eIntDot;
    }
    if (value == "all") {
        return DecodeGlu::eAll;
    }
    KP_LOG_WARN("KOMPUTE_ENV_DECODE_GLU={} is ignored: it is 0, 1 or int-dot, or all (the default)", text);
    return DecodeGlu::eAll;
}

/** KOMPUTE_ENV_ATTENTION_INSIDE (a count of tokens) overrides
 * ContextOptions::attentionInsideContext; other values are reported and
 * ignored. */
uint32_t
attentionInsideFromEnv(uint32_t option)
{
    const char* text = std::getenv("KOMPUTE_ENV_ATTENTION_INSIDE");
    if (text == nullptr || *text == '\0') {
        return option;
    }
    char* end = nullptr;
    unsigned long value = std::strtoul(text, &end, 10);
    if (*end != '\0' || text[0] == '-' || value > 0xFFFFFFFFul) {
        KP_LOG_WARN("KOMPUTE_ENV_ATTENTION_INSIDE={} is ignored: it is a count of tokens (0: off)", text);
        return option;
    }
    return static_cast<uint32_t>(value);
}

/** The product with a fused option (normA, swigluA, swigluC, ropeC), or
 * null where the device or the library refuses it: the caller then records
 * the operations it replaces. */
std::shared_ptr<kp::OpMatMul>
fusedMatMul(const std::vector<std::shared_ptr<kp::Memory>>& tensors, const kp::MatMulParams& p)
{
    try {
        return std::make_shared<kp::OpMatMul>(tensors, p);
    } catch (const kp::Error&) {
        return nullptr;
    }
}

using MemoryTypes = kp::Memory::MemoryTypes;
using DataTypes = kp::Memory::DataTypes;

kp::WeightFormat
formatOf(const DeviceWeight& weight)
{
    kp::WeightFormat format = weightFormatOf(weight.type);
    return weight.grouped ? kp::groupedFormat(format) : format;
}

/** Refuses a tensor of `bytes` that one storage buffer of the device
 * cannot hold (every kernel reads its operands through one binding). */
void
checkFits(kp::Manager& manager, uint64_t bytes, const std::string& what, const std::string& remedy)
{
    const uint64_t maxRange = manager.getDeviceProperties().limits.maxStorageBufferRange;
    if (bytes > std::min<uint64_t>(maxRange, UINT32_MAX)) {
        throw kp::Error(what + " would take " + std::to_string(bytes) +
                        " bytes, more than one storage buffer of this device holds (maxStorageBufferRange " +
                        std::to_string(maxRange) + " bytes): " + remedy);
    }
}

std::shared_ptr<kp::Tensor>
floats(kp::Manager& manager, uint64_t count)
{
    checkFits(manager, count * 4, "an activation tensor for one step", "use a smaller batch size");
    return manager.tensor(static_cast<uint32_t>(count), 4, DataTypes::eFloat, MemoryTypes::eStorage);
}

std::shared_ptr<kp::Tensor>
halves(kp::Manager& manager, uint64_t count)
{
    checkFits(manager, count * 2, "an activation tensor for one step", "use a smaller batch size");
    return manager.tensor(static_cast<uint32_t>(count), 2, DataTypes::eHalf, MemoryTypes::eStorage);
}

} // namespace

/** One recorded sequence: the forward pass for `tokens` tokens. */
struct Context::Step
{
    uint32_t tokens = 0;
    Output output = Output::eNone;
    /** A decode step that asks for the attention inside its query/key/value
     * product (ContextOptions::attentionInsideContext). */
    bool attentionInside = false;
    std::shared_ptr<kp::Sequence> sequence;
    /** Labels of the recorded operations, for the profile. */
    std::vector<std::string> labels;
};

Context::Context(std::shared_ptr<Model> model, ContextOptions options)
  : mModel(std::move(model))
  , mOptions(options)
{
    const ModelConfig& c = mModel->config();
    kp::Manager& manager = mModel->manager();
    mCapacity = options.contextSize ? options.contextSize : std::min<uint32_t>(c.contextLength, 4096);
    if (mCapacity == 0) {
        throw kp::Error("the context size must be at least 1 token (the model's context length is 0)");
    }
    if (mOptions.batchSize == 0) {
        throw kp::Error("the batch size must be at least 1");
    }
    mOptions.batchSize = std::min(mOptions.batchSize, mCapacity);
    const uint64_t batch = mOptions.batchSize;
    const uint64_t q = uint64_t(c.headCount) * c.headDim;
    const uint64_t kv = uint64_t(c.headCountKv) * c.headDim;

    // Token ids and positions: the host writes them, OpSyncDevice at the
    // start of each step moves them (nothing to move on unified memory).
    mIds = manager.tensorT<uint32_t>(std::vector<uint32_t>(batch, 0));
    mPositions = manager.tensorT<uint32_t>(std::vector<uint32_t>(batch, 0));
    mArgmax = manager.tensorT<uint32_t>(std::vector<uint32_t>(1, 0));
    mOptions.attentionInsideContext = attentionInsideFromEnv(options.attentionInsideContext);
    if (dispatchChainWanted(options.dispatchChain) && !options.profile) {
        // Word 0 (a wait gave up), then two words per slot: a layer's
        // products take at most 5 (qkv, attn_output, gate_up, the x pass
        // and ffn_down), and the output one.
        mChain = manager.tensorT<uint32_t>(std::vector<uint32_t>(2 + 2 * (5 * size_t(c.blockCount) + 1), 0));
    }

    mX = floats(manager, batch * c.embeddingLength);
    mNormed = floats(manager, batch * c.embeddingLength);
    // Per token [query | key | value], the columns of one matrix product.
    mQkv = floats(manager, batch * (q + 2 * kv));
    mAttention = floats(manager, batch * q);
    // mGate, mUp and mHidden (f32) are made by record() for the steps that
    // need them: decoding (gate and up of one token), models whose gate and
    // up are apart or whose prompt steps keep f32 rows, and prompt steps on
    // devices without MatMulParams::swigluC. Llama-8B's prompt steps of 512
    // f16 rows need none of them (117 MB).
    // Steps of several tokens hand their matrix products f16 rows (the
    // normalized rows and SwiGLU's output): half the bytes each tile load
    // reads; on the H200 the products ran a third faster with f16 weights
    // and 5-8% with quantized ones (docs/performance.md). llama.cpp's CUDA
    // backend does as much (f16 rows into cuBLAS, int8 ones into its
    // quantized products). Decode steps keep f32, and so do models with f32
    // or bf16 matrices: f32 because their users asked for f32 accuracy, bf16
    // because their activations may pass f16's range.
    const bool halfRows = batch > 1 && manager.capabilities().storageBuffer16Bit &&
                          std::all_of(mModel->layers().begin(), mModel->layers().end(), [](const Model::Layer& w) {
                              for (const DeviceWeight* m : { &w.wq, &w.wk, &w.wv, &w.wo, &w.wGate, &w.wUp, &w.wDown }) {
                                  if (m->type == TensorType::eF32 || m->type == TensorType::eBF16) {
                                      return false;
                                  }
                              }
                              return true;
                          });
    if (halfRows) {
        mNormedHalf = halves(manager, batch * c.embeddingLength);
        mHiddenHalf = halves(manager, batch * c.feedForwardLength);
        // The attention's output too (the KV cache is f16): attn_output
        // read it as f32 rows, a third more bytes per tile than f16 ones
        // (H100 pp512 F16 profile: attn_output 3.88 ms at 142 TFLOP/s,
        // ffn_down on f16 rows 9.43 ms at 204).
        mAttentionHalf = halves(manager, batch * q);
    }

    // The KV cache, f16: per layer [capacity][kvHeads][headDim] for keys and
    // for values (a token's row is what OpRoPECache writes).
    checkFits(manager, uint64_t(mCapacity) * kv * 2, "a KV cache of " + std::to_string(mCapacity) + " tokens",
              "use a smaller context size");
    for (uint32_t layer = 0; layer < c.blockCount; ++layer) {
        for (auto* cache : { &mKeyCache, &mValueCache }) {
            cache->push_back(manager.tensor(static_cast<uint32_t>(uint64_t(mCapacity) * kv), 2, DataTypes::eHalf,
                                            MemoryTypes::eStorage));
        }
    }
    mLastLogits = manager.tensor(c.vocabSize, 4, DataTypes::eFloat, MemoryTypes::eDevice);
    // Steps that return every row's logits hold at most what one storage
    // buffer can (128 MiB on some drivers: 261 rows of a 128k vocabulary).
    uint64_t maxRange = manager.getDeviceProperties().limits.maxStorageBufferRange;
    mAllLogitsRows = static_cast<uint32_t>(
      std::max<uint64_t>(1, std::min<uint64_t>(mOptions.batchSize, maxRange / (uint64_t(c.vocabSize) * 4))));
}

Context::~Context() = default;

void
Context::checkTokens(const std::vector<uint32_t>& tokens) const
{
    const uint32_t vocab = mModel->config().vocabSize;
    for (uint32_t id : tokens) {
        if (id >= vocab) {
            throw kp::Error("token id " + std::to_string(id) + " is outside the vocabulary of " +
                            std::to_string(vocab) + " tokens");
        }
    }
    if (tokens.size() > mCapacity - mPosition) {
        throw kp::Error("the context is full: " + std::to_string(mPosition) + " of " + std::to_string(mCapacity) +
                        " tokens are cached and " + std::to_string(tokens.size()) +
                        " more were given (reset the context, or make it larger)");
    }
}

Context::Step&
Context::step(uint32_t tokens, Output output, bool attentionInside)
{
    auto key = std::make_tuple(tokens, static_cast<int>(output), attentionInside);
    auto it = mSteps.find(key);
    if (it != mSteps.end()) {
        return *it->second;
    }
    auto made = std::make_unique<Step>();
    made->tokens = tokens;
    made->output = output;
    made->attentionInside = attentionInside;
    record(*made);
    return *mSteps.emplace(key, std::move(made)).first->second;
}

void
Context::record(Step& s)
{
    const Model& model = *mModel;
    const ModelConfig& c = model.config();
    kp::Manager& manager = model.manager();
    const uint32_t t = s.tokens;
    const uint32_t d = c.embeddingLength;
    const uint32_t kv = c.headCountKv * c.headDim;
    const uint32_t ff = c.feedForwardLength;

    // The rows the products read: f16 in steps of several tokens where the
    // constructor made them.
    const bool half = t > 1 && mNormedHalf;
    // An f32 activation of at least `count` elements in `slot`: made at its
    // first use, and made again larger for a longer step (the steps
    // recorded before keep the one they hold).
    auto floatsFor = [&](std::shared_ptr<kp::Tensor>& slot, uint64_t count) -> const std::shared_ptr<kp::Tensor>& {
        if (!slot || slot->size() < count) {
            slot = floats(manager, count);
        }
        return slot;
    };
    const std::shared_ptr<kp::Tensor>& normed = half ? mNormedHalf : mNormed;
    // SwiGLU's output (made where a step first writes it: a decode step
    // whose down projection reads silu(gate) * up itself never does).
    auto hidden = [&]() -> const std::shared_ptr<kp::Tensor>& {
        return half ? mHiddenHalf : floatsFor(mHidden, uint64_t(t) * ff);
    };
    const std::shared_ptr<kp::Tensor>& attended = half ? mAttentionHalf : mAttention;

    std::vector<std::pair<std::shared_ptr<kp::OpBase>, std::string>> ops;
    // A decode step's dispatch chain (ContextOptions::dispatchChain): the
    // mat-vecs take slots in order, and one right after another chained
    // one waits for it in its shaders instead of behind a barrier.
    const bool chain = t == 1 && mChain != nullptr;
    uint32_t nextSlot = 0;
    bool chainOpen = false; // the last operation added signals the chain
    auto add = [&](std::shared_ptr<kp::OpBase> op, std::string label) {
        kp::OpBase::ChainLink signals = op->chainSignal();
        chainOpen = signals.chain != nullptr;
        if (chainOpen) {
            nextSlot = signals.slot + 1;
        }
        ops.emplace_back(std::move(op), std::move(label));
    };
    // The product, chained where the step is (m = 1); where the library
    // refuses it chained, as before; null where it refuses it at all and
    // `mayRefuse` (a fused option: the caller then records what it fuses).
    auto product = [&](std::vector<std::shared_ptr<kp::Memory>> tensors, const kp::MatMulParams& p,
                       bool mayRefuse) -> std::shared_ptr<kp::OpMatMul> {
        if (chain && p.m == 1) {
            kp::MatMulParams chained = p;
            chained.chained = true;
            chained.chainSlot = nextSlot;
            chained.chainWaits = chainOpen;
            std::vector<std::shared_ptr<kp::Memory>> withChain = tensors;
            withChain.push_back(mChain);
            if (auto op = fusedMatMul(withChain, chained)) {
                return op;
            }
        }
        return mayRefuse ? fusedMatMul(tensors, p) : std::make_shared<kp::OpMatMul>(tensors, p);
    };

    // Y[t, out] (+)= X[t, in] . W[out, in]^T, Y's rows `ldy` apart (0: out)
    // from `yOffset` on.
    auto linearParams = [&](const DeviceWeight& w, bool accumulate, uint32_t rows, uint64_t xOffset, uint32_t ldy,
                            uint64_t yOffset) {
        kp::MatMulParams p;
        p.m = rows;
        p.n = w.rows;
        p.k = w.cols;
        p.transB = true;
        p.beta = accumulate ? 1.0f : 0.0f;
        p.offsetA = xOffset;
        p.offsetB = w.offset;
        p.ldc = ldy;
        p.offsetC = yOffset;
        p.formatB = formatOf(w);
        return p;
    };
    auto linear = [&](const std::shared_ptr<kp::Tensor>& x, const DeviceWeight& w, const std::shared_ptr<kp::Tensor>& y,
                      bool accumulate, uint32_t rows, uint64_t xOffset, const std::string& label, uint32_t ldy = 0,
                      uint64_t yOffset = 0) {
        add(product({ x, w.tensor, y }, linearParams(w, accumulate, rows, xOffset, ldy, yOffset), false),
            label + " (OpMatMul)");
    };
    auto rmsNorm = [&](const std::shared_ptr<kp::Tensor>& x, const DeviceWeight& w, const std::shared_ptr<kp::Tensor>& y,
                       const std::string& label) {
        kp::RMSNormParams p;
        p.rows = t;
        p.cols = d;
        p.eps = c.rmsEpsilon;
        add(std::make_shared<kp::OpRMSNorm>(std::vector<std::shared_ptr<kp::Memory>>{ x, w.tensor, y }, p),
            label + " (OpRMSNorm)");
    };
    // One token: the RMSNorm of the residual row inside the mat-vec that
    // reads it (MatMulParams::normA: x normalized as the mat-vec reads or
    // quantizes it), one dispatch and one barrier fewer, where the device
    // and the weights take a mode that does (float weights, the int-dot
    // quantized-x mode); else OpRMSNorm into `normed`, then the product.
    auto normedLinear = [&](const DeviceWeight& norm, const DeviceWeight& w, const std::shared_ptr<kp::Tensor>& y,
                            const std::string& normLabel, const std::string& label) {
        if (t == 1) {
            kp::MatMulParams p = linearParams(w, false, 1, 0, 0, 0);
            p.normA = true;
            p.normEps = c.rmsEpsilon;
            p.normOffset = norm.offset;
            if (auto fused = product({ mX, w.tensor, y, norm.tensor }, p, true)) {
                add(fused, label + " (OpMatMul, " + normLabel + " inside)");
                return;
            }
        }
        rmsNorm(mX, norm, normed, normLabel);
        linear(normed, w, y, false, t, 0, label);
    };
    const uint32_t q = c.headCount * c.headDim;
    const uint32_t qkv = q + 2 * kv; // mQkv's row
    const float attentionScale = 1.0f / std::sqrt(static_cast<float>(c.headDim));
    // qwen2's biases [q | k | v] (one tensor, Model::place) go in with the
    // rotation, unless a q/k norm must come between them.
    const bool biasInRope = c.attentionBias && !c.qkNorm;
    // RoPE on the query heads in place and on the key heads into the key
    // cache, the value heads into the value cache, at each row's position:
    // its parameters, and its tensors after qkv.
    auto ropeParams = [&](const Model::Layer& w, uint32_t layer, std::vector<std::shared_ptr<kp::Memory>>& tensors) {
        kp::RoPECacheParams p;
        p.rows = t;
        p.heads = c.headCount;
        p.kvHeads = c.headCountKv;
        p.headDim = c.headDim;
        p.ropeDims = c.ropeDims;
        p.theta = c.ropeTheta;
        p.freqScale = c.ropeFreqScale;
        // GGUF's llama layout rotates adjacent pairs; qwen2/qwen3 keep
        // Hugging Face's halves.
        p.mode = c.ropeNeox ? kp::RoPEMode::eNeoX : kp::RoPEMode::eNormal;
        p.qkvRowStride = qkv;
        p.cacheRowStride = kv;
        tensors.insert(tensors.end(), { mPositions, mKeyCache[layer], mValueCache[layer] });
        if (c.ropeFreqFactors) {
            p.hasFreqFactors = true;
            p.freqFactorsOffset = model.ropeFreqs().offset;
            tensors.push_back(model.ropeFreqs().tensor);
        }
        if (biasInRope) {
            p.hasBias = true;
            p.biasOffset = w.bq.offset;
            tensors.push_back(w.bq.tensor);
        }
        return p;
    };
    // One dispatch.
    auto ropeCache = [&](const Model::Layer& w, uint32_t layer) {
        std::vector<std::shared_ptr<kp::Memory>> tensors{ mQkv };
        kp::RoPECacheParams p = ropeParams(w, layer, tensors);
        add(std::make_shared<kp::OpRoPECache>(tensors, p), "rope_kv_cache (OpRoPECache)");
    };
    // One token, the three projections in one tensor, no q/k norm between
    // them and the rotation, adjacent pairs: the product normalizes x, and
    // rotates and caches its row as it writes it (MatMulParams::normA and
    // ropeC), one dispatch for what took two, with a barrier fewer. False
    // where the device or the weights' mat-vec mode refuse it, and where
    // the product takes the int-dot mat-vec and KOMPUTE_ENV_ROPE_INSIDE is
    // "float". On an H100 the F16 decode gained 2.2% with it (152.7 against
    // 149.4 t/s); with the decode attention at 256 x 4 the int-dot products
    // gain too: Q4_0 361.2 and 361.1 against 348.0 and 352.9 (and 359.1
    // against 347.7 in the call before), Q8_0 219.7 against 213.5, where
    // before that attention Q4_0 lost 1.3% (docs/performance.md).
    bool attendedInside = false; // by qkvWithRope, for this layer
    auto qkvWithRope = [&](const Model::Layer& w, uint32_t layer, const DeviceWeight& all) {
        if (t != 1 || c.qkNorm || c.ropeNeox) {
            return false;
        }
        kp::MatMulParams p = linearParams(all, false, 1, 0, 0, 0);
        p.normA = true;
        p.normEps = c.rmsEpsilon;
        p.normOffset = w.attnNorm.offset;
        p.ropeC = true;
        std::vector<std::shared_ptr<kp::Memory>> tensors{ mX, all.tensor, mQkv, w.attnNorm.tensor };
        p.rope = ropeParams(w, layer, tensors);
        if (s.attentionInside && !chain) {
            // The attention too (MatMulParams::attentionC), where the
            // library takes it; else OpAttention after the product.
            kp::MatMulParams attending = p;
            attending.attentionC = true;
            attending.attentionScale = attentionScale;
            std::vector<std::shared_ptr<kp::Memory>> withOutput = tensors;
            withOutput.push_back(attended);
            std::shared_ptr<kp::OpMatMul> fused = fusedMatMul(withOutput, attending);
            if (fused && (fused->path() == "matvec" || ropeInsideEverywhere())) {
                add(fused, "attn_qkv (OpMatMul, attn_norm, rope_kv_cache and attention inside)");
                attendedInside = true;
                return true;
            }
        }
        std::shared_ptr<kp::OpMatMul> fused = product(tensors, p, true);
        if (!fused || (fused->path() != "matvec" && !ropeInsideEverywhere())) {
            return false;
        }
        add(fused, "attn_qkv (OpMatMul, attn_norm and rope_kv_cache inside)");
        return true;
    };

    // One token, gate and up in one tensor (see KOMPUTE_ENV_DECODE_GLU): the
    // product normalizes x, and writes silu(gate) * up and that row
    // quantized to int8 blocks (MatMulParams::swigluC and quantizeC) into
    // mGate; the down projection reads the blocks as its x (quantizedA).
    // Two dispatches where the SwiGLU's x pass made three, one barrier
    // fewer per layer. With KOMPUTE_ENV_DECODE_GLU=all (the default), where
    // the product refuses the blocks (quantizeC: the int-dot quantized-x
    // mode only), it writes silu(gate) * up alone (float weights in the
    // float row mode) and the down projection reads that row of floats,
    // where it would otherwise compute the SwiGLU of two f32 rows in each
    // of its workgroups (swigluA). False where it is off or the device or the
    // weights' mat-vec mode refuse swigluC.
    const DecodeGlu glu = decodeGluWanted();
    auto gluDecode = [&](const Model::Layer& w) {
        if (glu == DecodeGlu::eOff) {
            return false;
        }
        kp::MatMulParams gateUp = linearParams(w.wGate, false, 1, 0, 0, 0);
        gateUp.swigluC = true;
        gateUp.quantizeC = true;
        // (The offsets count weights, rows of cols: Model::place joins them.)
        gateUp.upRowB = static_cast<uint32_t>((w.wUp.offset - w.wGate.offset) / w.wGate.cols);
        gateUp.normA = true;
        gateUp.normEps = c.rmsEpsilon;
        gateUp.normOffset = w.ffnNorm.offset;
        const std::shared_ptr<kp::Tensor>& h = floatsFor(mGate, ff + kp::quantizedRowWords(ff));
        std::shared_ptr<kp::OpMatMul> fused = fusedMatMul({ mX, w.wGate.tensor, h, w.ffnNorm.tensor }, gateUp);
        if (!fused && glu == DecodeGlu::eAll) {
            gateUp.quantizeC = false;
            fused = fusedMatMul({ mX, w.wGate.tensor, h, w.ffnNorm.tensor }, gateUp);
        }
        if (!fused) {
            return false;
        }
        add(fused, "ffn_gate_up_swiglu (OpMatMul, ffn_norm inside)");
        kp::MatMulParams down = linearParams(w.wDown, true, 1, ff, 0, 0);
        down.quantizedA = true;
        std::shared_ptr<kp::OpMatMul> quantized;
        if (gateUp.quantizeC && (quantized = fusedMatMul({ h, w.wDown.tensor, mX }, down))) {
            add(quantized, "ffn_down (OpMatMul, x quantized by ffn_gate_up_swiglu)");
        } else {
            linear(h, w.wDown, mX, true, 1, 0, "ffn_down");
        }
        return true;
    };

    std::vector<std::shared_ptr<kp::Memory>> inputs{ mIds, mPositions };
    if (chain) {
        inputs.push_back(mChain); // zeroed by run()
    }
    add(std::make_shared<kp::OpSyncDevice>(inputs), "inputs (OpSyncDevice)");
    {
        kp::GetRowsParams p;
        p.rows = t;
        p.cols = d;
        p.formatTable = formatOf(model.tokenEmbedding());
        add(std::make_shared<kp::OpGetRows>(model.tokenEmbedding().tensor, mIds, mX, p), "token_embd (OpGetRows)");
    }
    for (uint32_t layer = 0; layer < c.blockCount; ++layer) {
        const Model::Layer& w = model.layers()[layer];
        bool rotated = false; // RoPE and the cache write done by the product
        attendedInside = false; // and the attention (qkvWithRope)
        if (w.wq.tensor == w.wk.tensor && w.wk.tensor == w.wv.tensor) {
            // One tensor holds the three matrices (Model::place): one product.
            DeviceWeight all = w.wq;
            all.rows = qkv;
            rotated = qkvWithRope(w, layer, all);
            if (!rotated) {
                normedLinear(w.attnNorm, all, mQkv, "attn_norm", "attn_qkv");
            }
        } else {
            rmsNorm(mX, w.attnNorm, normed, "attn_norm");
            linear(normed, w.wq, mQkv, false, t, 0, "attn_q", qkv, 0);
            linear(normed, w.wk, mQkv, false, t, 0, "attn_k", qkv, q);
            linear(normed, w.wv, mQkv, false, t, 0, "attn_v", qkv, q + kv);
        }
        if (c.attentionBias && !biasInRope) {
            // The biases [q | k | v] added to every row of the product
            // before the q/k norm.
            kp::BinaryParams p;
            p.op = kp::BinaryOp::eAdd;
            p.count = t * qkv;
            p.bCount = qkv;
            p.bOffset = w.bq.offset;
            add(std::make_shared<kp::OpBinary>(std::vector<std::shared_ptr<kp::Memory>>{ mQkv, w.bq.tensor, mQkv }, p),
                "attn_qkv_bias (OpBinary)");
        }
        if (c.qkNorm) {
            // qwen3: every query and key head RMS-normalized on its own, in
            // place, in one operation (the weight tensor holds each head's
            // norm, Model::place).
            kp::RMSNormParams p;
            p.rows = t;
            p.cols = c.headDim;
            p.heads = c.headCount + c.headCountKv;
            p.weightHeadStride = c.headDim;
            p.weightOffset = w.qNorm.offset;
            p.eps = c.rmsEpsilon;
            p.xRowStride = qkv;
            p.yRowStride = qkv;
            add(std::make_shared<kp::OpRMSNorm>(std::vector<std::shared_ptr<kp::Memory>>{ mQkv, w.qNorm.tensor, mQkv }, p),
                "attn_qk_norm (OpRMSNorm)");
        }
        if (!rotated) {
            ropeCache(w, layer);
        }
        if (!attendedInside) {
            kp::AttentionParams p;
            p.rows = t;
            p.heads = c.headCount;
            p.kvHeads = c.headCountKv;
            p.headDim = c.headDim;
            p.kvCapacity = mCapacity;
            p.scale = attentionScale;
            p.causal = true;
            p.kvRowStride = kv;
            p.qRowStride = qkv;
            add(std::make_shared<kp::OpAttention>(
                  std::vector<std::shared_ptr<kp::Memory>>{ mQkv, mKeyCache[layer], mValueCache[layer], mPositions, attended },
                  p),
                "attention (OpAttention)");
        }
        linear(attended, w.wo, mX, true, t, 0, "attn_output");
        kp::SwiGLUParams swiglu;
        swiglu.count = t * ff;
        if (t == 1 && w.wGate.tensor == w.wUp.tensor && gluDecode(w)) {
            continue; // the layer's last operation
        }
        if (t == 1 && w.wGate.tensor == w.wUp.tensor) {
            // Decoding: gate and up rows in one mat-vec, [gate | up] in mGate.
            DeviceWeight gateUp = w.wGate;
            gateUp.rows = 2 * ff;
            normedLinear(w.ffnNorm, gateUp, floatsFor(mGate, 2 * uint64_t(ff)), "ffn_norm", "ffn_gate_up");
            // The down projection's mat-vec reads silu(gate) * up itself
            // (swigluA): one dispatch and one barrier fewer per layer. A
            // device without the mat-vec refuses it: the separate OpSwiGLU.
            kp::MatMulParams down = linearParams(w.wDown, true, 1, ff, 0, 0);
            down.swigluA = true;
            down.gateOffsetA = 0;
            if (auto fused = product({ mGate, w.wDown.tensor, mX }, down, true)) {
                add(fused, "ffn_down_swiglu (OpMatMul)");
                continue; // the layer's last operation
            }
            swiglu.upOffset = ff;
            add(std::make_shared<kp::OpSwiGLU>(std::vector<std::shared_ptr<kp::Memory>>{ mGate, mGate, hidden() },
                                               swiglu),
                "swiglu (OpSwiGLU)");
        } else if (w.wGate.tensor == w.wUp.tensor) {
            // A prompt step: gate and up in one product whose epilogue takes
            // the SwiGLU of each output's two sums (MatMulParams::swigluC)
            // into `hidden`: no SwiGLU dispatch, and a quarter of the bytes
            // written (f16 rows of ff, where the two products wrote f32
            // rows of 2 ff). Its tiles hold the gate's and the up's rows of
            // the same outputs, the grid as many tiles as both products
            // (Llama-8B at 512 tokens: 896 tiles of 128 x 128 on 132 SMs,
            // 6.8 waves, where two products of 448 took 3.4 each, their last
            // wave two-fifths full).
            // (KOMPUTE_ENV_DISABLE=gemm-swiglu refuses it: the product of 2 ff
            // columns, then OpSwiGLU.)
            rmsNorm(mX, w.ffnNorm, normed, "ffn_norm");
            kp::MatMulParams gateUpSwiglu = linearParams(w.wGate, false, t, 0, 0, 0);
            gateUpSwiglu.n = ff;
            gateUpSwiglu.swigluC = true;
            // (The offsets count weights, rows of cols: Model::place joins them.)
            gateUpSwiglu.upRowB = static_cast<uint32_t>((w.wUp.offset - w.wGate.offset) / w.wGate.cols);
            if (auto fused = fusedMatMul({ normed, w.wGate.tensor, hidden() }, gateUpSwiglu)) {
                add(fused, "ffn_gate_up_swiglu (OpMatMul)");
            } else {
                DeviceWeight gateUp = w.wGate;
                gateUp.rows = 2 * ff;
                linear(normed, gateUp, floatsFor(mGate, uint64_t(t) * 2 * ff), false, t, 0, "ffn_gate_up");
                swiglu.cols = ff;
                swiglu.upOffset = ff;
                swiglu.gateRowStride = 2 * ff;
                swiglu.upRowStride = 2 * ff;
                add(std::make_shared<kp::OpSwiGLU>(std::vector<std::shared_ptr<kp::Memory>>{ mGate, mGate, hidden() },
                                                   swiglu),
                    "swiglu (OpSwiGLU)");
            }
        } else {
            rmsNorm(mX, w.ffnNorm, normed, "ffn_norm");
            linear(normed, w.wGate, floatsFor(mGate, uint64_t(t) * ff), false, t, 0, "ffn_gate");
            linear(normed, w.wUp, floatsFor(mUp, uint64_t(t) * ff), false, t, 0, "ffn_up");
            add(std::make_shared<kp::OpSwiGLU>(std::vector<std::shared_ptr<kp::Memory>>{ mGate, mUp, hidden() }, swiglu),
                "swiglu (OpSwiGLU)");
        }
        linear(hidden(), w.wDown, mX, true, t, 0, "ffn_down");
    }

    if (s.output != Output::eNone) {
        if (s.output != Output::eAll && t == 1) {
            normedLinear(model.outputNorm(), model.output(), mLastLogits, "output_norm", "output");
        } else {
            rmsNorm(mX, model.outputNorm(), normed, "output_norm");
        }
        if (s.output == Output::eAll) {
            if (!mAllLogits) {
                mAllLogits = manager.tensor(static_cast<uint32_t>(uint64_t(mAllLogitsRows) * c.vocabSize), 4,
                                            DataTypes::eFloat, MemoryTypes::eDevice);
            }
            linear(normed, model.output(), mAllLogits, false, t, 0, "output");
            add(std::make_shared<kp::OpSyncLocal>(std::vector<std::shared_ptr<kp::Memory>>{ mAllLogits }),
                "logits (OpSyncLocal)");
        } else {
            // Only the last token's row is computed and read back.
            if (t > 1) {
                linear(normed, model.output(), mLastLogits, false, 1, uint64_t(t - 1) * d, "output");
            }
            if (s.output == Output::eArgmax) {
                kp::ReduceParams p;
                p.op = kp::ReduceOp::eArgmax;
                p.rows = 1;
                p.cols = c.vocabSize;
                add(std::make_shared<kp::OpReduce>(std::vector<std::shared_ptr<kp::Memory>>{ mLastLogits, mArgmax }, p),
                    "argmax (OpReduce)");
                add(std::make_shared<kp::OpSyncLocal>(std::vector<std::shared_ptr<kp::Memory>>{ mArgmax }),
                    "argmax (OpSyncLocal)");
            } else {
                add(std::make_shared<kp::OpSyncLocal>(std::vector<std::shared_ptr<kp::Memory>>{ mLastLogits }),
                    "logits (OpSyncLocal)");
            }
        }
    }
    if (chain) {
        // Whether a wait gave up (word 0), for run().
        add(std::make_shared<kp::OpSyncLocal>(std::vector<std::shared_ptr<kp::Memory>>{ mChain }),
            "chain (OpSyncLocal)");
    }

    s.sequence = manager.sequence(mOptions.queueIndex, mOptions.profile ? static_cast<uint32_t>(ops.size()) : 0);
    for (auto& [op, label] : ops) {
        s.sequence->record(op);
        s.labels.push_back(label);
    }
}

void
Context::run(const std::vector<uint32_t>& tokens, size_t begin, size_t end, Output output)
{
    const uint32_t count = static_cast<uint32_t>(end - begin);
    const bool chained = count == 1 && mChain != nullptr;
    // A decode step attends inside its query/key/value product up to a
    // context of attentionInsideContext tokens (this token's included).
    const bool inside = count == 1 && !chained && mPosition < mOptions.attentionInsideContext;
    Step* s = &step(count, output, inside);
    uint32_t* ids = mIds->data();
    uint32_t* positions = mPositions->data();
    for (uint32_t i = 0; i < count; ++i) {
        ids[i] = tokens[begin + i];
        positions[i] = mPosition + i;
    }
    if (chained) {
        std::fill(mChain->data(), mChain->data() + mChain->size(), 0u);
    }
    s->sequence->eval();
    if (chained && mChain->data()[0] != 0) {
        // A wait of the chain gave up: the step's results are wrong. Run
        // it again with barriers (exact: a step starts from the tokens'
        // embeddings and rewrites the same cache rows), and keep them.
        KP_LOG_WARN("a decode step's dispatch chain gave up waiting on this device: the step runs again with "
                    "barriers, and so does every later one");
        mChain.reset();
        for (auto it = mSteps.begin(); it != mSteps.end();) {
            it = std::get<0>(it->first) == 1 ? mSteps.erase(it) : std::next(it);
        }
        s = &step(count, output, false);
        s->sequence->eval();
    }
    mPosition += count;
    if (mOptions.profile) {
        std::vector<double> stamps = s->sequence->getTimestampsNs();
        for (size_t i = 0; i + 1 < stamps.size() && i < s->labels.size(); ++i) {
            const std::string& label = s->labels[i];
            auto found = std::find_if(mProfile.begin(), mProfile.end(), [&](const OpTime& o) { return o.label == label; });
            if (found == mProfile.end()) {
                mProfile.push_back({ label, 0.0, 0 });
                found = mProfile.end() - 1;
            }
            found->milliseconds += (stamps[i + 1] - stamps[i]) * 1e-6;
            found->count += 1;
        }
    }
}

void
Context::evaluate(const std::vector<uint32_t>& tokens, Logits which, std::vector<float>* logits)
{
    checkTokens(tokens);
    mProfile.clear();
    const uint32_t vocab = mModel->config().vocabSize;
    if (logits) {
        logits->clear();
    }
    if (which != Logits::eNone && (logits == nullptr || tokens.empty())) {
        throw kp::Error(tokens.empty() ? "no tokens to evaluate" : "no vector to put the logits in");
    }
    const size_t batch = which == Logits::eAll ? mAllLogitsRows : mOptions.batchSize;
    for (size_t begin = 0; begin < tokens.size(); begin += batch) {
        size_t end = std::min(tokens.size(), begin + batch);
        bool last = end == tokens.size();
        Output output = which == Logits::eAll ? Output::eAll
                        : (which == Logits::eLast && last) ? Output::eLast
                                                           : Output::eNone;
        run(tokens, begin, end, output);
        if (output == Output::eAll) {
            const float* rows = mAllLogits->data<float>();
            logits->insert(logits->end(), rows, rows + (end - begin) * vocab);
        } else if (output == Output::eLast) {
            const float* row = mLastLogits->data<float>();
            logits->assign(row, row + vocab);
        }
    }
}

uint32_t
Context::evaluateGreedy(const std::vector<uint32_t>& tokens)
{
    checkTokens(tokens);
    if (tokens.empty()) {
        throw kp::Error("no tokens to evaluate");
    }
    mProfile.clear();
    const size_t batch = mOptions.batchSize;
    for (size_t begin = 0; begin < tokens.size(); begin += batch) {
        size_t end = std::min(tokens.size(), begin + batch);
        run(tokens, begin, end, end == tokens.size() ? Output::eArgmax : Output::eNone);
    }
    return mArgmax->data()[0];
}

std::vector<OpTime>
Context::profile() const
{
    std::vector<OpTime> sorted = mProfile;
    std::sort(sorted.begin(), sorted.end(), [](const OpTime& a, const OpTime& b) { return a.milliseconds > b.milliseconds; });
    return sorted;
}

} // namespace llm
} // namespace kp
