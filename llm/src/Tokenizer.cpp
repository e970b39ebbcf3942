// SPDX-License-Identifier: Apache-2.0
// Both tokenizer models. The SentencePiece model follows sentencepiece's own
// BPE encoder (merge the adjacent pair whose piece scores highest, leftmost
// first; unknown pieces fall back to byte tokens); the byte-level model
// follows GPT-2 (split by the pre-tokenizer's pattern, map bytes to
// printable characters, apply merges by rank).
#include "kompute/llm/Tokenizer.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <queue>
#include <unordered_set>

#include "Unicode.hpp"
#include "kompute/llm/Gguf.hpp"

namespace kp {
namespace llm {

using unicode::CodePoint;

namespace {

const char* const kSpaceMark = "\xE2\x96\x81"; // U+2581 '▁', SentencePiece's space

enum class Pattern
{
    eGpt2,   // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    eLlama3, // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
             //  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
};

struct PreTokenizer
{
    Pattern pattern;
    bool ignoreMerges; // a word that is a token is taken whole (Llama 3)
    size_t digitRun = 3; // eLlama3: digits per piece (\p{N}{1,3}; Qwen2: \p{N})
};

PreTokenizer
preTokenizerNamed(const std::string& name)
{
    if (name == "default" || name == "gpt2" || name == "gpt-2") {
        return { Pattern::eGpt2, false };
    }
    if (name == "llama-bpe" || name == "llama3" || name == "llama-v3") {
        return { Pattern::eLlama3, true };
    }
    if (name == "smaug-bpe") {
        return { Pattern::eLlama3, false };
    }
    if (name == "qwen2") { // Qwen2, Qwen2.5, Qwen3: Llama 3's pattern, one digit at a time
        return { Pattern::eLlama3, false, 1 };
    }
    throw FormatError("unsupported BPE pre-tokenizer '" + name +
                      "' (tokenizer.ggml.pre); supported: llama-bpe (Llama 3), qwen2 (Qwen2/2.5/3), smaug-bpe, "
                      "default (GPT-2)");
}

// --- Pattern matching over code points (hand-written forms of the regexes) ---

bool
isLetter(const CodePoint& c)
{
    return unicode::isLetter(c.value);
}
bool
isNumber(const CodePoint& c)
{
    return unicode::isNumber(c.value);
}
bool
isSpace(const CodePoint& c)
{
    return unicode::isWhitespace(c.value);
}
bool
isOther(const CodePoint& c) // [^\s\p{L}\p{N}]
{
    return !isSpace(c) && !isLetter(c) && !isNumber(c);
}
bool
isNewline(const CodePoint& c)
{
    return c.value == '\r' || c.value == '\n';
}

uint32_t
lowerAscii(uint32_t c)
{
    return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

/** Length of a contraction ('s 't 're 've 'm 'll 'd) at i, or 0. */
size_t
matchContraction(const std::vector<CodePoint>& cps, size_t i, bool caseInsensitive)
{
    size_t n = cps.size();
    if (cps[i].value != '\'' || i + 1 >= n) {
        return 0;
    }
    auto at = [&](size_t k) {
        uint32_t c = cps[k].value;
        return caseInsensitive ? lowerAscii(c) : c;
    };
    uint32_t a = at(i + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        return 2;
    }
    if (i + 2 < n) {
        uint32_t b = at(i + 2);
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
            return 3;
        }
    }
    return 0;
}

size_t
runOf(const std::vector<CodePoint>& cps, size_t i, bool (*predicate)(const CodePoint&))
{
    size_t j = i;
    while (j < cps.size() && predicate(cps[j])) {
        ++j;
    }
    return j - i;
}

/** \s+(?!\S) at i: the whitespace run, less its last character when a
 * non-space follows it (0 when that leaves nothing). */
size_t
matchTrailingSpaces(const std::vector<CodePoint>& cps, size_t i)
{
    size_t run = runOf(cps, i, isSpace);
    if (run == 0) {
        return 0;
    }
    if (i + run == cps.size()) {
        return run;
    }
    return run - 1;
}

size_t
matchGpt2(const std::vector<CodePoint>& cps, size_t i)
{
    size_t n = cps.size();
    if (size_t length = matchContraction(cps, i, false)) {
        return length;
    }
    size_t start = (cps[i].value == ' ' && i + 1 < n) ? i + 1 : i;
    for (auto predicate : { isLetter, isNumber, isOther }) {
        if (size_t run = runOf(cps, start, predicate)) {
            return start - i + run;
        }
    }
    if (size_t length = matchTrailingSpaces(cps, i)) {
        return length;
    }
    if (size_t run = runOf(cps, i, isSpace)) {
        return run;
    }
    return 1;
}

size_t
matchLlama3(const std::vector<CodePoint>& cps, size_t i, size_t digitRun)
{
    size_t n = cps.size();
    if (size_t length = matchContraction(cps, i, true)) {
        return length;
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (!isNewline(cps[i]) && !isLetter(cps[i]) && !isNumber(cps[i]) && i + 1 < n &&
        isLetter(cps[i + 1])) {
        return 1 + runOf(cps, i + 1, isLetter);
    }
    if (size_t run = runOf(cps, i, isLetter)) {
        return run;
    }
    // \p{N}{1,3} (Qwen2: \p{N})
    if (size_t run = runOf(cps, i, isNumber)) {
        return std::min<size_t>(run, digitRun);
    }
    //  ?[^\s\p{L}\p{N}]+[\r\n]*
    size_t start = (cps[i].value == ' ' && i + 1 < n && isOther(cps[i + 1])) ? i + 1 : i;
    if (size_t run = runOf(cps, start, isOther)) {
        size_t end = start + run;
        return end - i + runOf(cps, end, isNewline);
    }
    // \s*[\r\n]+: up to the last newline of the whitespace run
    size_t spaces = runOf(cps, i, isSpace);
    for (size_t k = spaces; k > 0; --k) {
        if (isNewline(cps[i + k - 1])) {
            return k;
        }
    }
    if (size_t length = matchTrailingSpaces(cps, i)) {
        return length;
    }
    if (spaces > 0) {
        return spaces;
    }
    return 1;
}

std::string
replaceAll(std::string text, const std::string& from, const std::string& to)
{
    size_t position = 0;
    while ((position = text.find(from, position)) != std::string::npos) {
        text.replace(position, from.size(), to);
        position += to.size();
    }
    return text;
}

/** "<0x41>" -> 0x41; -1 when the text is not of that form. */
int
byteTokenValue(const std::string& token)
{
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') {
        return -1;
    }
    unsigned value = 0;
    for (size_t k = 3; k < 5; ++k) {
        char c = token[k];
        unsigned digit;
        if (c >= '0' && c <= '9') {
            digit = c - '0';
        } else if (c >= 'A' && c <= 'F') {
            digit = c - 'A' + 10;
        } else if (c >= 'a' && c <= 'f') {
            digit = c - 'a' + 10;
        } else {
            return -1;
        }
        value = value * 16 + digit;
    }
    return static_cast<int>(value);
}

/** A piece of the text: raw text, or a special token found in it. */
struct Fragment
{
    bool isToken;
    uint32_t token;
    std::string_view text;
};

} // namespace

// --- State --------------------------------------------------------------------------

struct Tokenizer::State
{
    Vocabulary vocabulary;
    std::unordered_map<std::string, uint32_t> idOf;
    // SentencePiece
    std::vector<int64_t> byteToken; // <0xXX> ids, -1 where missing
    bool hasAllByteTokens = false;
    // Byte-level BPE
    PreTokenizer preTokenizer{ Pattern::eGpt2, false };
    std::unordered_map<std::string, uint32_t> mergeRank;
    std::vector<std::string> byteText;                // byte -> its printable UTF-8
    std::unordered_map<uint32_t, uint8_t> textByte;   // printable code point -> byte
    // Special tokens, longest first, by first byte.
    std::vector<std::vector<uint32_t>> specialsByFirstByte;
    std::unordered_set<uint32_t> endOfGeneration;

    TokenType type(uint32_t id) const
    {
        return vocabulary.types.empty() ? TokenType::eNormal : vocabulary.types[id];
    }
    float score(uint32_t id) const
    {
        return vocabulary.scores.empty() ? 0.0f : vocabulary.scores[id];
    }

    std::vector<Fragment> partition(std::string_view text, bool parseSpecial) const;
    void encodeSentencePiece(std::string_view text, bool atStart, std::vector<uint32_t>& out) const;
    void encodeByteLevel(std::string_view text, std::vector<uint32_t>& out) const;
    void encodeBpeWord(const std::string& word, std::vector<uint32_t>& out) const;
};

Tokenizer::Tokenizer(Vocabulary vocabulary)
  : mState(std::make_unique<State>())
{
    State& s = *mState;
    s.vocabulary = std::move(vocabulary);
    Vocabulary& v = s.vocabulary;
    const size_t n = v.tokens.size();
    if (n == 0) {
        throw FormatError("the vocabulary has no tokens (tokenizer.ggml.tokens is empty)");
    }
    if (!v.scores.empty() && v.scores.size() != n) {
        throw FormatError("tokenizer.ggml.scores has " + std::to_string(v.scores.size()) +
                          " entries for " + std::to_string(n) + " tokens");
    }
    if (!v.types.empty() && v.types.size() != n) {
        throw FormatError("tokenizer.ggml.token_type has " + std::to_string(v.types.size()) +
                          " entries for " + std::to_string(n) + " tokens");
    }
    for (auto [name, id] : { std::pair{ "bos", &v.bos }, { "eos", &v.eos }, { "unknown", &v.unknown },
                             { "padding", &v.padding }, { "eot", &v.endOfTurn }, { "eom", &v.endOfMessage } }) {
        if (id->has_value() && **id >= n) {
            throw FormatError(std::string("tokenizer.ggml.") + name + "_token_id is " +
                              std::to_string(**id) + ", past the " + std::to_string(n) + " tokens");
        }
    }
    s.idOf.reserve(n * 2);
    for (uint32_t id = 0; id < n; ++id) {
        // The first of duplicate texts wins, as in the reference tokenizers.
        s.idOf.emplace(v.tokens[id], id);
    }

    if (v.model == Vocabulary::Model::eSentencePiece) {
        s.byteToken.assign(256, -1);
        size_t found = 0;
        for (uint32_t id = 0; id < n; ++id) {
            if (s.type(id) == TokenType::eByte || v.types.empty()) {
                int value = byteTokenValue(v.tokens[id]);
                if (value >= 0 && s.byteToken[value] < 0) {
                    s.byteToken[value] = id;
                    ++found;
                }
            }
        }
        s.hasAllByteTokens = found == 256;
    } else {
        s.preTokenizer = preTokenizerNamed(v.preTokenizer);
        s.mergeRank.reserve(v.merges.size() * 2);
        for (uint32_t rank = 0; rank < v.merges.size(); ++rank) {
            const std::string& merge = v.merges[rank];
            size_t space = merge.find(' ', 1);
            if (space == std::string::npos || space + 1 >= merge.size()) {
                throw FormatError("tokenizer.ggml.merges entry " + std::to_string(rank) + " ('" + merge +
                                  "') is not of the form 'left right'");
            }
            s.mergeRank.emplace(merge, rank);
        }
        std::vector<uint32_t> table = unicode::byteLevelCodePoints();
        s.byteText.resize(256);
        for (uint32_t b = 0; b < 256; ++b) {
            s.byteText[b] = unicode::encodeUtf8(table[b]);
            s.textByte[table[b]] = static_cast<uint8_t>(b);
        }
    }

    // Special tokens in text: control and user-defined tokens.
    s.specialsByFirstByte.resize(256);
    std::vector<uint32_t> specials;
    for (uint32_t id = 0; id < n; ++id) {
        TokenType type = s.type(id);
        if ((type == TokenType::eControl || type == TokenType::eUserDefined) && !v.tokens[id].empty()) {
            specials.push_back(id);
        }
    }
    std::stable_sort(specials.begin(), specials.end(), [&](uint32_t a, uint32_t b) {
        return v.tokens[a].size() > v.tokens[b].size();
    });
    for (uint32_t id : specials) {
        s.specialsByFirstByte[static_cast<unsigned char>(v.tokens[id][0])].push_back(id);
    }

    for (const auto& id : { v.eos, v.endOfTurn, v.endOfMessage }) {
        if (id) {
            s.endOfGeneration.insert(*id);
        }
    }
    for (const char* name : { "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|im_end|>",
                              "<|endoftext|>", "<end_of_turn>", "</s>" }) {
        auto it = s.idOf.find(name);
        if (it != s.idOf.end() && s.type(it->second) == TokenType::eControl) {
            s.endOfGeneration.insert(it->second);
        }
    }
}

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer
Tokenizer::fromGguf(const GgufFile& file)
{
    Vocabulary v;
    std::string model = file.getString("tokenizer.ggml.model");
    if (model == "llama") {
        v.model = Vocabulary::Model::eSentencePiece;
    } else if (model == "gpt2") {
        v.model = Vocabulary::Model::eByteLevelBpe;
    } else {
        throw file.error("unsupported tokenizer model '" + model +
                         "' (tokenizer.ggml.model); supported: llama (SentencePiece), gpt2 (byte-level BPE)");
    }
    v.tokens = file.getStringArray("tokenizer.ggml.tokens");
    if (file.has("tokenizer.ggml.scores")) {
        for (double score : file.getFloatArray("tokenizer.ggml.scores")) {
            v.scores.push_back(static_cast<float>(score));
        }
    }
    if (file.has("tokenizer.ggml.token_type")) {
        for (int64_t type : file.getIntArray("tokenizer.ggml.token_type")) {
            if (type < 0 || type > static_cast<int64_t>(TokenType::eByte)) {
                throw file.error("tokenizer.ggml.token_type holds the unknown type " + std::to_string(type));
            }
            v.types.push_back(static_cast<TokenType>(type));
        }
    }
    bool spm = v.model == Vocabulary::Model::eSentencePiece;
    if (!spm) {
        v.merges = file.getStringArray("tokenizer.ggml.merges");
        v.preTokenizer = file.getString("tokenizer.ggml.pre", "default");
    }
    auto optionalId = [&](const char* key) -> std::optional<uint32_t> {
        std::string full = std::string("tokenizer.ggml.") + key;
        if (!file.has(full)) {
            return std::nullopt;
        }
        int64_t id = file.getInt(full);
        // Some converters write -1 for "none".
        if (id < 0) {
            return std::nullopt;
        }
        return static_cast<uint32_t>(id);
    };
    v.bos = optionalId("bos_token_id");
    v.eos = optionalId("eos_token_id");
    v.unknown = optionalId("unknown_token_id");
    v.padding = optionalId("padding_token_id");
    v.endOfTurn = optionalId("eot_token_id");
    v.endOfMessage = optionalId("eom_token_id");
    if (spm) {
        // SentencePiece's defaults (llama.cpp uses them too).
        if (!v.unknown && v.tokens.size() > 0) {
            v.unknown = 0;
        }
        if (!v.bos && v.tokens.size() > 1) {
            v.bos = 1;
        }
        if (!v.eos && v.tokens.size() > 2) {
            v.eos = 2;
        }
    }
    v.addBos = file.getBool("tokenizer.ggml.add_bos_token", spm);
    v.addEos = file.getBool("tokenizer.ggml.add_eos_token", false);
    v.addSpacePrefix = file.getBool("tokenizer.ggml.add_space_prefix", spm);
    try {
        return Tokenizer(std::move(v));
    } catch (const FormatError& error) {
        throw file.error(error.what());
    }
}

size_t
Tokenizer::size() const
{
    return mState->vocabulary.tokens.size();
}

const Vocabulary&
Tokenizer::vocabulary() const
{
    return mState->vocabulary;
}

std::optional<uint32_t>
Tokenizer::find(std::string_view token) const
{
    auto it = mState->idOf.find(std::string(token));
    if (it == mState->idOf.end()) {
        return std::nullopt;
    }
    return it->second;
}

bool
Tokenizer::isEndOfGeneration(uint32_t id) const
{
    return mState->endOfGeneration.count(id) != 0;
}

void
Tokenizer::checkId(uint32_t id) const
{
    if (id >= size()) {
        throw FormatError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                          std::to_string(size()) + " tokens");
    }
}

// --- Encoding -------------------------------------------------------------------------

std::vector<Fragment>
Tokenizer::State::partition(std::string_view text, bool parseSpecial) const
{
    std::vector<Fragment> fragments;
    size_t textStart = 0;
    size_t i = 0;
    while (i < text.size()) {
        uint32_t match = 0;
        size_t matchLength = 0;
        for (uint32_t id : specialsByFirstByte[static_cast<unsigned char>(text[i])]) {
            if (!parseSpecial && type(id) == TokenType::eControl) {
                continue;
            }
            const std::string& token = vocabulary.tokens[id];
            if (text.compare(i, token.size(), token) == 0) {
                match = id;
                matchLength = token.size();
                break; // longest first
            }
        }
        if (matchLength == 0) {
            ++i;
            continue;
        }
        if (i > textStart) {
            fragments.push_back({ false, 0, text.substr(textStart, i - textStart) });
        }
        fragments.push_back({ true, match, {} });
        i += matchLength;
        textStart = i;
    }
    if (textStart < text.size()) {
        fragments.push_back({ false, 0, text.substr(textStart) });
    }
    return fragments;
}

void
Tokenizer::State::encodeSentencePiece(std::string_view text, bool atStart, std::vector<uint32_t>& out) const
{
    std::string normalized = (atStart && vocabulary.addSpacePrefix) ? kSpaceMark : "";
    if (normalized.empty() && text.empty()) {
        return;
    }
    normalized += replaceAll(std::string(text), " ", kSpaceMark);

    struct Symbol
    {
        int prev;
        int next;
        uint32_t offset;
        uint32_t length; // 0 once merged into its left neighbour
    };
    std::vector<CodePoint> cps = unicode::decodeUtf8(normalized);
    std::vector<Symbol> symbols;
    symbols.reserve(cps.size());
    for (size_t k = 0; k < cps.size(); ++k) {
        symbols.push_back({ static_cast<int>(k) - 1, k + 1 < cps.size() ? static_cast<int>(k + 1) : -1,
                            cps[k].offset, cps[k].length });
    }

    struct Pair
    {
        int left;
        int right;
        float score;
        uint32_t length;
    };
    auto worse = [](const Pair& a, const Pair& b) {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    };
    std::priority_queue<Pair, std::vector<Pair>, decltype(worse)> agenda(worse);
    // Pieces of unused tokens are split back into what they were merged from.
    std::unordered_map<std::string, std::pair<std::string, std::string>> unmerge;

    auto text_of = [&](int index) {
        return std::string_view(normalized).substr(symbols[index].offset, symbols[index].length);
    };
    auto tryPair = [&](int left, int right) {
        if (left < 0 || right < 0) {
            return;
        }
        std::string piece = std::string(text_of(left)) + std::string(text_of(right));
        auto it = idOf.find(piece);
        if (it == idOf.end()) {
            return;
        }
        TokenType t = type(it->second);
        if (t != TokenType::eNormal && t != TokenType::eUserDefined && t != TokenType::eUnused &&
            t != TokenType::eUndefined) {
            return;
        }
        agenda.push({ left, right, score(it->second), static_cast<uint32_t>(piece.size()) });
        if (t == TokenType::eUnused) {
            unmerge[piece] = { std::string(text_of(left)), std::string(text_of(right)) };
        }
    };
    for (size_t k = 1; k < symbols.size(); ++k) {
        tryPair(static_cast<int>(k - 1), static_cast<int>(k));
    }
    while (!agenda.empty()) {
        Pair pair = agenda.top();
        agenda.pop();
        Symbol& left = symbols[pair.left];
        Symbol& right = symbols[pair.right];
        if (left.length == 0 || right.length == 0 || left.length + right.length != pair.length ||
            left.next != pair.right) {
            continue; // stale: one side was merged since
        }
        left.length += right.length;
        right.length = 0;
        left.next = right.next;
        if (right.next >= 0) {
            symbols[right.next].prev = pair.left;
        }
        tryPair(left.prev, pair.left);
        tryPair(pair.left, left.next);
    }

    // Emit the pieces; unknown ones as bytes, or else as the unknown token,
    // one for a run of unknown pieces (as sentencepiece does).
    bool previousUnknown = false;
    std::function<void(const std::string&)> emit = [&](const std::string& piece) {
        auto it = idOf.find(piece);
        if (it != idOf.end() && type(it->second) != TokenType::eUnused) {
            out.push_back(it->second);
            previousUnknown = false;
            return;
        }
        auto split = unmerge.find(piece);
        if (split != unmerge.end()) {
            emit(split->second.first);
            emit(split->second.second);
            return;
        }
        if (hasAllByteTokens) {
            for (unsigned char byte : piece) {
                out.push_back(static_cast<uint32_t>(byteToken[byte]));
            }
            return;
        }
        if (!vocabulary.unknown) {
            throw FormatError("cannot encode '" + piece +
                              "': it is no token, and the vocabulary has neither byte tokens nor an unknown token");
        }
        if (!previousUnknown) {
            out.push_back(*vocabulary.unknown);
        }
        previousUnknown = true;
    };
    for (int index = symbols.empty() ? -1 : 0; index >= 0; index = symbols[index].next) {
        emit(std::string(text_of(index)));
    }
}

void
Tokenizer::State::encodeBpeWord(const std::string& word, std::vector<uint32_t>& out) const
{
    std::string mapped;
    for (unsigned char byte : word) {
        mapped += byteText[byte];
    }
    if (preTokenizer.ignoreMerges) {
        auto it = idOf.find(mapped);
        if (it != idOf.end()) {
            out.push_back(it->second);
            return;
        }
    }
    // One symbol per printable character (1 byte of the word each).
    std::vector<std::string> symbols;
    for (unsigned char byte : word) {
        symbols.push_back(byteText[byte]);
    }
    while (symbols.size() > 1) {
        uint32_t bestRank = UINT32_MAX;
        size_t best = 0;
        for (size_t k = 0; k + 1 < symbols.size(); ++k) {
            auto it = mergeRank.find(symbols[k] + " " + symbols[k + 1]);
            if (it != mergeRank.end() && it->second < bestRank) {
                bestRank = it->second;
                best = k;
            }
        }
        if (bestRank == UINT32_MAX) {
            break;
        }
        symbols[best] += symbols[best + 1];
        symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    }
    for (const std::string& symbol : symbols) {
        auto it = idOf.find(symbol);
        if (it != idOf.end()) {
            out.push_back(it->second);
            continue;
        }
        // Not a token after merging: its characters one by one.
        for (const CodePoint& cp : unicode::decodeUtf8(symbol)) {
            auto single = idOf.find(symbol.substr(cp.offset, cp.length));
            if (single != idOf.end()) {
                out.push_back(single->second);
            } else if (vocabulary.unknown) {
                out.push_back(*vocabulary.unknown);
            } else {
                throw FormatError("cannot encode byte 0x" + [&] {
                    char hex[3];
                    std::snprintf(hex, sizeof(hex), "%02X", textByte.count(cp.value) ? textByte.at(cp.value) : 0);
                    return std::string(hex);
                }() + ": the vocabulary has no token for it and no unknown token");
            }
        }
    }
}

void
Tokenizer::State::encodeByteLevel(std::string_view text, std::vector<uint32_t>& out) const
{
    std::vector<CodePoint> cps = unicode::decodeUtf8(text);
    size_t i = 0;
    while (i < cps.size()) {
        size_t length = preTokenizer.pattern == Pattern::eLlama3 ? matchLlama3(cps, i, preTokenizer.digitRun)
                                                                  : matchGpt2(cps, i);
        size_t begin = cps[i].offset;
        size_t end = cps[i + length - 1].offset + cps[i + length - 1].length;
        encodeBpeWord(std::string(text.substr(begin, end - begin)), out);
        i += length;
    }
}

std::vector<uint32_t>
Tokenizer::encode(std::string_view text, bool addSpecial, bool parseSpecial) const
{
    const State& s = *mState;
    std::vector<uint32_t> ids;
    if (addSpecial && s.vocabulary.addBos && s.vocabulary.bos) {
        ids.push_back(*s.vocabulary.bos);
    }
    // SentencePiece puts its space before the whole text, so a text that
    // starts with a user-defined token starts with '▁'; a leading control
    // token (parsed only on request, as in chat templates) leaves the space
    // to the text after it.
    bool atStart = true;
    for (const Fragment& fragment : s.partition(text, parseSpecial)) {
        if (fragment.isToken) {
            if (s.type(fragment.token) == TokenType::eControl) {
                ids.push_back(fragment.token);
                continue;
            }
            if (atStart && s.vocabulary.model == Vocabulary::Model::eSentencePiece) {
                s.encodeSentencePiece("", true, ids);
            }
            ids.push_back(fragment.token);
        } else if (s.vocabulary.model == Vocabulary::Model::eSentencePiece) {
            s.encodeSentencePiece(fragment.text, atStart, ids);
        } else {
            s.encodeByteLevel(fragment.text, ids);
        }
        atStart = false;
    }
    if (addSpecial && s.vocabulary.addEos && s.vocabulary.eos) {
        ids.push_back(*s.vocabulary.eos);
    }
    return ids;
}

// --- Decoding -------------------------------------------------------------------------

std::string
Tokenizer::piece(uint32_t id, bool renderSpecial) const
{
    checkId(id);
    const State& s = *mState;
    const std::string& token = s.vocabulary.tokens[id];
    TokenType type = s.type(id);
    if (type == TokenType::eControl) {
        return renderSpecial ? token : "";
    }
    if (type == TokenType::eUserDefined) {
        return token;
    }
    if (s.vocabulary.model == Vocabulary::Model::eSentencePiece) {
        if (type == TokenType::eByte || (s.vocabulary.types.empty() && byteTokenValue(token) >= 0)) {
            int value = byteTokenValue(token);
            if (value >= 0) {
                return std::string(1, static_cast<char>(value));
            }
        }
        return replaceAll(token, kSpaceMark, " ");
    }
    std::string bytes;
    for (const CodePoint& cp : unicode::decodeUtf8(token)) {
        auto it = s.textByte.find(cp.value);
        if (it != s.textByte.end()) {
            bytes.push_back(static_cast<char>(it->second));
        } else {
            bytes += token.substr(cp.offset, cp.length);
        }
    }
    return bytes;
}

std::string
Tokenizer::decode(const std::vector<uint32_t>& ids, bool renderSpecial) const
{
    std::string text;
    bool first = true;
    for (uint32_t id : ids) {
        std::string part = piece(id, renderSpecial);
        if (first && !part.empty()) {
            first = false;
            if (mState->vocabulary.model == Vocabulary::Model::eSentencePiece &&
                mState->vocabulary.addSpacePrefix && part[0] == ' ' &&
                mState->type(id) != TokenType::eUserDefined) {
                part.erase(0, 1);
            }
        }
        text += part;
    }
    // A '▁' spelled by byte tokens is a space too.
    if (mState->vocabulary.model == Vocabulary::Model::eSentencePiece) {
        text = replaceAll(std::move(text), kSpaceMark, " ");
    }
    return text;
}

TokenTextStream::TokenTextStream(const Tokenizer& tokenizer, bool renderSpecial)
  : mTokenizer(tokenizer)
  , mRenderSpecial(renderSpecial)
{
}

std::string
TokenTextStream::push(uint32_t id)
{
    mPending += mTokenizer.piece(id, mRenderSpecial);
    // Hold back a UTF-8 sequence that is not complete yet.
    size_t cut = mPending.size();
    for (size_t back = 1; back <= 3 && back <= mPending.size(); ++back) {
        unsigned char c = static_cast<unsigned char>(mPending[mPending.size() - back]);
        if ((c & 0xC0) == 0x80) {
            continue;
        }
        if (c >= 0xC0 && unicode::utf8SequenceLength(c) > back) {
            cut = mPending.size() - back;
        }
        break;
    }
    std::string ready = mPending.substr(0, cut);
    mPending.erase(0, cut);
    if (mTokenizer.vocabulary().model == Vocabulary::Model::eSentencePiece) {
        ready = replaceAll(std::move(ready), kSpaceMark, " ");
    }
    return ready;
}

std::string
TokenTextStream::flush()
{
    std::string rest;
    rest.swap(mPending);
    return rest;
}

} // namespace llm
} // namespace kp
