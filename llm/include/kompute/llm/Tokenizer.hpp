// SPDX-License-Identifier: Apache-2.0
// kp::llm::Tokenizer: text to token ids and back, from the vocabulary a GGUF
// file carries (tokenizer.ggml.*). Two models: the SentencePiece-style BPE of
// Llama 1/2 (scores, '▁' for spaces, byte fallback <0xXX>) and the GPT-2
// style byte-level BPE of Llama 3 and Qwen (merges, a pre-tokenizer pattern,
// bytes mapped to printable characters).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kp {
namespace llm {

class GgufFile;

/** tokenizer.ggml.token_type values. */
enum class TokenType : int32_t
{
    eUndefined = 0,   ///< not given
    eNormal = 1,      ///< an ordinary piece of text
    eUnknown = 2,     ///< the unknown token
    eControl = 3,     ///< a control token (BOS, EOS, <|eot_id|>, ...)
    eUserDefined = 4, ///< a token always matched as a whole
    eUnused = 5,      ///< a reserved, unused token
    eByte = 6,        ///< a byte-fallback token <0xXX>
};

/** Everything a tokenizer is made of; Tokenizer::fromGguf reads it from a
 * file, and programs may build one themselves. */
struct Vocabulary
{
    /** The tokenizer model. */
    enum class Model
    {
        eSentencePiece, ///< tokenizer.ggml.model "llama"
        eByteLevelBpe,  ///< tokenizer.ggml.model "gpt2"
    };
    Model model = Model::eSentencePiece; ///< the tokenizer model
    std::vector<std::string> tokens; ///< each token's text, by id
    /** SentencePiece scores (higher merges first); may be empty for BPE. */
    std::vector<float> scores;
    /** Per token; empty means every token is eNormal. */
    std::vector<TokenType> types;
    /** BPE merges "left right", highest priority first. */
    std::vector<std::string> merges;
    /** BPE pre-tokenizer (tokenizer.ggml.pre): "llama-bpe" (Llama 3),
     * "qwen2" (Qwen2/2.5/3: Llama 3's pattern with digits one by one),
     * "smaug-bpe" or "default"/"gpt2". */
    std::string preTokenizer = "default";
    /** Ids of the special tokens, where the vocabulary has them: beginning
     * and end of sequence, unknown, padding, end of turn, end of message. */
    ///@{
    std::optional<uint32_t> bos, eos, unknown, padding, endOfTurn, endOfMessage;
    ///@}
    bool addBos = true;  ///< encode() with addSpecial puts BOS first
    bool addEos = false; ///< encode() with addSpecial puts EOS last
    /** SentencePiece: prefix the text with a space ('▁'). */
    bool addSpacePrefix = true;
};

/** Text to token ids and back, with a Vocabulary's model (SentencePiece
 * for Llama 1/2, byte-level BPE for Llama 3). Movable, not copyable;
 * immutable once built, so its const functions may be called from several
 * threads at once. */
class Tokenizer
{
  public:
    /** Reads tokenizer.ggml.* of a file; FormatError when keys are missing
     * or inconsistent, or the model or pre-tokenizer is unknown. */
    static Tokenizer fromGguf(const GgufFile& file);
    /** Checks the vocabulary (throws FormatError) and builds the lookups. */
    explicit Tokenizer(Vocabulary vocabulary);
    /** Takes over the other tokenizer, which must not be used afterwards
     * (except to be assigned or destroyed). */
    Tokenizer(Tokenizer&&) noexcept;
    /** Takes over the other tokenizer, as the move constructor. */
    Tokenizer& operator=(Tokenizer&&) noexcept;
    ~Tokenizer();

    /**
     * Token ids of `text`. With `addSpecial`, BOS (and EOS) are added as
     * the vocabulary asks. With `parseSpecial`, the texts of control
     * tokens ("<s>", "<|eot_id|>", ...) in `text` become those tokens;
     * user-defined tokens are always recognised (as SentencePiece does).
     * Bytes that are not valid UTF-8 are encoded as bytes.
     */
    std::vector<uint32_t> encode(std::string_view text,
                                 bool addSpecial = true,
                                 bool parseSpecial = true) const;
    /** Text of `ids`. Control tokens are left out unless `renderSpecial`;
     * the space SentencePiece put before the first word is removed. */
    std::string decode(const std::vector<uint32_t>& ids, bool renderSpecial = false) const;
    /** The bytes token `id` stands for (control tokens: "" unless
     * `renderSpecial`). Pieces of byte-level tokens may be partial UTF-8. */
    std::string piece(uint32_t id, bool renderSpecial = false) const;

    /** Number of tokens in the vocabulary. */
    size_t size() const;
    /** The vocabulary it was built from. */
    const Vocabulary& vocabulary() const;
    /** The id of a token's text, if there is such a token. */
    std::optional<uint32_t> find(std::string_view token) const;
    /** End of generation: EOS, end of turn, end of message, and the
     * control tokens models use for it (<|eot_id|>, <|im_end|>, ...). */
    bool isEndOfGeneration(uint32_t id) const;
    /** Throws kp::llm::FormatError unless id < size(). */
    void checkId(uint32_t id) const;

  private:
    struct State;
    std::unique_ptr<State> mState;
};

/**
 * Turns generated tokens into text as they come: pieces of byte-level or
 * byte-fallback tokens that end inside a UTF-8 character are held until the
 * character is complete.
 */
class TokenTextStream
{
  public:
    /** A stream over `tokenizer` (which must outlive it); control tokens
     * are rendered only with `renderSpecial`. */
    explicit TokenTextStream(const Tokenizer& tokenizer, bool renderSpecial = false);
    /** The text that token `id` completes (possibly empty). */
    std::string push(uint32_t id);
    /** Whatever is still held (incomplete UTF-8 at the end). */
    std::string flush();

  private:
    const Tokenizer& mTokenizer;
    bool mRenderSpecial;
    std::string mPending;
};

} // namespace llm
} // namespace kp
