#version 450
#extension GL_GOOGLE_include_directive : require
// OpAttention's decode path, part 1: one workgroup per (query row, KV head,
// chunk of CHUNK cache positions). It handles the GROUP query heads that
// share the KV head together, so each K and V vector is read once, and
// writes for each head the chunk's unnormalized output, maximum score and
// sum of exponentials; AttentionCombine.comp merges the chunks. Chunks past
// the row's last position only write an empty result.
#include "Common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HEAD_DIM = 128;
layout(constant_id = 2) const uint GROUP = 1;
layout(constant_id = 3) const uint CHUNK = 64;
layout(constant_id = 4) const uint CAUSAL = 1;

#include "Reduce.glsl"

layout(set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(set = 0, binding = 1) readonly buffer K { STORAGE(KV_TYPE) k[]; };
layout(set = 0, binding = 2) readonly buffer V { STORAGE(KV_TYPE) v[]; };
layout(set = 0, binding = 3) readonly buffer Positions { uint positions[]; };
// [row][head][split][HEAD_DIM + 2]: output, then maximum and sum.
layout(set = 0, binding = 4) writeonly buffer Partial { float partial[]; };
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
} p;

shared float queries[GROUP * HEAD_DIM];
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
    uint chunkStart = split * CHUNK;
    uint stride = HEAD_DIM + 2;
    uint firstHead = kvHead * GROUP;
    uint out0 = ((row * p.heads + firstHead) * p.splits + split) * stride;
    if (chunkStart >= contextLength) {
        for (uint h = t; h < GROUP; h += T) {
            partial[out0 + h * p.splits * stride + HEAD_DIM] = NEG_INF;
            partial[out0 + h * p.splits * stride + HEAD_DIM + 1] = 0.0;
        }
        return;
    }
    uint chunkLength = min(CHUNK, contextLength - chunkStart);

    uint qBase = p.qOffset + row * p.qRowStride + firstHead * HEAD_DIM;
    for (uint i = t; i < GROUP * HEAD_DIM; i += T) {
        queries[i] = q[qBase + i] * p.scale;
    }
    barrier();

    // Scores: one position per invocation, the dot products of its K
    // vector with the GROUP queries.
    for (uint j = t; j < CHUNK; j += T) {
        float acc[GROUP];
        for (uint h = 0; h < GROUP; ++h) {
            acc[h] = 0.0;
        }
        if (j < chunkLength) {
            uint kBase = p.kvOffset + (chunkStart + j) * p.kvRowStride + kvHead * HEAD_DIM;
            // 4 values per step (HEAD_DIM is a multiple of 4): loads issued
            // together, not one round trip each.
            for (uint d = 0; d < HEAD_DIM; d += 4) {
                float kd[4];
                for (uint u = 0; u < 4; ++u) {
                    kd[u] = LOAD(KV_TYPE, k, kBase + d + u);
                }
                for (uint u = 0; u < 4; ++u) {
                    for (uint h = 0; h < GROUP; ++h) {
                        acc[h] += queries[h * HEAD_DIM + d + u] * kd[u];
                    }
                }
            }
        }
        for (uint h = 0; h < GROUP; ++h) {
            scores[h * CHUNK + j] = j < chunkLength ? acc[h] : NEG_INF;
        }
    }
    barrier();

    // Per head: the chunk's maximum, the exponentials and their sum.
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
        s = workgroupSum(s);
        if (t == 0) {
            partial[out0 + h * p.splits * stride + HEAD_DIM] = m;
            partial[out0 + h * p.splits * stride + HEAD_DIM + 1] = s;
        }
    }
    barrier();

    // Output: one dimension per invocation (adjacent invocations read
    // adjacent values of each V vector), summed over the chunk.
    for (uint d = t; d < HEAD_DIM; d += T) {
        float acc[GROUP];
        for (uint h = 0; h < GROUP; ++h) {
            acc[h] = 0.0;
        }
        uint vBase = p.kvOffset + chunkStart * p.kvRowStride + kvHead * HEAD_DIM + d;
        uint j = 0;
        // 8 positions per step: 8 loads in flight per invocation (one at a
        // time left the H200 waiting on memory latency).
        for (; j + 8 <= chunkLength; j += 8) {
            float vd[8];
            for (uint u = 0; u < 8; ++u) {
                vd[u] = LOAD(KV_TYPE, v, vBase + (j + u) * p.kvRowStride);
            }
            for (uint u = 0; u < 8; ++u) {
                for (uint h = 0; h < GROUP; ++h) {
                    acc[h] += scores[h * CHUNK + j + u] * vd[u];
                }
            }
        }
        for (; j < chunkLength; ++j) {
            float vd = LOAD(KV_TYPE, v, vBase + j * p.kvRowStride);
            for (uint h = 0; h < GROUP; ++h) {
                acc[h] += scores[h * CHUNK + j] * vd;
            }
        }
        for (uint h = 0; h < GROUP; ++h) {
            partial[out0 + h * p.splits * stride + d] = acc[h];
        }
    }
}
