#version 450
// OpAttention's prefill path on cooperative matrices (tensor cores): a
// flash-attention kernel with S = Q K^T and O += P V as f16 x f16 -> f32
// multiply-adds and the online softmax in SIMT on shared memory. Written
// with GL_NV_cooperative_matrix (what glslang 12 knows); the KHR form comes
// from src/kernels/CoopmatRewrite.cpp, as for MatMulCoopmat.comp.
//
// One workgroup per (tile of BM "pairs", KV head), BM = 16 * WARPS: pair
// p = row * GROUP + h is query row `row` of head kvHead * GROUP + h, so the
// query heads of a GQA group share each K/V tile the workgroup loads. Each
// subgroup owns 16 pairs. The cache is walked in tiles of BC positions up
// to the workgroup's last position (causal tiles beyond it are skipped; a
// subgroup whose pairs all end before a tile skips its arithmetic):
//   1. K and V of the tile go to shared memory as f16 (16-byte rows plus
//      one chunk of padding against bank conflicts);
//   2. each subgroup multiplies the tile's K by its Q^T fragments
//      (registers, loaded once, pre-scaled by scale * log2(e)) into BC / 16
//      accumulators of S^T and stores them transposed (S) to its scratch in
//      shared memory: K's fragments load row-major, where S = Q K^T would
//      load K^T column-major (2.7% slower on the H100);
//   3. ROW_LANES lanes per pair read the row's scores a vector of 4 at a
//      time (lane i of a row the vectors i, i + ROW_LANES, ...: the row
//      strides below keep a load of the subgroup free of bank conflicts),
//      mask them (the tile that crosses the row's last position only), find
//      the new maximum, turn them into exp2(s - max) as f16 P (4 values a
//      store) and keep the row's sum (shuffles combine the lanes of a row);
//   4. the output accumulators are rescaled by exp2(oldMax - newMax) and
//      P (16 x BC) times V (BC x HEAD_DIM) is added to them.
// Accumulator elements are opaque, but every matrix of one type maps its
// elements to invocations alike: `rowOf`, loaded from a matrix whose every
// element is its row index, tells each invocation the row of each of its
// elements, so rows are rescaled in registers.
//
// Fragments are separate variables written out by the preprocessor (one
// compiled variant per HEAD_DIM and BC): NVIDIA's compiler puts arrays of
// cooperative matrices in local memory (docs/matmul-tuning.md).
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#include "Common.glsl"

#if !defined(HEAD_DIM) || !defined(BC)
#error "compile with HEAD_DIM (64 or 128) and BC (32 or 64): the fragments per subgroup"
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint WARPS = 4;
layout(constant_id = 2) const uint GROUP = 1;
layout(constant_id = 3) const uint CAUSAL = 1;
// Distinct constants for the three matrix types' dimensions (all 16), so
// that A, B and accumulators are distinct types (CoopmatRewrite needs it).
layout(constant_id = 4) const uint lM = 16;
layout(constant_id = 5) const uint lN = 16;
layout(constant_id = 6) const uint lK = 16;
// Lanes per row in the softmax: subgroup size / 16, at least 1 (smaller
// subgroups take the rows in turns).
layout(constant_id = 7) const uint ROW_LANES = 2;
layout(constant_id = 8) const uint VEC_KV = 1;    // cache rows start at multiples of 8 elements
// Loads the next K/V tile into registers while the current one is used.
layout(constant_id = 9) const uint PREFETCH = 0;
// f16 output (AttentionOut.glsl).
layout(constant_id = 10) const uint OUT_HALF = 0;

layout(set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(set = 0, binding = 1) readonly buffer K16 { float16_t k16[]; };
layout(set = 0, binding = 1) readonly buffer K128 { uvec4 k128[]; };
layout(set = 0, binding = 2) readonly buffer V16 { float16_t v16[]; };
layout(set = 0, binding = 2) readonly buffer V128 { uvec4 v128[]; };
layout(set = 0, binding = 3) readonly buffer Positions { uint positions[]; };
#include "AttentionOut.glsl"
layout(push_constant) uniform Push
{
    uint rows;
    uint heads;
    uint kvHeads;
    uint kvCapacity;
    float scale;
    uint kvRowStride;
    uint kvOffset;
    uint qRowStride;
    uint qOffset;
    uint positionsOffset;
    uint outRowStride;
    uint outOffset;
} p;

const uint WG = gl_WorkGroupSize.x;
const uint BM = 16 * WARPS;
const uint CHUNKS = HEAD_DIM / 8;      // 16-byte chunks per K or V row
const uint SKV = CHUNKS + 1;           // shared row stride, in chunks
const uint KV_CHUNKS = BC * CHUNKS / WG;
// K then V of a tile; before the loop, the workgroup's Q (BM rows).
const uint KV_ROWS = 2 * BC > BM ? 2 * BC : BM;
shared uvec4 tileKV[KV_ROWS * SKV];
// Scores (f32) in vectors of 4, a row every SV vectors, and probabilities
// (f16) in 4s, a row every SPW of them. With 2 lanes a row (32-wide
// subgroups), lane i of a row takes the vectors i, i + 2, ...: the 8 lanes
// of a 16-byte phase (rows r .. r + 3) hit distinct banks where SV is 2
// modulo 8, and the 16 lanes of an 8-byte phase (rows r .. r + 7) where SPW
// is 2 modulo 16.
const uint SV = BC / 4 + 2;
const uint SPW = (BC / 4 + 13) / 16 * 16 + 2;
const uint ROW_VECS = BC / 4 / ROW_LANES; // score vectors per lane and row
shared uvec4 scores[BM * SV]; // (uvec4: what glslang 12 loads matrices from)
shared uvec2 probs[BM * SPW];
shared float rowScale[BM];
shared float rowMax[BM];
shared float rowSum[BM];
shared int rowLimit[BM];

void subgroupSync()
{
    subgroupMemoryBarrierShared();
    subgroupBarrier();
}

// The matrix operations by the arrays they read or write: tileKV (16-byte
// chunks of 8 f16), probs (8-byte words of 4 f16), scores (16-byte words of
// 4 f32); offsets and strides count the arrays' elements.
#define ACC_T fcoopmatNV<32, gl_ScopeSubgroup, lM, lN>
#define A_T fcoopmatNV<16, gl_ScopeSubgroup, lM, lK>
#define B_T fcoopmatNV<16, gl_ScopeSubgroup, lK, lN>
#define LOAD_KV(m, offset, stride, columnMajor) coopMatLoadNV(m, tileKV, offset, stride, columnMajor)
#define LOAD_P(m, offset, stride) coopMatLoadNV(m, probs, offset, stride, false)
#define LOAD_S(m, offset, stride) coopMatLoadNV(m, scores, offset, stride, false)
#define STORE_S(m, offset, stride, columnMajor) coopMatStoreNV(m, scores, offset, stride, columnMajor)

// FOR_D(X): X(0) ... X(HEAD_DIM / 16 - 1); FOR_C(X): X(0) ... X(BC / 16 - 1).
#if HEAD_DIM == 64
#define FOR_D(X) X(0) X(1) X(2) X(3)
#elif HEAD_DIM == 128
#define FOR_D(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#else
#error "HEAD_DIM must be 64 or 128"
#endif
#if BC == 32
#define FOR_C(X) X(0) X(1)
#elif BC == 64
#define FOR_C(X) X(0) X(1) X(2) X(3)
#else
#error "BC must be 32 or 64"
#endif

uvec4 stK[PREFETCH != 0 ? KV_CHUNKS : 1];
uvec4 stV[PREFETCH != 0 ? KV_CHUNKS : 1];

// 8 cache values of position `position` from chunk `part` of the KV head;
// zeros past `last` (never attended to; unwritten rows may hold NaN).
uvec4 cacheChunk(bool isV, uint position, uint part, uint kvHead, int last)
{
    if (int(position) > last) {
        return uvec4(0);
    }
    uint base = p.kvOffset + position * p.kvRowStride + kvHead * HEAD_DIM + part * 8;
    if (VEC_KV != 0) {
        return isV ? v128[base >> 3] : k128[base >> 3];
    }
    uvec4 chunk;
    for (uint i = 0; i < 4; ++i) {
        f16vec2 pair = isV ? f16vec2(v16[base + 2 * i], v16[base + 2 * i + 1])
                           : f16vec2(k16[base + 2 * i], k16[base + 2 * i + 1]);
        chunk[i] = packFloat2x16(pair);
    }
    return chunk;
}

void loadTile(uint j0, uint kvHead, int last)
{
    uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint i = 0; i < KV_CHUNKS; ++i) {
        uint c = tid + i * WG;
        stK[PREFETCH != 0 ? i : 0] = cacheChunk(false, j0 + c / CHUNKS, c % CHUNKS, kvHead, last);
        stV[PREFETCH != 0 ? i : 0] = cacheChunk(true, j0 + c / CHUNKS, c % CHUNKS, kvHead, last);
        if (PREFETCH == 0) {
            tileKV[(c / CHUNKS) * SKV + c % CHUNKS] = stK[0];
            tileKV[(BC + c / CHUNKS) * SKV + c % CHUNKS] = stV[0];
        }
    }
}

void storeTile()
{
    uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint i = 0; i < KV_CHUNKS; ++i) {
        uint c = tid + i * WG;
        tileKV[(c / CHUNKS) * SKV + c % CHUNKS] = stK[i];
        tileKV[(BC + c / CHUNKS) * SKV + c % CHUNKS] = stV[i];
    }
}

void main()
{
    uint groupIndex = flatGroup();
    uint pairs = p.rows * GROUP;
    uint tiles = (pairs + BM - 1) / BM;
    if (groupIndex >= tiles * p.kvHeads) {
        return;
    }
    uint kvHead = groupIndex % p.kvHeads;
    // The longest (last) tiles first: the short ones fill the tail.
    uint pair0 = (tiles - 1 - groupIndex / p.kvHeads) * BM;
    uint tid = gl_LocalInvocationID.x;
    uint warp = gl_SubgroupID;
    uint lane = gl_SubgroupInvocationID;
    uint headBase = kvHead * GROUP;

    // Q of the tile, scaled and rounded to f16, into the K/V rows.
    float qScale = p.scale * 1.4426950408889634;
    for (uint c = tid; c < BM * CHUNKS; c += WG) {
        uint m = c / CHUNKS, part = c % CHUNKS;
        uint pair = pair0 + m;
        uvec4 chunk = uvec4(0);
        if (pair < pairs) {
            uint base = p.qOffset + (pair / GROUP) * p.qRowStride + (headBase + pair % GROUP) * HEAD_DIM + part * 8;
            for (uint i = 0; i < 4; ++i) {
                chunk[i] = packHalf2x16(vec2(q[base + 2 * i], q[base + 2 * i + 1]) * qScale);
            }
        }
        tileKV[m * SKV + part] = chunk;
    }
    for (uint m = tid; m < BM; m += WG) {
        uint pair = pair0 + m;
        int limit = -1;
        if (pair < pairs) {
            uint last = positions[p.positionsOffset + (CAUSAL != 0 ? pair / GROUP : p.rows - 1)];
            limit = int(min(last, p.kvCapacity - 1));
        }
        rowLimit[m] = limit;
        rowMax[m] = NEG_INF;
        rowSum[m] = 0.0;
    }
    // Row indices of the accumulator type, through this subgroup's scores.
    uint warpRow = warp * 16;
    for (uint e = lane; e < 16 * 16; e += gl_SubgroupSize) {
        scores[(warpRow + e / 16) * SV + (e % 16) / 4][e % 4] = floatBitsToUint(float(e / 16));
    }
    barrier();
    ACC_T rowOf;
    LOAD_S(rowOf, warpRow * SV, SV);
    // Q^T (HEAD_DIM x 16 pairs): the staged Q rows read column-major.
#define Q_LOAD(d) B_T q##d; LOAD_KV(q##d, warpRow * SKV + d * 2, SKV, true);
    FOR_D(Q_LOAD)
    int lastPosition = -1;
    int warpLast = -1;
    for (uint m = 0; m < BM; ++m) {
        lastPosition = max(lastPosition, rowLimit[m]);
        if (m / 16 == warp) {
            warpLast = max(warpLast, rowLimit[m]);
        }
    }
    // The softmax's rows: ROW_LANES lanes each, in turns of `rowStep` rows.
    uint rowStep = gl_SubgroupSize / ROW_LANES;
    uint myPart = lane % ROW_LANES;
    barrier(); // Q read before the first tile overwrites it

#define O_DECLARE(d) ACC_T o##d = ACC_T(0.0);
    FOR_D(O_DECLARE)

    if (PREFETCH != 0 && lastPosition >= 0) {
        loadTile(0, kvHead, lastPosition);
    }
    for (int j0 = 0; j0 <= lastPosition; j0 += int(BC)) {
        if (PREFETCH != 0) {
            storeTile();
        } else {
            loadTile(uint(j0), kvHead, lastPosition);
        }
        barrier();
        if (PREFETCH != 0 && j0 + int(BC) <= lastPosition) {
            loadTile(uint(j0) + BC, kvHead, lastPosition);
        }
        if (j0 <= warpLast) {
            // S^T = K Q^T, positions c * 16 .. c * 16 + 15 in s<c>, stored
            // column-major: S's rows of the subgroup's pairs.
#define S_DECLARE(c) ACC_T s##c = ACC_T(0.0);
            FOR_C(S_DECLARE)
#define S_MULTIPLY(c)                                                                   \
            {                                                                           \
                A_T kc;                                                                 \
                LOAD_KV(kc, (c * 16) * SKV + kk * 2, SKV, false);                       \
                s##c = coopMatMulAddNV(kc, qk, s##c);                                   \
            }
#define S_STEP(d)                                                                       \
            {                                                                           \
                const uint kk = d;                                                      \
                B_T qk = q##d;                                                          \
                FOR_C(S_MULTIPLY)                                                       \
            }
            FOR_D(S_STEP)
#define S_STORE(c) STORE_S(s##c, warpRow * SV + c * 4, SV, true);
            FOR_C(S_STORE)
            subgroupSync();

            // Online softmax, the row's vectors of 4 interleaved over its
            // lanes, each read once.
            for (uint row = warpRow + lane / ROW_LANES; row < warpRow + 16; row += rowStep) {
                int limit = rowLimit[row];
                // Masked only where the tile reaches past the row's last
                // position (selected, not weighted: unwritten rows may hold
                // NaN).
                bool whole = j0 + int(BC) - 1 <= limit;
                vec4 sv[ROW_VECS];
                float tileMax = NEG_INF;
                [[unroll]] for (uint i = 0; i < ROW_VECS; ++i) {
                    uint v = myPart + i * ROW_LANES;
                    vec4 s = uintBitsToFloat(scores[row * SV + v]);
                    if (!whole) {
                        int column = j0 + int(4 * v);
                        s = vec4(column <= limit ? s.x : NEG_INF, column + 1 <= limit ? s.y : NEG_INF,
                                 column + 2 <= limit ? s.z : NEG_INF, column + 3 <= limit ? s.w : NEG_INF);
                    }
                    sv[i] = s;
                    tileMax = max(tileMax, max(max(s.x, s.y), max(s.z, s.w)));
                }
                [[unroll]] for (uint offset = 1; offset < ROW_LANES; offset *= 2) {
                    tileMax = max(tileMax, subgroupShuffleXor(tileMax, offset));
                }
                float oldMax = rowMax[row];
                float newMax = max(oldMax, tileMax);
                // Rows with nothing to attend to yet keep 0 weights and scale
                // 1 (exp2 of -inf is 0).
                float base = newMax == NEG_INF ? 0.0 : newMax;
                float rescale = oldMax == NEG_INF ? 1.0 : exp2(oldMax - base);
                float sum = 0.0;
                [[unroll]] for (uint i = 0; i < ROW_VECS; ++i) {
                    vec4 e = exp2(sv[i] - base);
                    probs[row * SPW + myPart + i * ROW_LANES] = uvec2(packHalf2x16(e.xy), packHalf2x16(e.zw));
                    sum += (e.x + e.y) + (e.z + e.w);
                }
                [[unroll]] for (uint offset = 1; offset < ROW_LANES; offset *= 2) {
                    sum += subgroupShuffleXor(sum, offset);
                }
                subgroupSync(); // every lane of the row has read rowMax
                if (myPart == 0) {
                    rowSum[row] = rowSum[row] * rescale + sum;
                    rowMax[row] = newMax;
                    rowScale[row] = rescale;
                }
            }
            subgroupSync();

            // O = O * rescale (per row) + P V.
            [[unroll]] for (int i = 0; i < rowOf.length(); ++i) {
                float factor = rowScale[warpRow + uint(rowOf[i])];
#define O_RESCALE(d) o##d[i] *= factor;
                FOR_D(O_RESCALE)
            }
#define O_MULTIPLY(d)                                                                   \
            {                                                                           \
                B_T vb;                                                                 \
                LOAD_KV(vb, (BC + kk) * SKV + d * 2, SKV, false);                       \
                o##d = coopMatMulAddNV(pk, vb, o##d);                                           \
            }
#define O_STEP(c)                                                                       \
            {                                                                           \
                const uint kk = c * 16;                                                 \
                A_T pk;                                                                 \
                LOAD_P(pk, warpRow * SPW + kk / 4, SPW);                                \
                FOR_D(O_MULTIPLY)                                                       \
            }
            FOR_C(O_STEP)
        }
        barrier(); // the tile and the scratch are read before the next tile
    }

    // O / sum, out through the subgroup's scores (16 x 16 at a time).
    for (uint row = warpRow + lane; row < warpRow + 16; row += gl_SubgroupSize) {
        float sum = rowSum[row];
        rowScale[row] = sum > 0.0 ? 1.0 / sum : 0.0;
    }
    subgroupSync();
    [[unroll]] for (int i = 0; i < rowOf.length(); ++i) {
        float factor = rowScale[warpRow + uint(rowOf[i])];
        FOR_D(O_RESCALE)
    }
#define O_STORE(d)                                                                      \
    STORE_S(o##d, warpRow * SV, SV, false);                                             \
    subgroupSync();                                                                     \
    for (uint e = lane; e < 16 * 16; e += gl_SubgroupSize) {                            \
        uint pair = pair0 + warpRow + e / 16;                                           \
        if (pair < pairs) {                                                             \
            uint index = p.outOffset + (pair / GROUP) * p.outRowStride +                \
                         (headBase + pair % GROUP) * HEAD_DIM + d * 16 + e % 16;        \
            storeOut(index, uintBitsToFloat(scores[(warpRow + e / 16) * SV + (e % 16) / 4][e % 4])); \
        }                                                                               \
    }                                                                                   \
    subgroupSync();
    FOR_D(O_STORE)
}
