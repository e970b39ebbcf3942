// SPDX-License-Identifier: Apache-2.0
// Tokenizer edge cases on hand-made vocabularies (the comparisons with the
// reference implementations, sentencepiece and tokenizers, are in
// python/tests/test_llm_tokenizer.py).
#include <gtest/gtest.h>

#include <random>

#include "kompute/llm/Gguf.hpp"
#include "kompute/llm/Tokenizer.hpp"

using kp::llm::TokenTextStream;
using kp::llm::Tokenizer;
using kp::llm::TokenType;
using kp::llm::Vocabulary;

namespace {

const std::string kSpace = "\xE2\x96\x81";

/** <unk> <s> </s>, 256 byte tokens, then `pieces` scored by position. */
Vocabulary
sentencePiece(const std::vector<std::string>& pieces, bool byteTokens = true)
{
    Vocabulary v;
    v.model = Vocabulary::Model::eSentencePiece;
    v.tokens = { "<unk>", "<s>", "</s>" };
    v.types = { TokenType::eUnknown, TokenType::eControl, TokenType::eControl };
    v.scores = { 0, 0, 0 };
    if (byteTokens) {
        for (int b = 0; b < 256; ++b) {
            char name[8];
            std::snprintf(name, sizeof(name), "<0x%02X>", b);
            v.tokens.push_back(name);
            v.types.push_back(TokenType::eByte);
            v.scores.push_back(0);
        }
    }
    float score = -1;
    for (const std::string& piece : pieces) {
        v.tokens.push_back(piece);
        v.types.push_back(TokenType::eNormal);
        v.scores.push_back(score--);
    }
    v.unknown = 0;
    v.bos = 1;
    v.eos = 2;
    return v;
}

std::vector<std::string>
texts(const Tokenizer& t, const std::vector<uint32_t>& ids)
{
    std::vector<std::string> out;
    for (uint32_t id : ids) {
        out.push_back(t.vocabulary().tokens[id]);
    }
    return out;
}

/** Every byte as its GPT-2 character, plus `merges` and their results. */
Vocabulary
byteLevel(const std::vector<std::pair<std::string, std::string>>& merges, const std::string& pre)
{
    Vocabulary v;
    v.model = Vocabulary::Model::eByteLevelBpe;
    v.preTokenizer = pre;
    v.addBos = false;
    auto character = [](uint32_t cp) {
        std::string out;
        if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
        } else {
            out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
        return out;
    };
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
        bool direct = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        v.tokens.push_back(character(direct ? b : next++));
    }
    for (const auto& [left, right] : merges) {
        v.merges.push_back(left + " " + right);
        v.tokens.push_back(left + right);
    }
    v.tokens.push_back("<|end|>");
    v.types.assign(v.tokens.size(), TokenType::eNormal);
    v.types.back() = TokenType::eControl;
    v.eos = static_cast<uint32_t>(v.tokens.size() - 1);
    return v;
}

} // namespace

TEST(SentencePiece, MergesByScoreAndMarksSpaces)
{
    Tokenizer t(sentencePiece({ kSpace + "h", "el", kSpace + "hel", "lo", kSpace + "hello", "he" }));
    std::vector<uint32_t> ids = t.encode("hello");
    EXPECT_EQ(texts(t, ids), (std::vector<std::string>{ "<s>", kSpace + "hello" }));
    EXPECT_EQ(t.decode(ids), "hello");
    EXPECT_EQ(texts(t, t.encode("hello hello", false)),
              (std::vector<std::string>{ kSpace + "hello", kSpace + "hello" }));
    EXPECT_TRUE(t.encode("", false).empty());
    EXPECT_EQ(t.encode("", true), (std::vector<uint32_t>{ 1 }));
}

TEST(SentencePiece, ByteFallbackAndUnknown)
{
    Tokenizer bytes(sentencePiece({ kSpace + "a" }));
    // 'é' is no piece: its two UTF-8 bytes become <0xC3> <0xA9>.
    EXPECT_EQ(texts(bytes, bytes.encode("a\xC3\xA9", false)),
              (std::vector<std::string>{ kSpace + "a", "<0xC3>", "<0xA9>" }));
    EXPECT_EQ(bytes.decode(bytes.encode("a\xC3\xA9 \xFF")), "a\xC3\xA9 \xFF");
    Tokenizer noBytes(sentencePiece({ kSpace + "a", "b" }, false));
    // A run of unknown characters is one unknown token.
    EXPECT_EQ(texts(noBytes, noBytes.encode("a\xC3\xA9\xC3\xA9" "b", false)),
              (std::vector<std::string>{ kSpace + "a", "<unk>", "b" }));
}

TEST(SentencePiece, SpecialTokensInText)
{
    Vocabulary v = sentencePiece({ kSpace + "a", "<sep>" });
    v.types.back() = TokenType::eUserDefined;
    Tokenizer t(v);
    EXPECT_EQ(texts(t, t.encode("a</s>a", false, true)),
              (std::vector<std::string>{ kSpace + "a", "</s>", "<0x61>" }));
    // Without parseSpecial, control tokens are text; user-defined ones are
    // always recognised.
    std::vector<std::string> literal = texts(t, t.encode("</s><sep>", false, false));
    EXPECT_EQ(literal.back(), "<sep>");
    EXPECT_EQ(literal.front(), "<0xE2>");
    EXPECT_EQ(t.decode(t.encode("a<sep>a")), "a<sep>a");
    EXPECT_EQ(t.decode({ 1, 3 + 256 }, true), "<s> a");
    EXPECT_TRUE(t.isEndOfGeneration(2));
    EXPECT_FALSE(t.isEndOfGeneration(1));
}

TEST(SentencePiece, AddsEosWhenAsked)
{
    Vocabulary v = sentencePiece({ kSpace + "a" });
    v.addEos = true;
    Tokenizer t(v);
    EXPECT_EQ(t.encode("a"), (std::vector<uint32_t>{ 1, 259, 2 }));
}

TEST(ByteLevelBpe, MergesByRankAndRoundTripsAnyBytes)
{
    Tokenizer t(byteLevel({ { "h", "e" }, { "l", "l" }, { "he", "ll" }, { "hell", "o" }, { "\xC4\xA0", "w" } }, "default"));
    std::vector<uint32_t> ids = t.encode("hello world");
    EXPECT_EQ(texts(t, ids), (std::vector<std::string>{ "hello", "\xC4\xA0w", "o", "r", "l", "d" }));
    EXPECT_EQ(t.decode(ids), "hello world");
    std::mt19937 random(3);
    for (int trial = 0; trial < 200; ++trial) {
        std::string text;
        for (int k = random() % 40; k > 0; --k) {
            text.push_back(static_cast<char>(random()));
        }
        EXPECT_EQ(t.decode(t.encode(text)), text);
    }
}

TEST(ByteLevelBpe, Llama3PatternSplitsDigitsInThreesAndContractions)
{
    // With ignore_merges (llama-bpe), a word that is a token is taken whole,
    // which shows where the pattern split the text.
    Tokenizer t(byteLevel({ { "1", "2" }, { "12", "3" }, { "'", "S" }, { "\xC4\xA0", "a" } }, "llama-bpe"));
    EXPECT_EQ(texts(t, t.encode("1234")), (std::vector<std::string>{ "123", "4" }));
    EXPECT_EQ(texts(t, t.encode("'S a")), (std::vector<std::string>{ "'S", "\xC4\xA0" "a" }));
    EXPECT_EQ(t.decode(t.encode("x<|end|>y")), "xy");
    EXPECT_EQ(texts(t, t.encode("x<|end|>")).back(), "<|end|>");
    EXPECT_TRUE(t.isEndOfGeneration(*t.find("<|end|>")));
}

TEST(ByteLevelBpe, Qwen2PatternSplitsDigitsOneByOne)
{
    // qwen2 applies merges inside a piece (no ignore_merges): "12" is a
    // token, yet every digit is a piece of its own.
    Tokenizer t(byteLevel({ { "1", "2" }, { "12", "3" }, { "'", "S" }, { "\xC4\xA0", "a" } }, "qwen2"));
    EXPECT_EQ(texts(t, t.encode("1234")), (std::vector<std::string>{ "1", "2", "3", "4" }));
    EXPECT_EQ(texts(t, t.encode("'S a")), (std::vector<std::string>{ "'S", "\xC4\xA0" "a" }));
}

TEST(ByteLevelBpe, UnknownPreTokenizerIsAnError)
{
    try {
        Tokenizer t(byteLevel({}, "falcon"));
        FAIL();
    } catch (const kp::llm::FormatError& error) {
        EXPECT_NE(std::string(error.what()).find("'falcon'"), std::string::npos);
    }
}

TEST(TokenTextStream, HoldsIncompleteUtf8)
{
    Tokenizer t(sentencePiece({ kSpace + "a" }));
    TokenTextStream stream(t);
    // "é" = C3 A9 as two byte tokens: nothing, then the whole character.
    EXPECT_EQ(stream.push(3 + 0xC3), "");
    EXPECT_EQ(stream.push(3 + 0xA9), "\xC3\xA9");
    EXPECT_EQ(stream.push(3 + 256), " a");
    EXPECT_EQ(stream.push(3 + 0xE2), "");
    EXPECT_EQ(stream.flush(), "\xE2");
}

TEST(Tokenizer, BadVocabularies)
{
    Vocabulary empty;
    EXPECT_THROW(Tokenizer{ empty }, kp::llm::FormatError);
    Vocabulary scores = sentencePiece({ "a" });
    scores.scores.pop_back();
    EXPECT_THROW(Tokenizer{ scores }, kp::llm::FormatError);
    Vocabulary bos = sentencePiece({ "a" });
    bos.bos = 100000;
    EXPECT_THROW(Tokenizer{ bos }, kp::llm::FormatError);
    Tokenizer t(sentencePiece({ "a" }));
    EXPECT_THROW(t.piece(100000), kp::llm::FormatError);
}
