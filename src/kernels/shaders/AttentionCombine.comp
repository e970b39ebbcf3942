#version 450
#extension GL_GOOGLE_include_directive : require
// OpAttention's decode path, part 2: one workgroup per (query row, head)
// merges the chunks of AttentionSplit.comp: out = sum_s w_s o_s / sum_s w_s l_s
// with w_s = exp(m_s - max_s m_s). The chunks' statistics are loaded in
// parallel into shared memory, and the outputs are summed 8 chunks at a
// time, so that a thread has 8 loads in flight rather than one: on the
// H200 the version with one dependent load after another was latency-bound.
#include "Common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HEAD_DIM = 128;
layout(constant_id = 2) const uint MAX_SPLITS = 256;

layout(set = 0, binding = 0) readonly buffer Partial { float partial[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float outs[]; };
layout(push_constant) uniform Push
{
    uint rows;
    uint heads;
    uint splits;
    uint outRowStride;
    uint outOffset;
} p;

shared float weights[MAX_SPLITS];
shared float sharedMax;
shared float sharedInverse;

void main()
{
    uint group = flatGroup();
    if (group >= p.rows * p.heads) {
        return;
    }
    uint row = group / p.heads;
    uint head = group % p.heads;
    uint stride = HEAD_DIM + 2;
    uint base = group * p.splits * stride;
    uint t = gl_LocalInvocationID.x;
    for (uint s = t; s < p.splits; s += gl_WorkGroupSize.x) {
        weights[s] = partial[base + s * stride + HEAD_DIM];
    }
    barrier();
    if (t == 0) {
        float m = NEG_INF;
        for (uint s = 0; s < p.splits; ++s) {
            m = max(m, weights[s]);
        }
        sharedMax = m;
    }
    barrier();
    float m = sharedMax;
    for (uint s = t; s < p.splits; s += gl_WorkGroupSize.x) {
        float ms = weights[s];
        weights[s] = ms == NEG_INF ? 0.0 : exp(ms - m);
    }
    barrier();
    if (t == 0) {
        float total = 0.0;
        for (uint s = 0; s < p.splits; ++s) {
            total += weights[s] * partial[base + s * stride + HEAD_DIM + 1];
        }
        sharedInverse = 1.0 / total;
    }
    barrier();
    float inverse = sharedInverse;
    uint outBase = p.outOffset + row * p.outRowStride + head * HEAD_DIM;
    for (uint d = t; d < HEAD_DIM; d += gl_WorkGroupSize.x) {
        float acc = 0.0;
        uint s = 0;
        for (; s + 8 <= p.splits; s += 8) {
            float o[8];
            for (uint u = 0; u < 8; ++u) {
                o[u] = partial[base + (s + u) * stride + d];
            }
            for (uint u = 0; u < 8; ++u) {
                // Chunks past the row's end wrote no output: weight 0.
                float w = weights[s + u];
                acc += w == 0.0 ? 0.0 : w * o[u];
            }
        }
        for (; s < p.splits; ++s) {
            float w = weights[s];
            acc += w == 0.0 ? 0.0 : w * partial[base + s * stride + d];
        }
        outs[outBase + d] = acc * inverse;
    }
}
