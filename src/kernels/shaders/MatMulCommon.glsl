// Shared by the matrix kernels (MatMulTiled, MatMulCoopmat, MatVec, GetRows):
// operand element types, raw views of a binding, and element loads that
// convert f32/f16/bf16 and dequantize the GGUF blocks (Q8_0 and Q4_0 here,
// the other formats in QuantBlocks.glsl).
//
// Operands are bound as raw words (uint16/uint/uvec2/uvec4 views of one
// binding) rather than typed arrays, so that one module serves every element
// type (chosen by specialization constants; drivers drop the dead branches)
// and needs only 16-bit storage, not 16-bit arithmetic. The 16-bit view makes
// the last element of an odd-sized 16-bit tensor, and the 2-byte-aligned
// GGUF blocks, readable without reading past the binding.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : enable

// silu(g) = g / (1 + e^-g): the SwiGLU of the mat-vec's x (swigluA) and of
// the GEMMs' C (swigluC).
float silu(float g) { return g / (1.0 + exp(-g)); }
vec4 silu(vec4 g) { return g / (1.0 + exp(-g)); }

// Element types (src/kernels/MatMul.cpp mirrors these values).
const uint TYPE_F32 = 0u;
const uint TYPE_F16 = 1u;
const uint TYPE_BF16 = 2u;
const uint TYPE_Q8_0 = 3u; // {f16 d; int8 qs[32]}: 34 bytes per 32 weights
const uint TYPE_Q4_0 = 4u; // {f16 d; uint8 qs[16]}: 18 bytes per 32 weights
// QuantBlocks.glsl decodes these (layouts: kompute/kernels/Quantization.hpp).
const uint TYPE_Q4_1 = 5u;   // 20 bytes per 32 weights
const uint TYPE_Q5_0 = 6u;   // 22 bytes per 32 weights
const uint TYPE_Q5_1 = 7u;   // 24 bytes per 32 weights
const uint TYPE_Q2_K = 8u;   // 84 bytes per 256 weights
const uint TYPE_Q3_K = 9u;   // 110 bytes per 256 weights
const uint TYPE_Q4_K = 10u;  // 144 bytes per 256 weights
const uint TYPE_Q5_K = 11u;  // 176 bytes per 256 weights
const uint TYPE_Q6_K = 12u;  // 210 bytes per 256 weights
const uint TYPE_IQ4_NL = 13u; // 18 bytes per 32 weights
const uint TYPE_IQ4_XS = 14u; // 136 bytes per 256 weights
// Ours: 8 Q8_0 (Q4_0) blocks with their 8 scales first, {f16 d[8]; int8
// qs[8][32]} (uint8 qs[8][16]): 272 (144) bytes per 256 weights, the quants
// of each block 16-byte aligned (kp::groupBlocks).
const uint TYPE_Q8_0X8 = 15u;
const uint TYPE_Q4_0X8 = 16u;
#define IS_QUANT_TYPE(t) ((t) >= TYPE_Q8_0)
// The formats whose blocks are Q8_0's or Q4_0's, grouped or not (their
// quants and scales decode alike; only where they lie differs).
#define IS_Q8_FAMILY(t) ((t) == TYPE_Q8_0 || (t) == TYPE_Q8_0X8)
#define IS_Q4_FAMILY(t) ((t) == TYPE_Q4_0 || (t) == TYPE_Q4_0X8)
#define IS_GROUPED(t) ((t) >= TYPE_Q8_0X8)

// Block sizes in 16-bit words; a group of 8 grouped blocks.
const uint Q8_0_BLOCK_U16 = 17u;
const uint Q4_0_BLOCK_U16 = 9u;
const uint Q8_0X8_GROUP_U16 = 136u;
const uint Q4_0X8_GROUP_U16 = 72u;

// Where 32-weight block `block` of a Q8_0 or Q4_0 operand, grouped or not,
// keeps its scale and its quants: 16-bit word indices.
void q8BlockAt(uint type, uint block, out uint dAt, out uint qAt)
{
    if (IS_GROUPED(type)) {
        uint group = (block >> 3) * (type == TYPE_Q8_0X8 ? Q8_0X8_GROUP_U16 : Q4_0X8_GROUP_U16);
        uint b = block & 7u;
        dAt = group + b;
        qAt = group + 8u + b * (type == TYPE_Q8_0X8 ? 16u : 8u);
        return;
    }
    dAt = block * (type == TYPE_Q8_0 ? Q8_0_BLOCK_U16 : Q4_0_BLOCK_U16);
    qAt = dAt + 1u;
}

float f16BitsToFloat(uint bits) { return unpackHalf2x16(bits).x; }
float bf16BitsToFloat(uint bits) { return uintBitsToFloat(bits << 16); }
vec2 bf16PairToVec2(uint word) { return uintBitsToFloat(uvec2(word << 16, word & 0xFFFF0000u)); }

// Round-to-nearest-even f32 -> bf16 bits (NaN stays a quiet NaN).
uint floatToBf16Bits(float value)
{
    uint u = floatBitsToUint(value);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
        return (u >> 16) | 0x40u;
    }
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

// Declares the raw views NAME16/NAME32/NAME64/NAME128 of a read-only binding.
#define OPERAND_VIEWS(BINDING, NAME)                                                  \
    layout(set = 0, binding = BINDING) readonly buffer NAME##View16 { uint16_t NAME##16[]; };  \
    layout(set = 0, binding = BINDING) readonly buffer NAME##View32 { uint NAME##32[]; };      \
    layout(set = 0, binding = BINDING) readonly buffer NAME##View64 { uvec2 NAME##64[]; };     \
    layout(set = 0, binding = BINDING) readonly buffer NAME##View128 { uvec4 NAME##128[]; };
// The same, coherent: an operand that a dispatch before this one wrote
// with no barrier between them (Chain.glsl).
#define COHERENT_OPERAND_VIEWS(BINDING, NAME)                                                   \
    layout(set = 0, binding = BINDING) coherent readonly buffer NAME##View16 { uint16_t NAME##16[]; }; \
    layout(set = 0, binding = BINDING) coherent readonly buffer NAME##View32 { uint NAME##32[]; };     \
    layout(set = 0, binding = BINDING) coherent readonly buffer NAME##View64 { uvec2 NAME##64[]; };    \
    layout(set = 0, binding = BINDING) coherent readonly buffer NAME##View128 { uvec4 NAME##128[]; };

// Loads of a float operand NAME (f32, f16 or bf16) at element index e:
//   NAME##Load(type, e)           one element
//   NAME##Load4(type, e)          4 elements, e % 4 == 0 (one 8- or 16-byte load)
//   NAME##Load8(type, e, lo, hi)  8 elements, e % 8 == 0 (16-byte loads)
//   NAME##Bits8(type, e)          8 elements as 16-bit patterns (uvec4 of pairs),
//                                 e % 8 == 0, rounded to bf16 if toBf16, else f16
#define FLOAT_OPERAND_LOADS(NAME)                                                      \
    float NAME##Load(uint type, uint e)                                                \
    {                                                                                  \
        if (type == TYPE_F32) {                                                        \
            return uintBitsToFloat(NAME##32[e]);                                       \
        }                                                                              \
        uint bits = uint(NAME##16[e]);                                                 \
        return type == TYPE_F16 ? f16BitsToFloat(bits) : bf16BitsToFloat(bits);       \
    }                                                                                  \
    vec4 NAME##Load4(uint type, uint e)                                                \
    {                                                                                  \
        if (type == TYPE_F32) {                                                        \
            return uintBitsToFloat(NAME##128[e >> 2]);                                 \
        }                                                                              \
        uvec2 w = NAME##64[e >> 2];                                                    \
        if (type == TYPE_F16) {                                                        \
            return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));                     \
        }                                                                              \
        return vec4(bf16PairToVec2(w.x), bf16PairToVec2(w.y));                         \
    }                                                                                  \
    void NAME##Load8(uint type, uint e, out vec4 lo, out vec4 hi)                      \
    {                                                                                  \
        if (type == TYPE_F32) {                                                        \
            lo = uintBitsToFloat(NAME##128[e >> 2]);                                   \
            hi = uintBitsToFloat(NAME##128[(e >> 2) + 1u]);                            \
            return;                                                                    \
        }                                                                              \
        uvec4 w = NAME##128[e >> 3];                                                   \
        if (type == TYPE_F16) {                                                        \
            lo = vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));                       \
            hi = vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));                       \
        } else {                                                                       \
            lo = vec4(bf16PairToVec2(w.x), bf16PairToVec2(w.y));                       \
            hi = vec4(bf16PairToVec2(w.z), bf16PairToVec2(w.w));                       \
        }                                                                              \
    }

// 8 weights of a Q8_0 or Q4_0 block (grouped or not) from the words
// FetchQ8 loaded: {d's f16 bits, quants 0-3, quants 4-7, Q4_0's nibble
// shift}. All-zero words are 8 zeros in both formats (d = 0).
void decodeQ8Raw(uint type, uvec4 raw, out vec4 lo, out vec4 hi)
{
    float d = f16BitsToFloat(raw.x);
    if (IS_Q8_FAMILY(type)) {
        int w0 = int(raw.y), w1 = int(raw.z);
        lo = d * vec4(bitfieldExtract(w0, 0, 8), bitfieldExtract(w0, 8, 8), bitfieldExtract(w0, 16, 8),
                      bitfieldExtract(w0, 24, 8));
        hi = d * vec4(bitfieldExtract(w1, 0, 8), bitfieldExtract(w1, 8, 8), bitfieldExtract(w1, 16, 8),
                      bitfieldExtract(w1, 24, 8));
        return;
    }
    uint w0 = raw.y >> raw.w, w1 = raw.z >> raw.w;
    lo = d * (vec4(w0 & 15u, (w0 >> 8) & 15u, (w0 >> 16) & 15u, (w0 >> 24) & 15u) - 8.0);
    hi = d * (vec4(w1 & 15u, (w1 >> 8) & 15u, (w1 >> 16) & 15u, (w1 >> 24) & 15u) - 8.0);
}

// Loads of a quantized operand NAME at weight index w (the tensor's bytes
// are GGUF blocks; weight w is weight w % 32 of block w / 32, or w % 256 of
// super-block w / 256). Q8_0 and Q4_0, grouped or not, are decoded here, the
// other formats by QuantBlocks.glsl, which must be included first with
// QUANT_VIEW = NAME##16:
//   NAME##LoadQ(type, w)             one weight
//   NAME##LoadQ8(type, w, lo, hi)    8 weights, w % 8 == 0
//   NAME##FetchQ8(type, w)           their words, Q8_0 and Q4_0 (decodeQ8Raw)
#define QUANT_OPERAND_LOADS(NAME)                                                      \
    float NAME##LoadQ(uint type, uint w)                                               \
    {                                                                                  \
        if (type > TYPE_Q4_0 && !IS_GROUPED(type)) {                                   \
            return quantBlockLoad(type, w);                                            \
        }                                                                              \
        uint dAt, qAt;                                                                 \
        q8BlockAt(type, w >> 5, dAt, qAt);                                             \
        uint j = w & 31u;                                                              \
        float d = f16BitsToFloat(uint(NAME##16[dAt]));                                 \
        if (IS_Q8_FAMILY(type)) {                                                      \
            int pair = int(uint(NAME##16[qAt + (j >> 1)]));                            \
            return d * float(bitfieldExtract(pair, int((j & 1u) * 8u), 8));            \
        }                                                                              \
        uint byteIndex = j & 15u;                                                      \
        uint pair = uint(NAME##16[qAt + (byteIndex >> 1)]);                            \
        uint shift = (byteIndex & 1u) * 8u + (j >> 4) * 4u;                            \
        return d * (float(bitfieldExtract(pair, int(shift), 4)) - 8.0);                \
    }                                                                                  \
    /* The words of 8 weights from w (w % 8 == 0) of a Q8_0 or Q4_0 operand  \
       (grouped or not) as loaded, for decodeQ8Raw: a tile load can keep    \
       them in registers and decode them after its multiply-adds. */        \
    uvec4 NAME##FetchQ8(uint type, uint w)                                     \
    {                                                                          \
        uint dAt, qAt;                                                         \
        q8BlockAt(type, w >> 5, dAt, qAt);                                     \
        uint j = w & 31u;                                                      \
        /* Q4_0: weights 16..31 are the high nibbles of bytes 0..15 */        \
        uint q = qAt + (IS_Q8_FAMILY(type) ? j : j & 15u) / 2u;               \
        return uvec4(uint(NAME##16[dAt]),                                      \
                     uint(NAME##16[q]) | (uint(NAME##16[q + 1u]) << 16),      \
                     uint(NAME##16[q + 2u]) | (uint(NAME##16[q + 3u]) << 16), \
                     IS_Q8_FAMILY(type) ? 0u : (j >> 4) * 4u);                 \
    }                                                                          \
    void NAME##LoadQ8(uint type, uint w, out vec4 lo, out vec4 hi)             \
    {                                                                          \
        if (type > TYPE_Q4_0 && !IS_GROUPED(type)) {                           \
            quantBlockLoad8(type, w, lo, hi);                                  \
            return;                                                            \
        }                                                                      \
        decodeQ8Raw(type, NAME##FetchQ8(type, w), lo, hi);                     \
    }
