// SPDX-License-Identifier: Apache-2.0
// The little Unicode the tokenizers need: UTF-8 decoding that keeps every
// byte of the input (invalid bytes become code points of their own), and
// the general categories L and N plus White_Space of the BPE patterns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kp {
namespace llm {
namespace unicode {

struct CodePointRange
{
    uint32_t first;
    uint32_t last;
};

extern const CodePointRange kLetterRanges[];
extern const size_t kLetterRangesCount;
extern const CodePointRange kNumberRanges[];
extern const size_t kNumberRangesCount;

/** A code point and where its bytes are in the text. An invalid UTF-8 byte
 * is a "code point" of one byte whose value is 0x110000 + the byte. */
struct CodePoint
{
    uint32_t value;
    uint32_t offset;
    uint32_t length;
};

constexpr uint32_t kInvalidByteBase = 0x110000;

/** Splits text into code points (every byte belongs to exactly one). */
std::vector<CodePoint> decodeUtf8(std::string_view text);
/** The length of the UTF-8 sequence starting with `lead` (1 for an
 * invalid lead byte). */
size_t utf8SequenceLength(unsigned char lead);
std::string encodeUtf8(uint32_t codePoint);

bool isLetter(uint32_t codePoint);
bool isNumber(uint32_t codePoint);
bool isWhitespace(uint32_t codePoint);

/** GPT-2's byte-level table: the printable code point standing for each
 * of the 256 byte values. */
std::vector<uint32_t> byteLevelCodePoints();

} // namespace unicode
} // namespace llm
} // namespace kp
