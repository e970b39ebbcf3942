// SPDX-License-Identifier: Apache-2.0
// kp::float16_t: an IEEE 754 binary16 value stored in 16 bits, the element
// type of eHalf tensors (C++17 has no standard half type); kp::bfloat16_t:
// the upper 16 bits of an IEEE 754 binary32 value (bfloat16), the element
// type of eBFloat16 tensors.
#pragma once

#include <cstdint>
#include <cstring>
#include <ostream>

namespace kp {

/** An IEEE 754 binary16 value (1 sign bit, 5 exponent bits, 10 mantissa
 * bits) stored in 16 bits: the element type of eHalf tensors, converted to
 * and from float on the host. A trivially copyable value type with the
 * layout shaders' float16_t has, so a std::vector<float16_t> is the
 * tensor's bytes. Comparison converts to float (so +0 == -0 and NaN != NaN). */
struct float16_t
{
    /** The raw binary16 bits. */
    uint16_t bits = 0;

    /** Zero. */
    constexpr float16_t() = default;
    /** Rounds to nearest even; overflow gives infinity, NaN stays NaN. */
    float16_t(float value) : bits(fromFloat(value)) {}
    /** The exact float value (every binary16 value is a float). */
    operator float() const { return toFloat(bits); }

    /** The value whose bits are `raw`. */
    static constexpr float16_t fromBits(uint16_t raw)
    {
        float16_t h;
        h.bits = raw;
        return h;
    }

    /** The binary16 bits nearest to `value` (round to nearest even,
     * subnormals included; overflow gives infinity, NaN a quiet NaN). */
    static uint16_t fromFloat(float value)
    {
        uint32_t f;
        std::memcpy(&f, &value, sizeof(f));
        uint32_t sign = (f >> 16) & 0x8000u;
        uint32_t exponent = (f >> 23) & 0xFFu;
        uint32_t mantissa = f & 0x7FFFFFu;
        if (exponent == 0xFFu) { // inf or NaN
            return static_cast<uint16_t>(sign | 0x7C00u |
                                         (mantissa ? 0x200u | (mantissa >> 13) : 0u));
        }
        int32_t e = static_cast<int32_t>(exponent) - 127 + 15;
        if (e >= 0x1F) { // overflow
            return static_cast<uint16_t>(sign | 0x7C00u);
        }
        if (e <= 0) { // subnormal or zero in half precision
            if (e < -10) {
                return static_cast<uint16_t>(sign);
            }
            mantissa |= 0x800000u;
            uint32_t shift = static_cast<uint32_t>(14 - e);
            uint32_t half = mantissa >> shift;
            uint32_t rest = mantissa & ((1u << shift) - 1u);
            uint32_t halfway = 1u << (shift - 1u);
            if (rest > halfway || (rest == halfway && (half & 1u))) {
                ++half;
            }
            return static_cast<uint16_t>(sign | half);
        }
        uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
        uint32_t rest = mantissa & 0x1FFFu;
        if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) {
            ++half; // may carry into the exponent: still correct rounding
        }
        return static_cast<uint16_t>(half);
    }

    /** The float value of binary16 bits `h` (exact). */
    static float toFloat(uint16_t h)
    {
        uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
        uint32_t exponent = (h >> 10) & 0x1Fu;
        uint32_t mantissa = h & 0x3FFu;
        uint32_t f;
        if (exponent == 0) {
            if (mantissa == 0) {
                f = sign;
            } else { // subnormal: normalise
                int32_t e = -1;
                do {
                    ++e;
                    mantissa <<= 1;
                } while ((mantissa & 0x400u) == 0);
                f = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) |
                    ((mantissa & 0x3FFu) << 13);
            }
        } else if (exponent == 0x1F) {
            f = sign | 0x7F800000u | (mantissa << 13);
        } else {
            f = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
        }
        float value;
        std::memcpy(&value, &f, sizeof(value));
        return value;
    }
};

static_assert(sizeof(float16_t) == 2, "float16_t must be 16 bits");

/** Equality of the values as floats (+0 == -0; NaN equals nothing). */
inline bool
operator==(float16_t a, float16_t b)
{
    return static_cast<float>(a) == static_cast<float>(b);
}
/** Inequality of the values as floats. */
inline bool
operator!=(float16_t a, float16_t b)
{
    return !(a == b);
}
/** Writes the value as a float. */
inline std::ostream&
operator<<(std::ostream& out, float16_t value)
{
    return out << static_cast<float>(value);
}

/** bfloat16: 1 sign bit, 8 exponent bits and 7 mantissa bits: a float
 * with the lower 16 bits of its mantissa dropped. Same range as float, about
 * 3 significant decimal digits. The element type of eBFloat16 tensors; a
 * trivially copyable value type of 16 bits, like float16_t. */
struct bfloat16_t
{
    /** The raw bits: the upper half of the float's bits. */
    uint16_t bits = 0;

    /** Zero. */
    constexpr bfloat16_t() = default;
    /** Rounds to nearest even; NaN stays a (quiet) NaN. */
    bfloat16_t(float value) : bits(fromFloat(value)) {}
    /** The exact float value. */
    operator float() const { return toFloat(bits); }

    /** The value whose bits are `raw`. */
    static constexpr bfloat16_t fromBits(uint16_t raw)
    {
        bfloat16_t b;
        b.bits = raw;
        return b;
    }

    /** The bfloat16 bits nearest to `value` (round to nearest even; a value
     * that rounds past the largest finite one gives infinity; NaN keeps its
     * sign and becomes quiet). */
    static uint16_t fromFloat(float value)
    {
        uint32_t f;
        std::memcpy(&f, &value, sizeof(f));
        if ((f & 0x7FFFFFFFu) > 0x7F800000u) { // NaN: keep the sign, make it quiet
            return static_cast<uint16_t>((f >> 16) | 0x0040u);
        }
        // Round to nearest even on the dropped 16 bits (may carry into the
        // exponent, which rounds to the next power of two or to infinity).
        f += 0x7FFFu + ((f >> 16) & 1u);
        return static_cast<uint16_t>(f >> 16);
    }

    /** The float value of bfloat16 bits `b` (exact). */
    static float toFloat(uint16_t b)
    {
        uint32_t f = static_cast<uint32_t>(b) << 16;
        float value;
        std::memcpy(&value, &f, sizeof(value));
        return value;
    }
};

static_assert(sizeof(bfloat16_t) == 2, "bfloat16_t must be 16 bits");

/** Equality of the values as floats (+0 == -0; NaN equals nothing). */
inline bool
operator==(bfloat16_t a, bfloat16_t b)
{
    return static_cast<float>(a) == static_cast<float>(b);
}
/** Inequality of the values as floats. */
inline bool
operator!=(bfloat16_t a, bfloat16_t b)
{
    return !(a == b);
}
/** Writes the value as a float. */
inline std::ostream&
operator<<(std::ostream& out, bfloat16_t value)
{
    return out << static_cast<float>(value);
}

} // namespace kp
