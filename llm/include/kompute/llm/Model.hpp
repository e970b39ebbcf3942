// SPDX-License-Identifier: Apache-2.0
// kp::llm::Model: the weights of a Llama-family model on the device, loaded
// from a GGUF file or made up at random for a named shape; and
// kp::llm::Context: a KV cache on the device and the recorded sequences
// that run the model's forward pass over it, one per step shape.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <kompute/Kompute.hpp>

#include "kompute/llm/Gguf.hpp"
#include "kompute/llm/ModelConfig.hpp"
#include "kompute/llm/WeightMix.hpp"

namespace kp {
namespace llm {

/** Called after each weight tensor reaches the device: bytes done and in
 * all. */
using LoadProgress = std::function<void(uint64_t done, uint64_t total)>;

/** A weight matrix (or vector) on the device, in the file's format. */
struct DeviceWeight
{
    /** The tensor holding it (eUnsignedChar GGUF blocks for Q8_0 and Q4_0;
     * shared with other weights where they live together). */
    std::shared_ptr<kp::Tensor> tensor;
    /** The format of its values (norm weights are always F32). */
    TensorType type = TensorType::eF32;
    /** Rows (out) and row length (in) for matrices; 1 x n for vectors. */
    uint32_t rows = 1;
    uint32_t cols = 0; ///< row length (in); n for vectors
    /** Where this matrix starts in the tensor, in weights (a layer's gate
     * and up matrices share one tensor). */
    uint64_t offset = 0;
    /** Blocks regrouped by 8 on the device (kp::groupBlocks: the kernels
     * read kp::WeightFormat::eQ4_0X8 / eQ8_0X8), where the kernel library
     * prefers it (kp::preferredWeightFormat: Q4_0 rows of whole groups of
     * 256 weights). */
    bool grouped = false;
};

/**
 * The weights of a Llama-family model (llama, qwen2, qwen3) on a
 * kp::Manager's device, in the file's format (F32, F16, BF16, Q8_0, Q4_0;
 * norm weights, biases and RoPE factors in f32), with
 * the model's ModelConfig. Made by load() or random() and shared by the
 * Contexts that run it. The Manager must outlive the model (it holds a
 * reference to it, and its tensors hold the device). Not changed after it
 * is made: several contexts may use one model, each from its own thread.
 */
class Model
{
  public:
    /**
     * Checks the file (architecture, hyperparameters, every weight's shape
     * and type, no tensor it does not read: FormatError otherwise, see
     * ModelConfig::fromGguf and checkWeights) and uploads the weights, tensor by
     * tensor, straight from the file's mapping. Norm weights are kept in
     * f32; matrices in their own format (F32, F16, BF16, Q8_0, Q4_0).
     * kp::OutOfMemoryError when the weights do not fit the device. `file`
     * is only read during the call.
     */
    static std::shared_ptr<Model> load(kp::Manager& manager,
                                       const GgufFile& file,
                                       const LoadProgress& progress = {});
    /** A model of `config`'s shape with random weights of `type` (built in
     * memory, no file): the same values for the same seed. */
    static std::shared_ptr<Model> random(kp::Manager& manager,
                                         const ModelConfig& config,
                                         TensorType type,
                                         uint64_t seed = 1,
                                         const LoadProgress& progress = {});
    /** The same with each matrix of the type `mix` gives it (a
     * llama-quantize mix such as Q4_K_M: see WeightMix). */
    static std::shared_ptr<Model> random(kp::Manager& manager,
                                         const ModelConfig& config,
                                         const WeightMix& mix,
                                         uint64_t seed = 1,
                                         const LoadProgress& progress = {});

    /** The model's hyperparameters. */
    const ModelConfig& config() const { return mConfig; }
    /** The type of the layers' matrices ("F16", "Q4_0", ...): that of
     * blk.0.attn_q.weight (see typeCounts() for the whole file). */
    TensorType weightType() const { return mWeightType; }
    /** How many of the file's tensors have each type (for a random model:
     * of its weights). */
    const std::map<TensorType, uint32_t>& typeCounts() const { return mTypeCounts; }
    /** typeCounts() as text, most common type first: "7 Q4_0, 5 F32, 1
     * Q8_0". */
    std::string typeMix() const;
    /** Bytes of all weights on the device. */
    uint64_t weightBytes() const { return mWeightBytes; }
    /** Bytes of the weights one token's forward pass reads (every matrix
     * and norm, the output matrix, one embedding row). */
    uint64_t bytesReadPerToken() const;
    /** The Manager whose device holds the weights. */
    kp::Manager& manager() const { return mManager; }

    // The weights, for the context (and for programs that build their own
    // forward pass).
    /** The weights of one transformer block. */
    struct Layer
    {
        /** attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm,
         * ffn_gate, ffn_up and ffn_down of the block. */
        ///@{
        DeviceWeight attnNorm, wq, wk, wv, wo, ffnNorm, wGate, wUp, wDown;
        ///@}
        /** attn_q.bias, attn_k.bias and attn_v.bias (qwen2; no tensor
         * otherwise): f32, one tensor [q | k | v] at their offsets. */
        ///@{
        DeviceWeight bq, bk, bv;
        ///@}
        /** attn_q_norm and attn_k_norm (qwen3; no tensor otherwise),
         * headDim values each, in one f32 tensor that repeats the query norm
         * for each query head and then the key norm for each key head
         * (kNorm.offset: headCount * headDim), for one per-head RMSNorm over
         * both. */
        ///@{
        DeviceWeight qNorm, kNorm;
        ///@}
    };
    /** The token embedding matrix (token_embd), vocabSize rows. */
    const DeviceWeight& tokenEmbedding() const { return mTokenEmbedding; }
    /** The blocks, blockCount of them. */
    const std::vector<Layer>& layers() const { return mLayers; }
    /** The norm weights before the output matrix (output_norm). */
    const DeviceWeight& outputNorm() const { return mOutputNorm; }
    /** rope_freqs (Llama 3.1's RoPE scaling, ropeDims / 2 f32 divisors);
     * no tensor unless ModelConfig::ropeFreqFactors. */
    const DeviceWeight& ropeFreqs() const { return mRopeFreqs; }
    /** The output matrix (the token embedding when tied). */
    const DeviceWeight& output() const { return mConfig.tiedOutput ? mTokenEmbedding : mOutput; }

    /// \cond INTERNAL
    // A model without weights, which load() and random() fill (public for
    // std::make_shared).
    Model(kp::Manager& manager, ModelConfig config);
    /// \endcond

  private:
    struct WeightSource
    {
        TensorType type;
        const uint8_t* bytes;
        uint64_t byteSize;
    };
    using WeightSourceFn = std::function<WeightSource(const WeightSpec&)>;
    /** Uploads every weight of `specs` from `source`, asking for each once,
     * just before its upload. */
    void place(const std::vector<WeightSpec>& specs, const WeightSourceFn& source, uint64_t total,
               const LoadProgress& progress);
    /** Creates the weight `name` from `bytes` of `type` (norms to f32). */
    DeviceWeight upload(const std::string& name, TensorType type, const uint8_t* bytes,
                        uint32_t rows, uint32_t cols, bool isMatrix);
    DeviceWeight& slot(const std::string& name);

    kp::Manager& mManager;
    ModelConfig mConfig;
    TensorType mWeightType = TensorType::eF32;
    uint64_t mWeightBytes = 0;
    std::map<TensorType, uint32_t> mTypeCounts;
    DeviceWeight mTokenEmbedding, mOutputNorm, mOutput, mRopeFreqs;
    std::vector<Layer> mLayers;
};

/** How a Context is set up. */
struct ContextOptions
{
    /** Tokens the KV cache holds; 0: the model's context length, at most
     * 4096. */
    uint32_t contextSize = 0;
    /** Most tokens evaluated in one step (prompts are split into steps of
     * this many). */
    uint32_t batchSize = 512;
    /** Record timestamps around every operation (see Context::profile()). */
    bool profile = false;
    /** The Manager's queue to run on. */
    uint32_t queueIndex = 0;
    /** Decode steps (one token) order their products by the shaders, not
     * by barriers (MatMulParams::chained): no barrier drains the GPU between
     * the products of a layer, and each product's first weights load while
     * the one before it ends. Not with profile. A step whose wait gave up is
     * run again with barriers, and the context keeps barriers from then on.
     * KOMPUTE_ENV_DECODE_CHAIN=1 (or 0) overrides it. Off by default: on
     * the H100 the chained step is slower than the barriers' (each wait
     * lasts longer than the barrier it replaces; docs/performance.md). */
    bool dispatchChain = false;
    /** Decode steps (one token) at contexts of at most this many tokens
     * (the token's position + 1) compute the attention inside the
     * query/key/value product (MatMulParams::attentionC): one dispatch and
     * one barrier fewer per layer. Each KV head is then attended by one
     * workgroup, so longer contexts take OpAttention, which spreads the
     * context over many workgroups (the context records a decode step of
     * each kind). 0 turns it off, and is the default: on an H100 the
     * decode was slower with it (Q4_0 tg128 356.4 t/s against 370.7-379.0;
     * docs/performance.md, nineteenth session). KOMPUTE_ENV_ATTENTION_INSIDE=N
     * overrides it. Where the device or the model refuses attentionC (NeoX
     * rotation, q/k norms, the dispatch chain), every step records
     * OpAttention. */
    uint32_t attentionInsideContext = 0;
};

/** Which logits an evaluation reads back. */
enum class Logits
{
    eNone, ///< none (only the KV cache is filled)
    eLast, ///< the last token's row
    eAll,  ///< every token's row
};

/** GPU time of one operation of the forward pass, summed over the steps of
 * the last evaluation. */
struct OpTime
{
    std::string label; ///< for example "ffn_down (OpMatMul)"
    double milliseconds = 0.0; ///< GPU time, from the sequence's timestamps
    uint32_t count = 0; ///< how many dispatches it sums (layers x steps)
};

/**
 * A KV cache (f16, on the device) and the recorded sequences that run a
 * Model's forward pass over it, one per step shape, evaluated again for
 * every step. Holds the model (std::shared_ptr) and its own activation
 * tensors (f32; steps of several tokens hand the matrix products of a model
 * with f16 or quantized matrices f16 rows). Not synchronised: one thread at a time per context (a model may
 * serve several contexts).
 */
class Context
{
  public:
    /** Allocates the cache and activations for `options` on the model's
     * Manager. Throws kp::Error for a context or batch size of 0 and for a
     * cache or activation larger than one storage buffer of the device
     * holds (saying what to make smaller), kp::OutOfMemoryError when the
     * device's memory runs out. */
    Context(std::shared_ptr<Model> model, ContextOptions options = {});
    /** Frees the cache, the activations and the recorded sequences. */
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    /** The model it runs. */
    const Model& model() const { return *mModel; }
    /** Tokens in the KV cache: the position of the next token. */
    uint32_t position() const { return mPosition; }
    /** Tokens the KV cache holds. */
    uint32_t capacity() const { return mCapacity; }
    /** Most tokens evaluated in one step (at most capacity()). */
    uint32_t batchSize() const { return mOptions.batchSize; }
    /** Forgets the cached tokens (the next evaluation starts at 0). */
    void reset() { mPosition = 0; }

    /**
     * Runs `tokens` through the model after the tokens already cached and
     * adds them to the cache. Logits go to `logits` as rows of vocabulary
     * size (one row for eLast, one per token for eAll). Throws kp::Error
     * for an id outside the vocabulary or when the cache would overflow
     * (nothing is evaluated then).
     */
    void evaluate(const std::vector<uint32_t>& tokens, Logits which, std::vector<float>* logits);
    /** The same, returning the id of the largest last logit; the argmax
     * runs on the device and only the id is read back. */
    uint32_t evaluateGreedy(const std::vector<uint32_t>& tokens);

    /** Per-operation GPU times of the last evaluation, largest first (with
     * ContextOptions::profile; empty otherwise). */
    std::vector<OpTime> profile() const;
    /** Number of sequences recorded so far (one per step shape). */
    size_t recordedSteps() const { return mSteps.size(); }

  private:
    enum class Output
    {
        eNone,
        eLast,
        eAll,
        eArgmax,
    };
    struct Step;

    Step& step(uint32_t tokens, Output output, bool attentionInside);
    void record(Step& step);
    /** Runs tokens [begin, end) of `tokens` as one step. */
    void run(const std::vector<uint32_t>& tokens, size_t begin, size_t end, Output output);
    void checkTokens(const std::vector<uint32_t>& tokens) const;

    std::shared_ptr<Model> mModel;
    ContextOptions mOptions;
    uint32_t mCapacity = 0;
    uint32_t mPosition = 0;

    // Inputs (written by the host before each step), activations (shared
    // by every step, sized for a full batch; mGate, mUp and mHidden made by
    // record() where a step needs them, for the longest such step), the KV
    // cache, the outputs.
    std::shared_ptr<kp::TensorT<uint32_t>> mIds, mPositions, mArgmax;
    // The decode steps' dispatch chain (ContextOptions::dispatchChain):
    // its words, zeroed with each step's inputs; null without it.
    std::shared_ptr<kp::TensorT<uint32_t>> mChain;
    std::shared_ptr<kp::Tensor> mX, mNormed, mQkv, mAttention, mGate, mUp, mHidden;
    // f16 rows for the products of steps of several tokens (null where
    // those keep f32; see the constructor).
    std::shared_ptr<kp::Tensor> mNormedHalf, mHiddenHalf, mAttentionHalf;
    std::vector<std::shared_ptr<kp::Tensor>> mKeyCache, mValueCache;
    std::shared_ptr<kp::Tensor> mLastLogits, mAllLogits;
    uint32_t mAllLogitsRows = 1; // rows of mAllLogits: steps returning all logits are this long at most

    // Keyed by tokens, output and whether a decode step's attention is
    // inside its query/key/value product.
    std::map<std::tuple<uint32_t, int, bool>, std::unique_ptr<Step>> mSteps;
    std::vector<OpTime> mProfile;
};

} // namespace llm
} // namespace kp
