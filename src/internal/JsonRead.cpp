// SPDX-License-Identifier: Apache-2.0
#include "internal/JsonRead.hpp"

#include <cstdint>
#include <limits>
#include <locale>
#include <sstream>

#include "kompute/Errors.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

namespace {

using logger::format;

constexpr int kMaxDepth = 64;

class Reader
{
  public:
    Reader(const std::string& text, const std::string& what)
      : mText(text)
      , mWhat(what)
    {
    }

    JsonValue document()
    {
        skipSpace();
        JsonValue value = readValue(0);
        skipSpace();
        if (mAt < mText.size()) {
            fail("text after the value");
        }
        return value;
    }

  private:
    [[noreturn]] void fail(const std::string& message) const
    {
        size_t line = 1, column = 1;
        for (size_t i = 0; i < mAt && i < mText.size(); ++i) {
            if (mText[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        throw Error(format("{}: line {}, column {}: {}", mWhat, line, column, message));
    }

    bool atEnd() const { return mAt >= mText.size(); }
    char peek() const { return atEnd() ? '\0' : mText[mAt]; }

    void skipSpace()
    {
        while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
            ++mAt;
        }
    }

    void expect(char c, const char* where)
    {
        if (peek() != c) {
            fail(format("expected '{}' {}", c, where));
        }
        ++mAt;
    }

    void word(const char* text)
    {
        for (const char* c = text; *c; ++c) {
            if (peek() != *c) {
                fail(format("expected '{}'", text));
            }
            ++mAt;
        }
    }

    JsonValue readValue(int depth)
    {
        if (depth >= kMaxDepth) {
            fail(format("nested deeper than {} levels", kMaxDepth));
        }
        switch (peek()) {
            case '{': return readObject(depth);
            case '[': return readArray(depth);
            case '"': return JsonValue(readString());
            case 't': word("true"); return JsonValue(true);
            case 'f': word("false"); return JsonValue(false);
            case 'n': word("null"); return JsonValue();
            default: break;
        }
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
            return readNumber();
        }
        fail(atEnd() ? "the text ends where a value was expected" : "expected a value");
    }

    JsonValue readObject(int depth)
    {
        ++mAt; // '{'
        JsonValue object = JsonValue::object();
        skipSpace();
        if (peek() == '}') {
            ++mAt;
            return object;
        }
        for (;;) {
            skipSpace();
            if (peek() != '"') {
                fail("expected a member name in double quotes");
            }
            std::string key = readString();
            skipSpace();
            expect(':', "after a member name");
            skipSpace();
            object.set(key, readValue(depth + 1));
            skipSpace();
            if (peek() == ',') {
                ++mAt;
                continue;
            }
            expect('}', "or ',' after an object's member");
            return object;
        }
    }

    JsonValue readArray(int depth)
    {
        ++mAt; // '['
        JsonValue array = JsonValue::array();
        skipSpace();
        if (peek() == ']') {
            ++mAt;
            return array;
        }
        for (;;) {
            skipSpace();
            array.push(readValue(depth + 1));
            skipSpace();
            if (peek() == ',') {
                ++mAt;
                continue;
            }
            expect(']', "or ',' after an array's element");
            return array;
        }
    }

    uint32_t readHex4()
    {
        uint32_t value = 0;
        for (int i = 0; i < 4; ++i) {
            char c = peek();
            uint32_t digit = c >= '0' && c <= '9'   ? uint32_t(c - '0')
                             : c >= 'a' && c <= 'f' ? uint32_t(c - 'a' + 10)
                             : c >= 'A' && c <= 'F' ? uint32_t(c - 'A' + 10)
                                                    : 16u;
            if (digit == 16) {
                fail("expected 4 hexadecimal digits after \\u");
            }
            value = value * 16 + digit;
            ++mAt;
        }
        return value;
    }

    static void appendUtf8(std::string& out, uint32_t code)
    {
        if (code < 0x80) {
            out += static_cast<char>(code);
        } else if (code < 0x800) {
            out += static_cast<char>(0xC0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3F));
        } else if (code < 0x10000) {
            out += static_cast<char>(0xE0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (code >> 18));
            out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
        }
    }

    std::string readString()
    {
        ++mAt; // '"'
        std::string out;
        for (;;) {
            if (atEnd()) {
                fail("the text ends inside a string");
            }
            char c = mText[mAt++];
            if (c == '"') {
                return out;
            }
            if (static_cast<unsigned char>(c) < 0x20) {
                --mAt;
                fail("a control character inside a string (write it as an escape)");
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            char e = peek();
            ++mAt;
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    uint32_t code = readHex4();
                    if (code >= 0xD800 && code < 0xDC00) { // a surrogate pair
                        if (peek() != '\\' || mAt + 1 >= mText.size() || mText[mAt + 1] != 'u') {
                            fail("a high surrogate \\u escape without its low one");
                        }
                        mAt += 2;
                        uint32_t low = readHex4();
                        if (low < 0xDC00 || low >= 0xE000) {
                            fail("a high surrogate \\u escape followed by no low one");
                        }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    } else if (code >= 0xDC00 && code < 0xE000) {
                        fail("a low surrogate \\u escape without its high one");
                    }
                    appendUtf8(out, code);
                    break;
                }
                default: --mAt; fail("an unknown escape in a string");
            }
        }
    }

    JsonValue readNumber()
    {
        size_t start = mAt;
        bool negative = peek() == '-';
        if (negative) {
            ++mAt;
        }
        auto digits = [&] {
            size_t first = mAt;
            while (peek() >= '0' && peek() <= '9') {
                ++mAt;
            }
            return mAt - first;
        };
        size_t intStart = mAt;
        if (digits() == 0) {
            fail("expected a digit");
        }
        if (mText[intStart] == '0' && mAt - intStart > 1) {
            mAt = intStart;
            fail("a number with a leading zero");
        }
        bool integer = true;
        if (peek() == '.') {
            ++mAt;
            integer = false;
            if (digits() == 0) {
                fail("expected a digit after the decimal point");
            }
        }
        if (peek() == 'e' || peek() == 'E') {
            ++mAt;
            integer = false;
            if (peek() == '+' || peek() == '-') {
                ++mAt;
            }
            if (digits() == 0) {
                fail("expected a digit in the exponent");
            }
        }
        std::string text = mText.substr(start, mAt - start);
        if (integer) {
            // Exact where it fits 64 bits; a double beyond.
            uint64_t magnitude = 0;
            bool fits = true;
            for (size_t i = negative ? 1 : 0; i < text.size(); ++i) {
                uint64_t digit = uint64_t(text[i] - '0');
                if (magnitude > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
                    fits = false;
                    break;
                }
                magnitude = magnitude * 10 + digit;
            }
            if (fits && !negative) {
                return JsonValue(magnitude);
            }
            if (fits && magnitude <= uint64_t(std::numeric_limits<int64_t>::max()) + 1) {
                return JsonValue(magnitude == 0 ? int64_t(0) : static_cast<int64_t>(0 - magnitude));
            }
        }
        std::istringstream stream(text);
        stream.imbue(std::locale::classic());
        double value = 0;
        stream >> value;
        return JsonValue(value);
    }

    const std::string& mText;
    const std::string& mWhat;
    size_t mAt = 0;
};

} // namespace

JsonValue
parseJson(const std::string& text, const std::string& what)
{
    return Reader(text, what).document();
}

} // namespace internal
} // namespace kp
