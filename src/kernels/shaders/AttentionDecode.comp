#version 450
#extension GL_GOOGLE_include_directive : require
// OpAttention's decode path on subgroups ("decode-flash"), in one dispatch:
// one workgroup per (query row, KV head, split). The split count adapts to
// the context length read from `positions` on the device: each active
// workgroup takes at least MIN_CHUNK positions, at most p.splits of them
// share a row's context, and the rest return at once, so a short context
// runs one workgroup per (row, KV head) that writes `out` itself, without
// partial results or counters; a long one is merged by the last workgroup
// to finish (AttentionMerge.glsl).
//
// Inside a workgroup nothing waits for anyone until the end: LANES adjacent
// lanes of a subgroup share a K (and V) row, NV vectors of 4 values each,
// and each row slot (T / LANES of them) walks the rows slot, slot + SLOTS,
// ... of the chunk, RPT rows per pass, every K and V load of a pass issued
// before any is used, and those of the next pass before this one is
// computed (two sets of registers). Its lanes sum their dot products with shuffles, and
// keep for each of the GROUP query heads that share the KV head (each K
// and V vector is read once for all of them) a running maximum, sum of
// exponentials and unnormalized output (an online softmax). The slots of a
// subgroup are then merged with shuffles, the subgroups through shared
// memory, once.
#include "Common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HEAD_DIM = 128;
layout(constant_id = 2) const uint GROUP = 1;
layout(constant_id = 3) const uint MIN_CHUNK = 128; // fewest positions per active workgroup
layout(constant_id = 4) const uint CAUSAL = 1;
// Lanes per K/V row: a power of two, at most the subgroup size.
layout(constant_id = 5) const uint LANES = 16;
// Vectors of 4 values per lane and row: ceil(HEAD_DIM / 4 / LANES), even
// with WIDE_LOADS.
layout(constant_id = 6) const uint NV = 2;
// Rows per row slot and pass.
layout(constant_id = 7) const uint RPT = 8;
// Subgroups per workgroup (local size / subgroup size): the shared memory
// of the final merge.
layout(constant_id = 8) const uint SUBGROUPS = 4;
// f16 output (f16 caches only: AttentionOut.glsl).
layout(constant_id = 9) const uint OUT_HALF = 0;
// 1: the next pass's K and V loaded while this pass is computed (two sets
// of registers); 0: a pass's loads wait for the pass before (one set).
layout(constant_id = 10) const uint LOAD_AHEAD = 1;

const uint VECS = HEAD_DIM / 4;
const uint PARTIAL_STRIDE = VECS + 1; // vec4s per partial result: output, (m, l, 0, 0)
// Below every real score: a row slot without rows keeps it and weighs 0
// in the merges, and exp(NO_SCORE - NO_SCORE) is 1, never NaN.
const float NO_SCORE = -1e30;

layout(set = 0, binding = 0) readonly buffer Q { float q[]; };
// Raw loads: WIDE_LOADS 8 f16 values at once (uvec4), VECTOR_LOADS 4 values
// (uvec2 of f16, vec4 of f32), else 4 scalar loads. loadK(i, u) / loadV:
// the vec4 of values i + 4u .. i + 4u + 3 of the raw load at element i.
#if defined(WIDE_LOADS) && KV_TYPE == 1
layout(set = 0, binding = 1) readonly buffer K { uvec4 k[]; };
layout(set = 0, binding = 2) readonly buffer V { uvec4 v[]; };
#define RAW uvec4
const uint RAW_VECS = 2;
#define RAW_LOAD(buf, i) buf[(i) / 8]
vec4 unpackRaw(RAW w, uint u)
{
    return u == 0 ? vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y)) : vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));
}
#elif defined(VECTOR_LOADS) && KV_TYPE == 1
layout(set = 0, binding = 1) readonly buffer K { uvec2 k[]; };
layout(set = 0, binding = 2) readonly buffer V { uvec2 v[]; };
#define RAW uvec2
const uint RAW_VECS = 1;
#define RAW_LOAD(buf, i) buf[(i) / 4]
vec4 unpackRaw(RAW w, uint u) { return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y)); }
#elif defined(VECTOR_LOADS)
layout(set = 0, binding = 1) readonly buffer K { vec4 k[]; };
layout(set = 0, binding = 2) readonly buffer V { vec4 v[]; };
#define RAW vec4
const uint RAW_VECS = 1;
#define RAW_LOAD(buf, i) buf[(i) / 4]
vec4 unpackRaw(RAW w, uint u) { return w; }
#else
layout(set = 0, binding = 1) readonly buffer K { STORAGE(KV_TYPE) k[]; };
layout(set = 0, binding = 2) readonly buffer V { STORAGE(KV_TYPE) v[]; };
#define RAW vec4
const uint RAW_VECS = 1;
#define RAW_LOAD(buf, i) vec4(LOAD(KV_TYPE, buf, i), LOAD(KV_TYPE, buf, (i) + 1), LOAD(KV_TYPE, buf, (i) + 2), LOAD(KV_TYPE, buf, (i) + 3))
vec4 unpackRaw(RAW w, uint u) { return w; }
#endif
const uint NR = NV / RAW_VECS; // raw loads per lane and row

layout(set = 0, binding = 3) readonly buffer Positions { uint positions[]; };
#include "AttentionOut.glsl"
layout(set = 0, binding = 5) coherent buffer Partial { vec4 partial[]; };
layout(set = 0, binding = 6) buffer Counters { uint counters[]; };
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
    uint splits; // workgroups per (row, KV head) in the grid
    uint outRowStride;
    uint outOffset;
} p;

// Up to 64 chunks: 16 of them merged at once (32 loads in flight).
#define MERGE_UNROLL 16
#include "AttentionMerge.glsl"

// Per subgroup and head: its merged output vectors and (max, sum).
shared vec4 subgroupOut[SUBGROUPS * GROUP * VECS];
shared vec2 subgroupStats[SUBGROUPS * GROUP];

void main()
{
    uint group = flatGroup();
    uint split = group % p.splits;
    uint kvHead = (group / p.splits) % p.kvHeads;
    uint row = group / (p.splits * p.kvHeads);
    if (row >= p.rows) {
        return;
    }
    uint firstHead = kvHead * GROUP;
    // The lanes of a row are lanes of one subgroup whatever the driver's
    // numbering (the host checks that the local size is a multiple of the
    // subgroup size: every subgroup is full).
    uint linear = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
    uint lane = linear % LANES;
    uint slot = linear / LANES;
    uint slots = gl_WorkGroupSize.x / LANES;
    uint passRows = slots * RPT;
    // This lane's vectors of a row: firstVec .. firstVec + NV - 1 (those
    // past VECS, where the head size is no multiple of 4 * LANES, idle).
    uint firstVec = lane * NV;
    uint headBase = p.kvOffset + kvHead * HEAD_DIM + 4 * firstVec;

    // K and V of the RPT rows of this slot in the pass at j0, those before
    // `end` (zero after it), into KR and VR: two sets of registers, so that
    // the next pass's loads are in flight while this pass is computed.
    RAW kr[RPT * NR];
    RAW vr[RPT * NR];
    RAW kr2[RPT * NR];
    RAW vr2[RPT * NR];
#define LOAD_PASS(KR, VR, j0, end)                                                                                \
    for (uint r = 0; r < RPT; ++r) {                                                                              \
        uint j = (j0) + r * slots + slot;                                                                         \
        for (uint w = 0; w < NR; ++w) {                                                                           \
            bool inside = firstVec + w * RAW_VECS < VECS && j < (end);                                            \
            KR[r * NR + w] = inside ? RAW_LOAD(k, headBase + j * p.kvRowStride + 4 * RAW_VECS * w) : RAW(0);      \
        }                                                                                                         \
    }                                                                                                             \
    for (uint r = 0; r < RPT; ++r) {                                                                              \
        uint j = (j0) + r * slots + slot;                                                                         \
        for (uint w = 0; w < NR; ++w) {                                                                           \
            bool inside = firstVec + w * RAW_VECS < VECS && j < (end);                                            \
            VR[r * NR + w] = inside ? RAW_LOAD(v, headBase + j * p.kvRowStride + 4 * RAW_VECS * w) : RAW(0);      \
        }                                                                                                         \
    }
    // The first workgroup of a pair starts at position 0 whatever the
    // length: its first pass is loaded (up to the capacity) while the
    // position is read, and the rows past the context are masked below.
    if (split == 0) {
        LOAD_PASS(kr, vr, 0, p.kvCapacity)
    }

    // The lane's part of the GROUP scaled queries.
    vec4 qv[GROUP * NV];
    uint qBase = p.qOffset + row * p.qRowStride + firstHead * HEAD_DIM;
    for (uint h = 0; h < GROUP; ++h) {
        for (uint u = 0; u < NV; ++u) {
            uint e = qBase + h * HEAD_DIM + 4 * (firstVec + u);
            qv[h * NV + u] = firstVec + u < VECS ? vec4(q[e], q[e + 1], q[e + 2], q[e + 3]) * p.scale : vec4(0.0);
        }
    }

    uint last = positions[p.positionsOffset + (CAUSAL != 0 ? row : p.rows - 1)];
    uint contextLength = min(last, p.kvCapacity - 1) + 1;
    // Positions per active workgroup: the context over p.splits, at least
    // MIN_CHUNK, whole passes of the workgroup's rows.
    uint chunk = max(MIN_CHUNK, (contextLength + p.splits - 1) / p.splits);
    chunk = (chunk + passRows - 1) / passRows * passRows;
    uint activeSplits = (contextLength + chunk - 1) / chunk;
    if (split >= activeSplits) {
        return; // the whole workgroup: no barrier is left waiting
    }
    uint chunkStart = split * chunk;
    uint chunkEnd = min(chunkStart + chunk, contextLength);

    float m[GROUP];
    float l[GROUP];
    vec4 o[GROUP * NV];
    for (uint h = 0; h < GROUP; ++h) {
        m[h] = NO_SCORE;
        l[h] = 0.0;
        for (uint u = 0; u < NV; ++u) {
            o[h * NV + u] = vec4(0.0);
        }
    }

    // One pass: the scores of its rows, then the online softmax's update of
    // m, l and o (the loop bounds are uniform, so every lane reaches the
    // shuffles).
#define COMPUTE_PASS(KR, VR, j0)                                                                                  \
    {                                                                                                             \
        float s[RPT * GROUP];                                                                                     \
        for (uint r = 0; r < RPT; ++r) {                                                                          \
            for (uint h = 0; h < GROUP; ++h) {                                                                    \
                float acc = 0.0;                                                                                  \
                for (uint u = 0; u < NV; ++u) {                                                                   \
                    acc += dot(qv[h * NV + u], unpackRaw(KR[r * NR + u / RAW_VECS], u % RAW_VECS));               \
                }                                                                                                 \
                s[r * GROUP + h] = acc;                                                                           \
            }                                                                                                     \
        }                                                                                                         \
        for (uint offset = 1; offset < LANES; offset *= 2) {                                                      \
            for (uint i = 0; i < RPT * GROUP; ++i) {                                                              \
                s[i] += subgroupShuffleXor(s[i], offset);                                                         \
            }                                                                                                     \
        }                                                                                                         \
        for (uint h = 0; h < GROUP; ++h) {                                                                        \
            float mNew = m[h];                                                                                    \
            for (uint r = 0; r < RPT; ++r) {                                                                      \
                if ((j0) + r * slots + slot < chunkEnd) {                                                         \
                    mNew = max(mNew, s[r * GROUP + h]);                                                           \
                }                                                                                                 \
            }                                                                                                     \
            float rescale = exp(m[h] - mNew);                                                                     \
            l[h] *= rescale;                                                                                      \
            for (uint u = 0; u < NV; ++u) {                                                                       \
                o[h * NV + u] *= rescale;                                                                         \
            }                                                                                                     \
            for (uint r = 0; r < RPT; ++r) {                                                                      \
                /* Selected, not weighted by 0: a row past the context */                                         \
                /* (loaded early, see above) may hold NaN. */                                                     \
                bool inside = (j0) + r * slots + slot < chunkEnd;                                                 \
                float e = inside ? exp(s[r * GROUP + h] - mNew) : 0.0;                                            \
                l[h] += e;                                                                                        \
                for (uint u = 0; u < NV; ++u) {                                                                   \
                    o[h * NV + u] += inside ? e * unpackRaw(VR[r * NR + u / RAW_VECS], u % RAW_VECS) : vec4(0.0); \
                }                                                                                                 \
            }                                                                                                     \
            m[h] = mNew;                                                                                          \
        }                                                                                                         \
    }

    // Two passes a turn, each set of registers loaded a pass ahead of its
    // use: the loads of pass n + 1 are in flight while pass n is computed
    // (the chain of a pass's loads and arithmetic is what a decode
    // attention's time is; docs/performance.md).
    if (chunkStart != 0) {
        LOAD_PASS(kr, vr, chunkStart, chunkEnd)
    }
    if (LOAD_AHEAD == 0) {
        for (uint j0 = chunkStart; j0 < chunkEnd; j0 += passRows) {
            if (j0 != chunkStart) {
                LOAD_PASS(kr, vr, j0, chunkEnd)
            }
            COMPUTE_PASS(kr, vr, j0)
        }
    } else for (uint j0 = chunkStart; j0 < chunkEnd; j0 += 2 * passRows) {
        bool second = j0 + passRows < chunkEnd;
        if (second) {
            LOAD_PASS(kr2, vr2, j0 + passRows, chunkEnd)
        }
        COMPUTE_PASS(kr, vr, j0)
        if (second) {
            if (j0 + 2 * passRows < chunkEnd) {
                LOAD_PASS(kr, vr, j0 + 2 * passRows, chunkEnd)
            }
            COMPUTE_PASS(kr2, vr2, j0 + passRows)
        }
    }

    // The row slots of a subgroup, pairwise with shuffles (uniform bounds).
    for (uint offset = LANES; offset < gl_SubgroupSize; offset *= 2) {
        for (uint h = 0; h < GROUP; ++h) {
            float mOther = subgroupShuffleXor(m[h], offset);
            float lOther = subgroupShuffleXor(l[h], offset);
            float mNew = max(m[h], mOther);
            float a = exp(m[h] - mNew);
            float b = exp(mOther - mNew);
            l[h] = l[h] * a + lOther * b;
            for (uint u = 0; u < NV; ++u) {
                o[h * NV + u] = o[h * NV + u] * a + subgroupShuffleXor(o[h * NV + u], offset) * b;
            }
            m[h] = mNew;
        }
    }
    uint sg = gl_SubgroupID;
    if (gl_SubgroupInvocationID < LANES) {
        for (uint h = 0; h < GROUP; ++h) {
            for (uint u = 0; u < NV; ++u) {
                if (firstVec + u < VECS) {
                    subgroupOut[(sg * GROUP + h) * VECS + firstVec + u] = o[h * NV + u];
                }
            }
            if (lane == 0) {
                subgroupStats[sg * GROUP + h] = vec2(m[h], l[h]);
            }
        }
    }
    barrier();

    // The subgroups: invocation (head, vector) merges them and writes the
    // output, or this chunk's partial result.
    uint t = gl_LocalInvocationID.x;
    bool alone = activeSplits == 1;
    uint outRow = p.outOffset + row * p.outRowStride;
    uint partialBase = ((row * p.heads + firstHead) * p.splits + split) * PARTIAL_STRIDE;
    uint headStride = p.splits * PARTIAL_STRIDE;
    for (uint i = t; i < GROUP * VECS; i += gl_WorkGroupSize.x) {
        uint h = i / VECS;
        uint vec = i % VECS;
        float mMax = NO_SCORE;
        for (uint g = 0; g < gl_NumSubgroups; ++g) {
            mMax = max(mMax, subgroupStats[g * GROUP + h].x);
        }
        vec4 acc = vec4(0.0);
        float sum = 0.0;
        for (uint g = 0; g < gl_NumSubgroups; ++g) {
            vec2 stats = subgroupStats[g * GROUP + h];
            float w = exp(stats.x - mMax);
            acc += w * subgroupOut[(g * GROUP + h) * VECS + vec];
            sum += w * stats.y;
        }
        if (alone) {
            acc /= sum;
            uint e = outRow + (firstHead + h) * HEAD_DIM + 4 * vec;
            storeOut4(e, acc);
        } else {
            partial[partialBase + h * headStride + vec] = acc;
            if (vec == 0) {
                partial[partialBase + h * headStride + VECS] = vec4(mMax, sum, 0.0, 0.0);
            }
        }
    }
    if (!alone) {
        mergeIfLast(row, kvHead, activeSplits);
    }
}
