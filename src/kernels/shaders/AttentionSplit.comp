#version 450
#extension GL_GOOGLE_include_directive : require
// OpAttention's decode path, in one dispatch: one workgroup per (query row,
// KV head, chunk of CHUNK cache positions). It handles the GROUP query heads
// that share the KV head together, so each K and V vector is read once, and
// writes for each head the chunk's unnormalized output, maximum score and
// sum of exponentials into `partial`. The last workgroup of a (row, KV head)
// to finish (an atomic counter per pair) merges the chunks:
//   out = sum_s w_s o_s / sum_s w_s l_s,  w_s = exp(m_s - max_s m_s),
// and sets the counter back to 0, so that the recorded operation can run
// again. Chunks past the row's last position do nothing at all: the number
// of chunks a pair waits for is the number that hold a position.
//
// Reads: a K row (HEAD_DIM values) is read by K_LANES adjacent invocations
// of one subgroup, 4 values each per load (uvec2 of f16 or vec4 of f32 with
// VECTOR_LOADS, where the cache's offset and row stride are multiples of 4;
// 4 scalar loads without), so that a warp's load covers whole contiguous
// segments of rows; the lanes' dot products are summed with subgroup
// shuffles (SUBGROUP). Without SUBGROUP, K_LANES is 1: one invocation per K
// row. V rows are read 4 values per invocation too, HEAD_DIM / 4 adjacent
// invocations per row, V_SLOTS rows at a time.
#include "Common.glsl"
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HEAD_DIM = 128;
layout(constant_id = 2) const uint GROUP = 1;
layout(constant_id = 3) const uint CHUNK = 64;
layout(constant_id = 4) const uint CAUSAL = 1;
// Invocations per K row: a power of two, at most the subgroup size (1
// without SUBGROUP).
layout(constant_id = 5) const uint K_LANES = 1;
// K vectors per invocation and row (HEAD_DIM / 4 / K_LANES, rounded up),
// loaded K_BATCH at a time for K_ROWS rows together: K_ROWS * K_BATCH loads
// in flight per invocation.
layout(constant_id = 6) const uint K_VECS = 32;
layout(constant_id = 7) const uint K_BATCH = 8;
layout(constant_id = 8) const uint K_ROWS = 1;
// V rows summed side by side: local size / (HEAD_DIM / 4).
layout(constant_id = 9) const uint V_SLOTS = 1;
// f16 output (f16 caches only: AttentionOut.glsl).
layout(constant_id = 10) const uint OUT_HALF = 0;

#include "Reduce.glsl"

const uint VECS = HEAD_DIM / 4;       // vectors of 4 values per row
const uint V_UNROLL = 16;             // V loads in flight per invocation
const uint PARTIAL_STRIDE = VECS + 1; // vec4s per partial result: output, (m, l, 0, 0)

layout(set = 0, binding = 0) readonly buffer Q { float q[]; };
#ifdef VECTOR_LOADS
#if KV_TYPE == 1
layout(set = 0, binding = 1) readonly buffer K { uvec2 k[]; };
layout(set = 0, binding = 2) readonly buffer V { uvec2 v[]; };
#define DEFINE_LOAD4(name, buf) \
    vec4 name(uint i) \
    { \
        uvec2 w = buf[i / 4]; \
        return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y)); \
    }
#else
layout(set = 0, binding = 1) readonly buffer K { vec4 k[]; };
layout(set = 0, binding = 2) readonly buffer V { vec4 v[]; };
#define DEFINE_LOAD4(name, buf) \
    vec4 name(uint i) { return buf[i / 4]; }
#endif
#else
layout(set = 0, binding = 1) readonly buffer K { STORAGE(KV_TYPE) k[]; };
layout(set = 0, binding = 2) readonly buffer V { STORAGE(KV_TYPE) v[]; };
#define DEFINE_LOAD4(name, buf) \
    vec4 name(uint i) \
    { \
        return vec4(LOAD(KV_TYPE, buf, i), LOAD(KV_TYPE, buf, i + 1), LOAD(KV_TYPE, buf, i + 2), \
                    LOAD(KV_TYPE, buf, i + 3)); \
    }
#endif
// loadK4(i), loadV4(i): cache values i..i+3 as f32.
DEFINE_LOAD4(loadK4, k)
DEFINE_LOAD4(loadV4, v)
layout(set = 0, binding = 3) readonly buffer Positions { uint positions[]; };
#include "AttentionOut.glsl"
// [row][head][split][PARTIAL_STRIDE]. Coherent: written by one workgroup,
// read by another within the dispatch (see the merge below).
layout(set = 0, binding = 5) coherent buffer Partial { vec4 partial[]; };
// [row][kvHead]: chunks finished so far; 0 between dispatches.
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
    uint splits;
    uint outRowStride;
    uint outOffset;
} p;

#include "AttentionMerge.glsl"

// The GROUP scaled queries while scores are computed, then the GROUP
// outputs while the V_SLOTS partial sums are added up.
shared vec4 headVectors[GROUP * VECS];
shared float scores[GROUP * CHUNK];

void main()
{
    uint group = flatGroup();
    uint split = group % p.splits;
    uint kvHead = (group / p.splits) % p.kvHeads;
    uint row = group / (p.splits * p.kvHeads);
    if (row >= p.rows) {
        return;
    }
    uint t = gl_LocalInvocationID.x;
    uint T = gl_WorkGroupSize.x;
    uint last = positions[p.positionsOffset + (CAUSAL != 0 ? row : p.rows - 1)];
    uint contextLength = min(last, p.kvCapacity - 1) + 1;
    uint activeSplits = (contextLength + CHUNK - 1) / CHUNK;
    if (split >= activeSplits) {
        return; // the whole workgroup: no barrier is left waiting
    }
    uint chunkStart = split * CHUNK;
    uint chunkLength = min(CHUNK, contextLength - chunkStart);
    uint firstHead = kvHead * GROUP;

    // Invocation `linear` of the workgroup is lane `linear % K_LANES` of K
    // row slot `linear / K_LANES`; with subgroups the index is built from
    // the subgroup's own numbering, so that the K_LANES lanes of a row are
    // lanes of one subgroup whatever the driver's layout (the host checks
    // that the local size is a multiple of the subgroup size: every
    // subgroup is full).
#ifdef SUBGROUP
    uint linear = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
#else
    uint linear = t;
#endif
    uint lane = linear % K_LANES;
    uint rowSlot = linear / K_LANES;
    uint rowSlots = T / K_LANES;
    uint kHeadBase = p.kvOffset + chunkStart * p.kvRowStride + kvHead * HEAD_DIM;
    // K vectors b0..b0 + K_BATCH - 1 of this lane in the K_ROWS rows of
    // the pass at j0 (zero past the chunk's end or the row's).
    vec4 kv[K_ROWS * K_BATCH];
#define LOAD_K_BATCH(j0, b0)                                                                               \
    for (uint r = 0; r < K_ROWS; ++r) {                                                                    \
        uint j = (j0) + r * rowSlots + rowSlot;                                                            \
        for (uint b = 0; b < K_BATCH; ++b) {                                                               \
            uint vec = lane + ((b0) + b) * K_LANES;                                                        \
            bool inside = j < chunkLength && (b0) + b < K_VECS && vec < VECS;                              \
            kv[r * K_BATCH + b] = inside ? loadK4(kHeadBase + j * p.kvRowStride + 4 * vec) : vec4(0.0); \
        }                                                                                                  \
    }
    // The first K loads go out before the queries are waited for.
    LOAD_K_BATCH(0, 0)

    uint qBase = p.qOffset + row * p.qRowStride + firstHead * HEAD_DIM;
    for (uint i = t; i < GROUP * VECS; i += T) {
        uint e = qBase + 4 * i;
        headVectors[i] = vec4(q[e], q[e + 1], q[e + 2], q[e + 3]) * p.scale;
    }
    barrier();

    // Scores. The loop bounds are uniform, so every lane reaches the
    // shuffles.
    for (uint j0 = 0; j0 < chunkLength; j0 += rowSlots * K_ROWS) {
        float acc[K_ROWS * GROUP];
        for (uint i = 0; i < K_ROWS * GROUP; ++i) {
            acc[i] = 0.0;
        }
        for (uint b0 = 0; b0 < K_VECS; b0 += K_BATCH) {
            if (j0 != 0 || b0 != 0) {
                LOAD_K_BATCH(j0, b0)
            }
            for (uint b = 0; b < K_BATCH; ++b) {
                uint vec = min(lane + (b0 + b) * K_LANES, VECS - 1); // a zero K vector where past the end
                for (uint h = 0; h < GROUP; ++h) {
                    vec4 qh = headVectors[h * VECS + vec];
                    for (uint r = 0; r < K_ROWS; ++r) {
                        acc[r * GROUP + h] += dot(qh, kv[r * K_BATCH + b]);
                    }
                }
            }
        }
#ifdef SUBGROUP
        for (uint offset = 1; offset < K_LANES; offset *= 2) {
            for (uint i = 0; i < K_ROWS * GROUP; ++i) {
                acc[i] += subgroupShuffleXor(acc[i], offset);
            }
        }
#endif
        if (lane == 0) {
            for (uint r = 0; r < K_ROWS; ++r) {
                uint j = j0 + r * rowSlots + rowSlot;
                if (j < chunkLength) {
                    for (uint h = 0; h < GROUP; ++h) {
                        scores[h * CHUNK + j] = acc[r * GROUP + h];
                    }
                }
            }
        }
    }

    // Output: invocation (vector `vec`, slot) sums the positions slot,
    // slot + V_SLOTS, ... of the chunk, V_UNROLL loads at a time; the first
    // V_UNROLL go out before the softmax, which they do not depend on.
    uint vec = t % VECS;
    uint slot = t / VECS;
    uint vBase = kHeadBase + 4 * vec;
    uint vStep = V_UNROLL * V_SLOTS;
    vec4 vv[V_UNROLL];
#define LOAD_V_BATCH(j0)                                                                     \
    for (uint u = 0; u < V_UNROLL; ++u) {                                                    \
        uint j = (j0) + u * V_SLOTS;                                                         \
        vv[u] = slot < V_SLOTS && j < chunkLength ? loadV4(vBase + j * p.kvRowStride) : vec4(0.0); \
    }
    LOAD_V_BATCH(slot)
    barrier(); // the scores

    // Per head: the chunk's maximum, the exponentials and their sum.
    float maxima[GROUP];
    float sums[GROUP];
    for (uint h = 0; h < GROUP; ++h) {
        float m = NEG_INF;
        for (uint j = t; j < chunkLength; j += T) {
            m = max(m, scores[h * CHUNK + j]);
        }
        m = workgroupMax(m);
        float s = 0.0;
        for (uint j = t; j < chunkLength; j += T) {
            float e = exp(scores[h * CHUNK + j] - m);
            scores[h * CHUNK + j] = e;
            s += e;
        }
        maxima[h] = m;
        sums[h] = workgroupSum(s); // its barriers also publish the exponentials
    }

    vec4 out4[GROUP];
    for (uint h = 0; h < GROUP; ++h) {
        out4[h] = vec4(0.0);
    }
    if (slot < V_SLOTS) {
        for (uint j0 = slot; j0 < chunkLength; j0 += vStep) {
            if (j0 != slot) {
                LOAD_V_BATCH(j0)
            }
            for (uint u = 0; u < V_UNROLL; ++u) {
                uint j = min(j0 + u * V_SLOTS, chunkLength - 1); // a zero V vector where past the end
                for (uint h = 0; h < GROUP; ++h) {
                    out4[h] += scores[h * CHUNK + j] * vv[u];
                }
            }
        }
    }
    // The slots' sums, added into headVectors one slot after another (the
    // queries there were last read before the barriers above).
    for (uint s = 0; s < V_SLOTS; ++s) {
        if (slot == s) {
            for (uint h = 0; h < GROUP; ++h) {
                headVectors[h * VECS + vec] = s == 0 ? out4[h] : headVectors[h * VECS + vec] + out4[h];
            }
        }
        barrier();
    }
    uint partialBase = ((row * p.heads + firstHead) * p.splits + split) * PARTIAL_STRIDE;
    uint headStride = p.splits * PARTIAL_STRIDE;
    for (uint i = t; i < GROUP * VECS; i += T) {
        partial[partialBase + (i / VECS) * headStride + i % VECS] = headVectors[i];
    }
    if (t == 0) {
        for (uint h = 0; h < GROUP; ++h) {
            partial[partialBase + h * headStride + VECS] = vec4(maxima[h], sums[h], 0.0, 0.0);
        }
    }

    mergeIfLast(row, kvHead, activeSplits);
}
