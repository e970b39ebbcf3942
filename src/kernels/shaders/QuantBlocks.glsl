// The GGUF block formats beyond Q8_0 and Q4_0 (Q4_1, Q5_0, Q5_1, IQ4_NL and
// the 256-weight super-blocks Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS), decoded
// from their bytes as stored in the file (include/kompute/kernels/
// Quantization.hpp has the layouts; kp::dequantize is the host's decoder of
// the same bytes). One decoder per format, shared by every kernel: include
// this file after defining QUANT_VIEW, the uint16_t[] view of the binding
// that holds the blocks (every block starts on a 2-byte boundary), and
// optionally QUANT_VIEW32, its uint[] view (4-byte aligned words in one
// load).
//
//   quantBlockLoad8(type, w, lo, hi)   weights w .. w+7 (w % 8 == 0)
//   quantBlockLoad(type, w)            weight w
//
// Eight consecutive weights share one sub-block (of 16 or 32), hence one
// scale, and come from 8 consecutive bytes (even-aligned), read as two
// 32-bit words. Products are `precise` where ggml rounds twice (d * q, then
// + m): a fused multiply-add would differ from the host in the last bit.
#ifndef QUANT_VIEW
#error "define QUANT_VIEW (the 16-bit view of the blocks) before including QuantBlocks.glsl"
#endif

uint quantU16(uint index) { return uint(QUANT_VIEW[index]); }
// The 4 bytes from byte `at` (even) of the binding: one 32-bit load where
// `at` is 4-byte aligned and QUANT_VIEW32 (the uint[] view of the same
// binding) is defined, else two 16-bit loads.
uint quantWord(uint at)
{
#ifdef QUANT_VIEW32
    if ((at & 3u) == 0u) {
        return QUANT_VIEW32[at >> 2];
    }
#endif
    return quantU16(at >> 1) | (quantU16((at >> 1) + 1u) << 16);
}
uint quantByte(uint at) { return (quantU16(at >> 1) >> ((at & 1u) * 8u)) & 0xFFu; }
float quantHalf(uint at) { return f16BitsToFloat(quantU16(at >> 1)); }

// Bytes at .. at+7 (at even), each shifted right by `shift` and masked.
void quantFields8(uint at, uint shift, uint mask, out uvec4 lo, out uvec4 hi)
{
    uint w0 = quantWord(at), w1 = quantWord(at + 4u);
    lo = (uvec4(w0, w0 >> 8, w0 >> 16, w0 >> 24) >> shift) & mask;
    hi = (uvec4(w1, w1 >> 8, w1 >> 16, w1 >> 24) >> shift) & mask;
}

// Bits b .. b+7 of `bits`, one per lane.
void quantBits8(uint bits, uint b, out uvec4 lo, out uvec4 hi)
{
    uint v = bits >> b;
    lo = uvec4(v, v >> 1, v >> 2, v >> 3) & 1u;
    hi = uvec4(v >> 4, v >> 5, v >> 6, v >> 7) & 1u;
}

// The 16 levels of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl: -127, -104,
// -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113) as int8
// bytes, 4 per word: a vector indexed by q / 4 rather than an array of 16
// (which drivers may place in local memory).
const uvec4 IQ4_LEVELS = uvec4(0xBFAD9881u, 0xF6EADDCFu, 0x26190D01u, 0x71594535u);
float iq4Level(uint q) { return float(bitfieldExtract(int(IQ4_LEVELS[q >> 2]), int((q & 3u) * 8u), 8)); }
vec4 iq4Levels(uvec4 q) { return vec4(iq4Level(q.x), iq4Level(q.y), iq4Level(q.z), iq4Level(q.w)); }

// Q4_K and Q5_K: the 6-bit scale and minimum of sub-block s (ggml's
// get_scale_min_k4) of the block at byte `at` (the 12 scale bytes at +4).
void quantScaleMinK4(uint at, uint s, out float scale, out float minimum)
{
    uint sc, m;
    if (s < 4u) {
        sc = quantByte(at + 4u + s) & 63u;
        m = quantByte(at + 8u + s) & 63u;
    } else {
        uint packed = quantByte(at + 8u + s);
        sc = (packed & 15u) | ((quantByte(at + s) >> 6) << 4);
        m = (packed >> 4) | ((quantByte(at + 4u + s) >> 6) << 4);
    }
    scale = float(sc);
    minimum = float(m);
}

// d * q + m and d * q - m, each product rounded first (as ggml).
void quantAffine(float d, float m, uvec4 qlo, uvec4 qhi, out vec4 lo, out vec4 hi)
{
    precise vec4 a = d * vec4(qlo) + m;
    precise vec4 b = d * vec4(qhi) + m;
    lo = a;
    hi = b;
}

void quantBlockLoad8(uint type, uint w, out vec4 lo, out vec4 hi)
{
    uvec4 qlo, qhi, hlo, hhi;
    if (type == TYPE_Q4_1 || type == TYPE_Q5_0 || type == TYPE_Q5_1 || type == TYPE_IQ4_NL) {
        uint e = w & 31u;
        uint at = (w >> 5) * (type == TYPE_Q4_1 ? 20u : type == TYPE_Q5_0 ? 22u : type == TYPE_Q5_1 ? 24u : 18u);
        float d = quantHalf(at);
        uint qs = at + (type == TYPE_Q4_1 ? 4u : type == TYPE_Q5_0 ? 6u : type == TYPE_Q5_1 ? 8u : 2u);
        quantFields8(qs + (e & 15u), (e >> 4) * 4u, 15u, qlo, qhi);
        if (type == TYPE_IQ4_NL) {
            lo = d * iq4Levels(qlo);
            hi = d * iq4Levels(qhi);
            return;
        }
        if (type != TYPE_Q4_1) { // the 5th bit of weight e is bit e of qh
            quantBits8(quantWord(at + (type == TYPE_Q5_0 ? 2u : 4u)), e, hlo, hhi);
            qlo |= hlo << 4;
            qhi |= hhi << 4;
        }
        if (type == TYPE_Q5_0) {
            lo = d * (vec4(qlo) - 16.0);
            hi = d * (vec4(qhi) - 16.0);
            return;
        }
        quantAffine(d, quantHalf(at + 2u), qlo, qhi, lo, hi);
        return;
    }
    uint e = w & 255u;
    uint s = e >> 5, l = e & 31u;
    if (type == TYPE_Q2_K) {
        uint at = (w >> 8) * 84u;
        uint sc = quantByte(at + (e >> 4));
        float dl = quantHalf(at + 80u) * float(sc & 15u);
        float ml = quantHalf(at + 82u) * float(sc >> 4);
        quantFields8(at + 16u + (e >> 7) * 32u + l, 2u * (s & 3u), 3u, qlo, qhi);
        quantAffine(dl, -ml, qlo, qhi, lo, hi);
    } else if (type == TYPE_Q3_K) {
        uint at = (w >> 8) * 110u;
        uint i = e >> 4;
        uint low = (quantByte(at + 96u + (i & 7u)) >> ((i >> 3) * 4u)) & 15u;
        uint high = (quantByte(at + 104u + (i & 3u)) >> (2u * (i >> 2))) & 3u;
        float dl = quantHalf(at + 108u) * float(int(low | (high << 4)) - 32);
        uint bit = 4u * (e >> 7) + (s & 3u);
        quantFields8(at + 32u + (e >> 7) * 32u + l, 2u * (s & 3u), 3u, qlo, qhi);
        quantFields8(at + l, bit, 1u, hlo, hhi);
        // q - 4 where the mask bit is clear
        lo = dl * (vec4(qlo) - 4.0 + 4.0 * vec4(hlo));
        hi = dl * (vec4(qhi) - 4.0 + 4.0 * vec4(hhi));
    } else if (type == TYPE_Q4_K || type == TYPE_Q5_K) {
        bool five = type == TYPE_Q5_K;
        uint at = (w >> 8) * (five ? 176u : 144u);
        float sc, m;
        quantScaleMinK4(at, s, sc, m);
        float dl = quantHalf(at) * sc;
        float ml = quantHalf(at + 2u) * m;
        quantFields8(at + (five ? 48u : 16u) + (s >> 1) * 32u + l, (s & 1u) * 4u, 15u, qlo, qhi);
        if (five) {
            quantFields8(at + 16u + l, s, 1u, hlo, hhi);
            qlo |= hlo << 4;
            qhi |= hhi << 4;
        }
        quantAffine(dl, -ml, qlo, qhi, lo, hi);
    } else if (type == TYPE_Q6_K) {
        uint at = (w >> 8) * 210u;
        uint n = e >> 7, g = s & 3u;
        float dl = quantHalf(at + 208u) * float(bitfieldExtract(int(quantByte(at + 192u + (e >> 4))), 0, 8));
        quantFields8(at + 64u * n + (g & 1u) * 32u + l, (g >> 1) * 4u, 15u, qlo, qhi);
        quantFields8(at + 128u + 32u * n + l, 2u * g, 3u, hlo, hhi);
        lo = dl * (vec4(qlo | (hlo << 4)) - 32.0);
        hi = dl * (vec4(qhi | (hhi << 4)) - 32.0);
    } else { // TYPE_IQ4_XS
        uint at = (w >> 8) * 136u;
        uint ls = ((quantByte(at + 4u + (s >> 1)) >> (4u * (s & 1u))) & 15u) |
                  (((quantU16((at + 2u) >> 1) >> (2u * s)) & 3u) << 4);
        float dl = quantHalf(at) * float(int(ls) - 32);
        quantFields8(at + 8u + 16u * s + (l & 15u), (l >> 4) * 4u, 15u, qlo, qhi);
        lo = dl * iq4Levels(qlo);
        hi = dl * iq4Levels(qhi);
    }
}

float quantBlockLoad(uint type, uint w)
{
    vec4 lo, hi;
    quantBlockLoad8(type, w & ~7u, lo, hi);
    uint i = w & 7u;
    return i < 4u ? lo[i] : hi[i - 4u];
}
