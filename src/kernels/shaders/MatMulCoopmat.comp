#version 450
// C = alpha * op(A) * op(B) + beta * C on cooperative matrices (tensor
// cores), f32 accumulation. Written with GL_NV_cooperative_matrix (what
// glslang 12 knows); src/kernels/CoopmatRewrite.cpp turns the module into
// its VK_KHR_cooperative_matrix form, with bf16 operands when asked. The A,
// B and accumulator types take their dimensions from three distinct
// specialization constants (lM x lK, lK x lN, lM x lN), so they are
// distinct types by construction, as the KHR form's Use operand needs.
//
// Each workgroup computes a BM x BN tile of C; each subgroup a WM x WN part
// of it. Operands are staged BK deep in shared memory as 16-bit values
// (f16, or bf16 bits when STAGE_BF16): f32 inputs are rounded, GGUF
// blocks (any format) dequantized on the way. The next tiles are loaded
// into registers while the current ones are multiplied (and, DOUBLE_BUFFER,
// stored into the other half of shared memory). RAW_STAGING keeps f32,
// Q8_0 and Q4_0 operands in registers as loaded and converts them when they
// are stored, after the multiply-adds: converting at the load makes the
// loads' latency a stall before the multiply-adds instead of hiding it
// behind them. LOAD_AHEAD > 1 keeps that many tiles' loads in flight in as
// many sets of registers (the main loop unrolled by LOAD_AHEAD, so that
// each set is a fixed set of registers): a load then has LOAD_AHEAD tiles
// of multiply-adds to arrive in, with 48 KB of shared memory (NVIDIA's
// limit) holding no more than two stages. (On the H200 and H100 it made the
// whole kernel slower, so the library keeps 1: docs/matmul-tuning.md.)
//
// The FM x FN fragments of a subgroup are separate variables, written out
// by the preprocessor (one compiled variant per FM x FN): NVIDIA's compiler
// put arrays of cooperative matrices in local memory, even with every loop
// over them unrolled (36 TFLOP/s on the H200).
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#include "MatMulCommon.glsl"
#include "MatMulParams.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 4) const uint WM = 64; // FM * lM
layout(constant_id = 5) const uint WN = 64; // FN * lN
layout(constant_id = 6) const uint lM = 16;
layout(constant_id = 7) const uint lN = 8;
layout(constant_id = 8) const uint lK = 16;
layout(constant_id = 9) const uint A_TYPE = 1;
layout(constant_id = 10) const uint B_TYPE = 1;
layout(constant_id = 11) const uint C_TYPE = 0;
layout(constant_id = 12) const uint TRANS_A = 0;
layout(constant_id = 13) const uint TRANS_B = 0;
layout(constant_id = 14) const uint VEC_A = 0; // 8-element chunks in one 16-byte load
layout(constant_id = 15) const uint VEC_B = 0;
layout(constant_id = 16) const uint STAGE_BF16 = 0;
// Two shared tiles: the next tile is stored while the current one is
// multiplied, one barrier per tile instead of two.
layout(constant_id = 17) const uint DOUBLE_BUFFER = 1;
layout(constant_id = 18) const uint RAW_STAGING = 0;
// Tiles whose loads are in flight (1-4).
layout(constant_id = 19) const uint LOAD_AHEAD = 1;
// For kompute-kernel-probe's timings of the kernel's parts only (the
// result is not the product unless 0): 1 leaves out the loads and stores
// of the tiles after the first (multiply-adds and barriers), 2 the
// multiply-adds (loads, stores, barriers), 3 the loads, stores and
// barriers (multiply-adds only).
layout(constant_id = 20) const uint TIMING_PART = 0;
// Q8_0/Q4_0 B loaded as 32-bit words, a subgroup's rows of the tile side
// by side, and decoded a block per lane through shared memory (see
// fetchBWords); the host sets it where it fits (coopmatQuantWordsFit).
layout(constant_id = 21) const uint BQ_WORDS = 0;
// MatMulParams::swigluC: C = silu(gate) * up. Each subgroup's WN columns of
// the tile are WN / 2 gate rows of B and the up rows of the same outputs
// (bRow), so that its fragment j and fragment j + FN / 2 meet in the
// epilogue; a workgroup writes BN / 2 columns of C.
layout(constant_id = 22) const uint SWIGLU_C = 0;
const bool TIME_LOADS = TIMING_PART == 0 || TIMING_PART == 2;
const bool TIME_MMA = TIMING_PART != 2;
const bool TIME_BARRIERS = TIMING_PART != 3;

const uint WG = gl_WorkGroupSize.x;
const uint WARPS_N = BN / WN;
const uint WARPS = (BM / WM) * WARPS_N;
#if !defined(FM) || !defined(FN)
#error "compile with FM and FN: the fragments per subgroup"
#endif
const bool B_QUANT = IS_QUANT_TYPE(B_TYPE);
const uint STAGE_TYPE = STAGE_BF16 != 0 ? TYPE_BF16 : TYPE_F16;
// The operands RAW_STAGING defers: whole f32 chunks (two 16-byte words in
// registers) and Q8_0/Q4_0 blocks (FetchQ8's words).
const bool RAW_A = RAW_STAGING != 0 && VEC_A != 0 && A_TYPE == TYPE_F32;
const bool RAW_B = RAW_STAGING != 0 && VEC_B != 0 && B_TYPE == TYPE_F32;
// (Q8_0 or Q4_0 as a != of its own: glslang makes ||, and && over a
// nested comparison, on specialization constants into branches in main,
// which other functions cannot use.)
const bool B_Q8_0_OR_Q4_0 = (B_TYPE == TYPE_Q8_0) != (B_TYPE == TYPE_Q4_0) != (B_TYPE == TYPE_Q8_0X8) !=
                            (B_TYPE == TYPE_Q4_0X8);
// Q8_0X8 and Q4_0X8: Q8_0's and Q4_0's blocks grouped by 8, the scales first.
const bool B_GROUPED = B_TYPE >= TYPE_Q8_0X8;
const bool B_Q8 = (B_TYPE == TYPE_Q8_0) != (B_TYPE == TYPE_Q8_0X8);
const bool RAW_BQ = RAW_STAGING != 0 && B_Q8_0_OR_Q4_0;
// BQ_WORDS: each subgroup loads BQ_ROWS rows of the B tile, BK / 32 blocks
// of each (BQ_ROW_WORDS words from a 4-byte boundary), one block per lane
// (the host checks BQ_ROWS * BK / 32 == 32 lanes).
const bool B_WORDS = BQ_WORDS != 0 && B_Q8_0_OR_Q4_0;
const uint BQ_BLOCK_BYTES = B_Q8 ? 34u : 18u;
const uint BQ_ROW_WORDS = BK / 32u * BQ_BLOCK_BYTES / 4u;
const uint BQ_ROWS = BN / WARPS;
const uint BQ_WARP_WORDS = BQ_ROWS * BQ_ROW_WORDS;
const uint BQ_LOADS = B_WORDS ? (BQ_WARP_WORDS + 31u) / 32u : 1u;

// Shared tiles in rows of 8-half chunks plus one chunk of padding (so that
// the rows of a fragment fall into different banks). Rows follow the
// operand's contiguous dimension: A[m][k] or A[k][m], B[n][k] or B[k][n].
const uint SA = (TRANS_A != 0 ? BM : BK) / 8 + 1;
const uint SB = (TRANS_B != 0 ? BK : BN) / 8 + 1;
const uint A_CHUNKS = BM * BK / 8 / WG;
const uint B_CHUNKS = BK * BN / 8 / WG;
const uint A_TILE = (TRANS_A != 0 ? BK : BM) * SA;
const uint B_TILE = (TRANS_B != 0 ? BN : BK) * SB;
const uint BUFFERS = DOUBLE_BUFFER != 0 ? 2 : 1;
shared uvec4 shA[A_TILE * BUFFERS];
shared uvec4 shB[B_TILE * BUFFERS];
// Per subgroup: one accumulator fragment on its way to C (f32 bits) after
// the main loop; in it, with B_WORDS, the subgroup's raw words of B.
const uint FRAGMENT_WORDS = WARPS * lM * lN * (SWIGLU_C != 0 ? 2u : 1u); // SWIGLU_C: gate and up
const uint BQ_SHARED_WORDS = B_WORDS ? WARPS * BQ_WARP_WORDS : 0u;
shared uint scratch[BQ_SHARED_WORDS > FRAGMENT_WORDS ? BQ_SHARED_WORDS : FRAGMENT_WORDS];

#define ACC_T fcoopmatNV<32, gl_ScopeSubgroup, lM, lN>
#define A_T fcoopmatNV<16, gl_ScopeSubgroup, lM, lK>
#define B_T fcoopmatNV<16, gl_ScopeSubgroup, lK, lN>
// FOR_M(X) is X(0) ... X(FM - 1); FOR_N(X, i) is X(i, 0) ... X(i, FN - 1).
#if FM == 1
#define FOR_M(X) X(0)
#elif FM == 2
#define FOR_M(X) X(0) X(1)
#elif FM == 4
#define FOR_M(X) X(0) X(1) X(2) X(3)
#elif FM == 8
#define FOR_M(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#endif
#if FN == 1
#define FOR_N(X, i) X(i, 0)
#elif FN == 2
#define FOR_N(X, i) X(i, 0) X(i, 1)
#elif FN == 4
#define FOR_N(X, i) X(i, 0) X(i, 1) X(i, 2) X(i, 3)
#elif FN == 8
#define FOR_N(X, i) X(i, 0) X(i, 1) X(i, 2) X(i, 3) X(i, 4) X(i, 5) X(i, 6) X(i, 7)
#endif
#define FOR_J(X) FOR_N(X, 0)
// SWIGLU_C: UP_J(j) is the fragment FN / 2 after j (mod FN), the up half of
// gate fragment j; ACC(i, j) names accumulator (i, j) after expanding j.
#if FN == 1
#define UP_J_0 0
#elif FN == 2
#define UP_J_0 1
#define UP_J_1 0
#elif FN == 4
#define UP_J_0 2
#define UP_J_1 3
#define UP_J_2 0
#define UP_J_3 1
#elif FN == 8
#define UP_J_0 4
#define UP_J_1 5
#define UP_J_2 6
#define UP_J_3 7
#define UP_J_4 0
#define UP_J_5 1
#define UP_J_6 2
#define UP_J_7 3
#endif
#define ACC_(i, j) acc##i##j
#define ACC(i, j) ACC_(i, j)

OPERAND_VIEWS(0, A)
OPERAND_VIEWS(1, B)
layout(set = 0, binding = 2) buffer CView32 { float C32[]; };
layout(set = 0, binding = 2) buffer CView16 { float16_t C16[]; };
FLOAT_OPERAND_LOADS(A)
FLOAT_OPERAND_LOADS(B)
#define QUANT_VIEW B16
#define QUANT_VIEW32 B32
#include "QuantBlocks.glsl"
QUANT_OPERAND_LOADS(B)

// The next tiles on their way to shared memory: register set S (one per
// tile in flight, LOAD_AHEAD of them) holds this thread's chunks of a tile
// in stA<S> and stB<S>, the second halves of raw f32 chunks in stA2<S>,
// stB2<S>. Separate variables, each named by a literal where it is used:
// an array of sets indexed by the tile went to local memory.
#define REGISTER_SET(S)                                        \
    uvec4 stA##S[A_CHUNKS], stA2##S[A_CHUNKS];                 \
    uvec4 stB##S[B_CHUNKS], stB2##S[B_CHUNKS];                 \
    uint stBw##S[BQ_LOADS];
REGISTER_SET(0)
REGISTER_SET(1)
REGISTER_SET(2)
REGISTER_SET(3)

uint pack2(float a, float b)
{
    if (STAGE_BF16 != 0) {
        return floatToBf16Bits(a) | (floatToBf16Bits(b) << 16);
    }
    return packHalf2x16(vec2(a, b));
}

uvec4 pack8(vec4 lo, vec4 hi)
{
    return uvec4(pack2(lo.x, lo.y), pack2(lo.z, lo.w), pack2(hi.x, hi.y), pack2(hi.z, hi.w));
}

// decodeQ8Raw straight into the staged f16 pairs, two weights an
// instruction: each quant goes into the mantissa of the f16 1024 (0x6400 |
// q is 1024 + q, exact), the bias (1024 + 8 for Q4_0's offset nibbles,
// 1024 + 128 for Q8_0's int8 with their sign bit flipped) leaves the quant
// exactly, and the multiply by d rounds once, as the f32 product rounded
// to f16 does. About 4 instructions per two weights instead of 11.
uvec4 decodeQ8RawHalf(uint type, uvec4 raw)
{
    bool q8 = IS_Q8_FAMILY(type);
    uint mask = q8 ? 0xFFu : 0x0Fu;
    uint flip = q8 ? 0x80808080u : 0u;
    f16vec2 bias = f16vec2(q8 ? float16_t(1152.0) : float16_t(1032.0));
    f16vec2 d = f16vec2(unpackFloat2x16(raw.x).x);
    uint words[2] = { (raw.y >> raw.w) ^ flip, (raw.z >> raw.w) ^ flip };
    uvec4 chunk;
    [[unroll]] for (uint h = 0; h < 2; ++h) {
        uint w = words[h];
        // Quants 0 and 1 (bytes 0 and 1) into the two lanes, then 2 and 3.
        uint p01 = (w & mask) | ((w << 8) & (mask << 16)) | 0x64006400u;
        uint p23 = ((w >> 16) & mask) | ((w >> 8) & (mask << 16)) | 0x64006400u;
        chunk[2 * h] = packFloat2x16((unpackFloat2x16(p01) - bias) * d);
        chunk[2 * h + 1] = packFloat2x16((unpackFloat2x16(p23) - bias) * d);
    }
    return chunk;
}

// 8 elements of A or B from element `base` along the contiguous dimension
// (index `at` of `extent` there); zeros outside the matrix.
#define STAGE_CHUNK(NAME, TYPE, VEC)                                                   \
    uvec4 NAME##Chunk(uint base, uint at, uint extent, bool inside)                    \
    {                                                                                  \
        if (!inside || (VEC != 0 && at >= extent)) {                                   \
            return uvec4(0);                                                           \
        }                                                                              \
        if (VEC != 0 && TYPE == STAGE_TYPE) {                                          \
            return NAME##128[base >> 3];                                               \
        }                                                                              \
        vec4 lo, hi;                                                                   \
        if (VEC != 0) {                                                                \
            NAME##Load8(TYPE, base, lo, hi);                                           \
        } else {                                                                       \
            for (uint i = 0; i < 4; ++i) {                                             \
                lo[i] = at + i < extent ? NAME##Load(TYPE, base + i) : 0.0;            \
                hi[i] = at + 4u + i < extent ? NAME##Load(TYPE, base + 4u + i) : 0.0;  \
            }                                                                          \
        }                                                                              \
        return pack8(lo, hi);                                                          \
    }
STAGE_CHUNK(A, A_TYPE, VEC_A)
STAGE_CHUNK(B, B_TYPE, VEC_B)

// The 8 elements of a chunk as staged (16-bit, converted) or, raw, as
// loaded (the two words of 8 f32 values: chunk, chunk2).
#define STAGE_OR_FETCH(NAME, RAW, base, at, extent, inside)                             \
    if (RAW) {                                                                           \
        bool in8 = (inside) && (at) < (extent);                                          \
        chunk = in8 ? NAME##128[(base) >> 2] : uvec4(0);                                 \
        chunk2 = in8 ? NAME##128[((base) >> 2) + 1u] : uvec4(0);                         \
    } else {                                                                             \
        chunk = NAME##Chunk(base, at, extent, inside);                                   \
    }

// The row of B (transposed: a column of the product) behind column c of the
// workgroup's tile, whose first column is col0, and whether B has it.
uint bRow(uint col0, uint c, out bool inside)
{
    if (SWIGLU_C == 0) {
        inside = col0 + c < p.n;
        return col0 + c;
    }
    uint halfWn = WN / 2u;
    uint column = col0 / 2u + c / WN * halfWn + c % halfWn; // of C
    inside = column < p.n;
    return c % WN < halfWn ? column : column + p.upRowB;
}

// This thread's chunk ci of the A tile at k0.
void fetchA(uint ci, uint k0, uint row0, uint baseA, out uvec4 chunk, out uvec4 chunk2)
{
    uint c = gl_LocalInvocationID.x + ci * WG;
    chunk2 = uvec4(0);
    if (TRANS_A == 0) {
        uint mm = c / (BK / 8), kk = (c % (BK / 8)) * 8;
        STAGE_OR_FETCH(A, RAW_A, baseA + (row0 + mm) * p.lda + k0 + kk, k0 + kk, p.k, row0 + mm < p.m)
    } else {
        uint kk = c / (BM / 8), mm = (c % (BM / 8)) * 8;
        STAGE_OR_FETCH(A, RAW_A, baseA + (k0 + kk) * p.lda + row0 + mm, row0 + mm, p.m, k0 + kk < p.k)
    }
}

// This thread's chunk ci of the B tile at k0.
void fetchB(uint ci, uint k0, uint col0, uint baseB, out uvec4 chunk, out uvec4 chunk2)
{
    uint c = gl_LocalInvocationID.x + ci * WG;
    chunk2 = uvec4(0);
    if (B_QUANT) { // whole blocks along k (k % 32 == 0)
        uint nn = c / (BK / 8), kk = (c % (BK / 8)) * 8;
        bool inside;
        uint w = baseB + bRow(col0, nn, inside) * p.ldb + k0 + kk;
        if (!inside || k0 + kk >= p.k) {
            chunk = uvec4(0);
        } else if (RAW_BQ) {
            chunk = BFetchQ8(B_TYPE, w);
        } else {
            vec4 lo, hi;
            BLoadQ8(B_TYPE, w, lo, hi);
            chunk = pack8(lo, hi);
        }
    } else if (TRANS_B != 0) {
        uint nn = c / (BK / 8), kk = (c % (BK / 8)) * 8;
        bool inside;
        uint row = bRow(col0, nn, inside);
        STAGE_OR_FETCH(B, RAW_B, baseB + row * p.ldb + k0 + kk, k0 + kk, p.k, inside)
    } else {
        uint kk = c / (BN / 8), nn = (c % (BN / 8)) * 8;
        STAGE_OR_FETCH(B, RAW_B, baseB + (k0 + kk) * p.ldb + col0 + nn, col0 + nn, p.n, k0 + kk < p.k)
    }
}

// A chunk as fetched into the staged 16-bit form (raw ones converted).
uvec4 convertA(uvec4 chunk, uvec4 chunk2)
{
    return RAW_A ? pack8(uintBitsToFloat(chunk), uintBitsToFloat(chunk2)) : chunk;
}

uvec4 convertB(uvec4 chunk, uvec4 chunk2)
{
    if (RAW_B) {
        return pack8(uintBitsToFloat(chunk), uintBitsToFloat(chunk2));
    }
    if (RAW_BQ) {
        if (STAGE_BF16 == 0) {
            return decodeQ8RawHalf(B_TYPE, chunk);
        }
        vec4 lo, hi;
        decodeQ8Raw(B_TYPE, chunk, lo, hi);
        return pack8(lo, hi);
    }
    return chunk;
}

// Chunk ci of the A tile, converted, into shared slot `slot`.
void storeA(uint ci, uint slot, uvec4 chunk)
{
    uint c = gl_LocalInvocationID.x + ci * WG;
    uint perRow = (TRANS_A != 0 ? BM : BK) / 8;
    shA[slot * A_TILE + (c / perRow) * SA + c % perRow] = chunk;
}

void storeB(uint ci, uint slot, uvec4 chunk)
{
    uint c = gl_LocalInvocationID.x + ci * WG;
    uint perRow = (TRANS_B != 0 || B_QUANT ? BK : BN) / 8;
    shB[slot * B_TILE + (c / perRow) * SB + c % perRow] = chunk;
}

// B_WORDS: this lane's words of its subgroup's BQ_ROWS rows of the B tile
// at k0, the rows' BK / 32 blocks side by side (a Q4_0 row of a 64-deep
// tile is 36 bytes: 9 words), so that a load of the subgroup reads a few
// whole cache lines. Loaded a chunk of 8 weights per thread, 16 rows of
// 18- or 34-byte blocks cost 2-byte loads over 4-8 rows each, whose cache
// lines outnumbered the f16 operand's 4 per load several times.
// Grouped (Q8_0X8, Q4_0X8), a row's words of the tile are the word of its
// two blocks' scales, then their quants (the tile is a quarter of a group).
void fetchBWords(uint k0, uint col0, uint baseB, out uint raw[BQ_LOADS])
{
    [[unroll]] for (uint j = 0; j < BQ_LOADS; ++j) {
        uint i = gl_SubgroupInvocationID + 32u * j;
        bool inside;
        uint n = bRow(col0, gl_SubgroupID * BQ_ROWS + i / BQ_ROW_WORDS, inside);
        raw[j] = 0u; // rows past n: zero blocks (d = 0)
        if (i < BQ_WARP_WORDS && inside) {
            uint w = baseB + n * p.ldb + k0; // the tile row's first weight
            uint word = i % BQ_ROW_WORDS;
            if (B_GROUPED) {
                uint group = (w >> 8) * (BQ_BLOCK_BYTES * 2u); // 8 blocks' words
                uint quarter = (w >> 6) & 3u;
                raw[j] = B32[group + (word == 0u ? quarter : 4u + quarter * (BQ_ROW_WORDS - 1u) + word - 1u)];
            } else {
                raw[j] = B32[w / 32u * BQ_BLOCK_BYTES / 4u + word];
            }
        }
    }
}

// The raw words into the subgroup's part of scratch, then each lane's
// block (row lane / 2, block lane % 2 of the row: BK = 64) decoded into
// its 4 chunks of the B tile (chunks[0..3]: B_CHUNKS is 4 wherever the
// words fit, one block a lane). Only the subgroup reads its words: a
// subgroup barrier orders them, and workgroup barriers lie between one
// tile's reads and the next tile's stores.
void decodeBWords(uint raw[BQ_LOADS], out uvec4 chunks[B_CHUNKS])
{
    uint lane = gl_SubgroupInvocationID;
    uint region = gl_SubgroupID * BQ_WARP_WORDS;
    [[unroll]] for (uint j = 0; j < BQ_LOADS; ++j) {
        uint i = lane + 32u * j;
        if (i < BQ_WARP_WORDS) {
            scratch[region + i] = raw[j];
        }
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    uint r = lane / (BK / 32u), kb = lane % (BK / 32u);
    uint rowWord = region + r * BQ_ROW_WORDS;
    const uint QUANT_WORDS = B_Q8 ? 8u : 4u;
    uint d, q[8];
    if (B_GROUPED) {
        // The two blocks' scales in the first word, their quants aligned.
        uint dWord = scratch[rowWord];
        d = kb != 0u ? dWord >> 16 : dWord & 0xFFFFu;
        [[unroll]] for (uint i = 0; i < QUANT_WORDS; ++i) {
            q[i] = scratch[rowWord + 1u + kb * QUANT_WORDS + i];
        }
    } else {
        uint at = kb * BQ_BLOCK_BYTES; // the block's first byte in the row (even)
        uint dWord = scratch[rowWord + at / 4u];
        d = (at & 2u) != 0u ? dWord >> 16 : dWord & 0xFFFFu;
        // The quants from byte at + 2: words funnelled where that is not on
        // a 4-byte boundary. Each word is read once (QUANT_WORDS + 1 reads,
        // not two a word: the shared-memory pipe is the one the fragments'
        // loads use); the word after the last one is clamped into the
        // subgroup's part: read, not used.
        uint first = rowWord + (at + 2u) / 4u;
        bool odd = ((at + 2u) & 2u) != 0u;
        uint w[9];
        [[unroll]] for (uint i = 0; i < QUANT_WORDS; ++i) {
            w[i] = scratch[first + i];
        }
        w[QUANT_WORDS] = scratch[min(first + QUANT_WORDS, region + BQ_WARP_WORDS - 1u)];
        [[unroll]] for (uint i = 0; i < QUANT_WORDS; ++i) {
            q[i] = odd ? (w[i] >> 16) | (w[i + 1u] << 16) : w[i];
        }
    }
    [[unroll]] for (uint c = 0; c < 4u; ++c) {
        // Q8_0: chunk c is bytes 8c .. 8c + 7; Q4_0: chunks 0 and 1 the low
        // nibbles of bytes 0 .. 15 (weights 0 .. 15), 2 and 3 the high ones.
        uvec4 words = B_Q8 ? uvec4(d, q[2u * c], q[2u * c + 1u], 0u)
                           : uvec4(d, q[2u * (c & 1u)], q[2u * (c & 1u) + 1u], (c >> 1) * 4u);
        if (STAGE_BF16 == 0) {
            chunks[c] = decodeQ8RawHalf(B_TYPE, words);
        } else {
            vec4 lo, hi;
            decodeQ8Raw(B_TYPE, words, lo, hi);
            chunks[c] = pack8(lo, hi);
        }
    }
}

// This lane's 4 decoded chunks (its block) into shared slot `slot`.
void storeBWordChunks(uint slot, uvec4 chunks[B_CHUNKS])
{
    uint lane = gl_SubgroupInvocationID;
    uint r = lane / (BK / 32u), kb = lane % (BK / 32u);
    uint rowSlot = slot * B_TILE + (gl_SubgroupID * BQ_ROWS + r) * SB + kb * 4u;
    [[unroll]] for (uint c = 0; c < 4u; ++c) {
        shB[rowSlot + c] = chunks[c];
    }
}

// The tile at k0 into register set S; register set S into shared slot.
#define LOAD_SET(S, k0)                                                                  \
    [[unroll]] for (uint ci = 0; ci < A_CHUNKS; ++ci) {                                  \
        fetchA(ci, k0, row0, baseA, stA##S[ci], stA2##S[ci]);                            \
    }                                                                                    \
    if (B_WORDS) {                                                                       \
        fetchBWords(k0, col0, baseB, stBw##S);                                           \
    } else {                                                                             \
        [[unroll]] for (uint ci = 0; ci < B_CHUNKS; ++ci) {                              \
            fetchB(ci, k0, col0, baseB, stB##S[ci], stB2##S[ci]);                        \
        }                                                                                \
    }
// Register set S converted in place: raw chunks into their staged form in
// stA<S> / stB<S>, B's words decoded into stB<S>. The whole set is
// converted before any of it is stored: B's words decoded a chunk at a
// time between their stores ran 3-9% slower (H100, docs/matmul-tuning.md),
// and so did converting before the barrier that ends the multiply-adds
// (Q4_0 words: 184 registers -> 214).
#define CONVERT_SET(S)                                                                   \
    [[unroll]] for (uint ci = 0; ci < A_CHUNKS; ++ci) {                                  \
        stA##S[ci] = convertA(stA##S[ci], stA2##S[ci]);                                  \
    }                                                                                    \
    if (B_WORDS) {                                                                       \
        decodeBWords(stBw##S, stB##S);                                                   \
    } else {                                                                             \
        [[unroll]] for (uint ci = 0; ci < B_CHUNKS; ++ci) {                              \
            stB##S[ci] = convertB(stB##S[ci], stB2##S[ci]);                              \
        }                                                                                \
    }
// Register set S, converted, into shared slot `slot`.
#define STORE_SET(S, slot)                                                               \
    [[unroll]] for (uint ci = 0; ci < A_CHUNKS; ++ci) {                                  \
        storeA(ci, slot, stA##S[ci]);                                                    \
    }                                                                                    \
    if (B_WORDS) {                                                                       \
        storeBWordChunks(slot, stB##S);                                                  \
    } else {                                                                             \
        [[unroll]] for (uint ci = 0; ci < B_CHUNKS; ++ci) {                              \
            storeB(ci, slot, stB##S[ci]);                                                \
        }                                                                                \
    }

// C = alpha * fragment + beta * C for the lM x lN fragment at (row, col).
void storeFragment(ACC_T fragment, uint row, uint col, uint baseC, uint warp)
{
    bool readC = p.beta != 0.0;
    uint scratchBase = warp * lM * lN;
    coopMatStoreNV(fragment, scratch, scratchBase, lN, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    for (uint e = gl_SubgroupInvocationID; e < lM * lN; e += gl_SubgroupSize) {
        uint r = row + e / lN;
        uint c = col + e % lN;
        if (r < p.m && c < p.n) {
            uint index = baseC + r * p.ldc + c;
            float value = p.alpha * uintBitsToFloat(scratch[scratchBase + e]);
            if (C_TYPE == TYPE_F32) {
                C32[index] = readC ? value + p.beta * C32[index] : value;
            } else {
                C16[index] = float16_t(readC ? value + p.beta * float(C16[index]) : value);
            }
        }
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
}

// SWIGLU_C: C = silu(alpha * gate) * (alpha * up) for the two lM x lN
// fragments of the same outputs at (row, col) of C (beta is 0).
void storeSwigluFragments(ACC_T gate, ACC_T up, uint row, uint col, uint baseC, uint warp)
{
    const uint size = lM * lN;
    uint scratchBase = warp * 2u * size;
    coopMatStoreNV(gate, scratch, scratchBase, lN, false);
    coopMatStoreNV(up, scratch, scratchBase + size, lN, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    for (uint e = gl_SubgroupInvocationID; e < size; e += gl_SubgroupSize) {
        uint r = row + e / lN;
        uint c = col + e % lN;
        if (r < p.m && c < p.n) {
            float g = p.alpha * uintBitsToFloat(scratch[scratchBase + e]);
            float value = silu(g) * (p.alpha * uintBitsToFloat(scratch[scratchBase + size + e]));
            uint index = baseC + r * p.ldc + c;
            if (C_TYPE == TYPE_F32) {
                C32[index] = value;
            } else {
                C16[index] = float16_t(value);
            }
        }
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
}

void main()
{
    uint batch = gl_WorkGroupID.z;
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;
    uint baseA = p.offsetA + batch * p.strideA;
    uint baseB = p.offsetB + batch * p.strideB;
    uint baseC = p.offsetC + batch * p.strideC;
    uint warp = gl_SubgroupID;
    uint warpRow = (warp / WARPS_N) * WM;
    uint warpCol = (warp % WARPS_N) * WN;

#define ACC_DECLARE(i, j) ACC_T acc##i##j = ACC_T(0.0);
#define ACC_ROW_DECLARE(i) FOR_N(ACC_DECLARE, i)
    FOR_M(ACC_ROW_DECLARE)

    uint tiles = (p.k + BK - 1) / BK;
    LOAD_SET(0, 0)
    CONVERT_SET(0)
    STORE_SET(0, 0)
    // Tiles 1 .. LOAD_AHEAD - 1 on their way, tile u in register set u % LOAD_AHEAD.
    if (LOAD_AHEAD > 1 && 1 < tiles && TIME_LOADS) {
        LOAD_SET(1, BK)
    }
    if (LOAD_AHEAD > 2 && 2 < tiles && TIME_LOADS) {
        LOAD_SET(2, 2 * BK)
    }
    if (LOAD_AHEAD > 3 && 3 < tiles && TIME_LOADS) {
        LOAD_SET(3, 3 * BK)
    }
    barrier();

#define A_LOAD(i)                                                                          \
    A_T a##i;                                                                              \
    if (TRANS_A == 0) {                                                                    \
        coopMatLoadNV(a##i, shA, aBase + (warpRow + i * lM) * SA + kk / 8, SA, false);     \
    } else {                                                                               \
        coopMatLoadNV(a##i, shA, aBase + kk * SA + (warpRow + i * lM) / 8, SA, true);      \
    }
#define B_LOAD(unused, j)                                                                  \
    B_T b##j;                                                                              \
    if (TRANS_B != 0 || B_QUANT) {                                                         \
        coopMatLoadNV(b##j, shB, bBase + (warpCol + j * lN) * SB + kk / 8, SB, true);      \
    } else {                                                                               \
        coopMatLoadNV(b##j, shB, bBase + kk * SB + (warpCol + j * lN) / 8, SB, false);     \
    }
#define MULTIPLY_ADD(i, j) acc##i##j = coopMatMulAddNV(a##i, b##j, acc##i##j);
#define MULTIPLY_ROW(i) FOR_N(MULTIPLY_ADD, i)
    // Tile t = t0 + S: its register set S was stored at the end of tile t -
    // 1 and now takes tile t + LOAD_AHEAD; set N = (S + 1) % LOAD_AHEAD,
    // tile t + 1, goes to shared memory after the multiply-adds. (Without
    // loads, TIMING_PART 1 and 3, every tile is the first: slot 0.)
#define TILE_STEP(S, N)                                                                    \
    if (S < LOAD_AHEAD && t0 + S < tiles) {                                                \
        uint t = t0 + S;                                                                   \
        uint slot = DOUBLE_BUFFER != 0 && TIME_LOADS ? t & 1u : 0u;                        \
        bool storeNext = t + 1 < tiles && TIME_LOADS;                                      \
        if (t + LOAD_AHEAD < tiles && TIME_LOADS) {                                        \
            LOAD_SET(S, (t + LOAD_AHEAD) * BK)                                             \
        }                                                                                  \
        uint aBase = slot * A_TILE, bBase = slot * B_TILE;                                 \
        if (TIME_MMA) {                                                                    \
            [[unroll]] for (uint kk = 0; kk < BK; kk += lK) {                              \
                FOR_M(A_LOAD)                                                              \
                FOR_J(B_LOAD)                                                              \
                FOR_M(MULTIPLY_ROW)                                                        \
            }                                                                              \
        }                                                                                  \
        /* Double buffering: the other slot was last read before the previous barrier. */ \
        uint nextSlot = DOUBLE_BUFFER != 0 ? slot ^ 1u : 0u;                               \
        if (DOUBLE_BUFFER == 0 && TIME_BARRIERS) {                                         \
            barrier();                                                                     \
        }                                                                                  \
        /* The next tile's set: N, or 0 after the last set of the round. */                \
        if (storeNext) {                                                                   \
            if (S + 1 < LOAD_AHEAD) {                                                      \
                CONVERT_SET(N)                                                             \
                STORE_SET(N, nextSlot)                                                     \
            } else {                                                                       \
                CONVERT_SET(0)                                                             \
                STORE_SET(0, nextSlot)                                                     \
            }                                                                              \
        }                                                                                  \
        if (DOUBLE_BUFFER != 0 ? TIME_BARRIERS : storeNext) {                              \
            barrier();                                                                     \
        }                                                                                  \
    }
    for (uint t0 = 0; t0 < tiles; t0 += LOAD_AHEAD) {
        TILE_STEP(0, 1)
        TILE_STEP(1, 2)
        TILE_STEP(2, 3)
        TILE_STEP(3, 0)
    }

    // Epilogue through the subgroup's scratch: bounds, alpha, beta, f16.
#define STORE_FRAGMENT(i, j) storeFragment(acc##i##j, row0 + warpRow + i * lM, col0 + warpCol + j * lN, baseC, warp);
#define STORE_ROW(i) FOR_N(STORE_FRAGMENT, i)
    // SWIGLU_C: fragment j (< FN / 2) holds the gate of the outputs whose
    // up fragment j + FN / 2 holds (bRow).
#define STORE_PAIR(i, j)                                                                   \
    if (j < FN / 2) {                                                                      \
        storeSwigluFragments(acc##i##j, ACC(i, UP_J_##j), row0 + warpRow + i * lM,        \
                             col0 / 2u + warpCol / 2u + j * lN, baseC, warp);               \
    }
#define STORE_PAIR_ROW(i) FOR_N(STORE_PAIR, i)
    if (SWIGLU_C != 0) {
        FOR_M(STORE_PAIR_ROW)
    } else {
        FOR_M(STORE_ROW)
    }
}
