// SPDX-License-Identifier: Apache-2.0
#include "Unicode.hpp"

#include <algorithm>

namespace kp {
namespace llm {
namespace unicode {

namespace {

bool
inRanges(const CodePointRange* ranges, size_t count, uint32_t codePoint)
{
    const CodePointRange* end = ranges + count;
    const CodePointRange* it = std::upper_bound(
      ranges, end, codePoint, [](uint32_t value, const CodePointRange& range) { return value < range.first; });
    return it != ranges && codePoint <= (it - 1)->last;
}

bool
isContinuation(unsigned char byte)
{
    return (byte & 0xC0) == 0x80;
}

} // namespace

size_t
utf8SequenceLength(unsigned char lead)
{
    if (lead < 0x80) {
        return 1;
    }
    if ((lead & 0xE0) == 0xC0) {
        return 2;
    }
    if ((lead & 0xF0) == 0xE0) {
        return 3;
    }
    if ((lead & 0xF8) == 0xF0) {
        return 4;
    }
    return 1;
}

std::vector<CodePoint>
decodeUtf8(std::string_view text)
{
    std::vector<CodePoint> result;
    result.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        unsigned char lead = static_cast<unsigned char>(text[i]);
        size_t length = utf8SequenceLength(lead);
        uint32_t value = kInvalidByteBase + lead;
        bool valid = length > 1 && i + length <= text.size();
        if (lead < 0x80) {
            value = lead;
            valid = true;
        } else if (valid) {
            uint32_t cp = lead & (0x7F >> length);
            for (size_t k = 1; k < length && valid; ++k) {
                unsigned char next = static_cast<unsigned char>(text[i + k]);
                valid = isContinuation(next);
                cp = (cp << 6) | (next & 0x3F);
            }
            // Reject overlong forms, surrogates and values past U+10FFFF.
            static const uint32_t kMinimum[] = { 0, 0, 0x80, 0x800, 0x10000 };
            if (valid && (cp < kMinimum[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) {
                valid = false;
            }
            if (valid) {
                value = cp;
            }
        }
        if (!valid) {
            length = 1;
            value = kInvalidByteBase + lead;
        }
        result.push_back({ value, static_cast<uint32_t>(i), static_cast<uint32_t>(length) });
        i += length;
    }
    return result;
}

std::string
encodeUtf8(uint32_t cp)
{
    std::string out;
    if (cp >= kInvalidByteBase) {
        out.push_back(static_cast<char>(cp - kInvalidByteBase));
    } else if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    return out;
}

bool
isLetter(uint32_t codePoint)
{
    return inRanges(kLetterRanges, kLetterRangesCount, codePoint);
}

bool
isNumber(uint32_t codePoint)
{
    return inRanges(kNumberRanges, kNumberRangesCount, codePoint);
}

bool
isWhitespace(uint32_t cp)
{
    // Unicode's White_Space property (what \s means in the BPE patterns).
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

/** GPT-2's table of printable characters for the 256 byte values. */
std::vector<uint32_t>
byteLevelCodePoints()
{
    std::vector<uint32_t> table(256, 0);
    std::vector<bool> direct(256, false);
    for (uint32_t b = '!'; b <= '~'; ++b) {
        direct[b] = true;
    }
    for (uint32_t b = 0xA1; b <= 0xAC; ++b) {
        direct[b] = true;
    }
    for (uint32_t b = 0xAE; b <= 0xFF; ++b) {
        direct[b] = true;
    }
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
        table[b] = direct[b] ? b : next++;
    }
    return table;
}

} // namespace unicode
} // namespace llm
} // namespace kp
