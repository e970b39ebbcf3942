#version 450
#extension GL_GOOGLE_include_directive : require
// OpAttention's decode path, part 2: one workgroup per (query row, head)
// merges the chunks of AttentionSplit.comp: out = sum_s w_s o_s / sum_s w_s l_s
// with w_s = exp(m_s - max_s m_s).
#include "Common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HEAD_DIM = 128;

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
    float m = NEG_INF;
    for (uint s = 0; s < p.splits; ++s) {
        m = max(m, partial[base + s * stride + HEAD_DIM]);
    }
    float total = 0.0;
    for (uint s = 0; s < p.splits; ++s) {
        float ms = partial[base + s * stride + HEAD_DIM];
        total += ms == NEG_INF ? 0.0 : exp(ms - m) * partial[base + s * stride + HEAD_DIM + 1];
    }
    float inverse = 1.0 / total;
    uint outBase = p.outOffset + row * p.outRowStride + head * HEAD_DIM;
    for (uint d = gl_LocalInvocationID.x; d < HEAD_DIM; d += gl_WorkGroupSize.x) {
        float acc = 0.0;
        for (uint s = 0; s < p.splits; ++s) {
            float ms = partial[base + s * stride + HEAD_DIM];
            if (ms != NEG_INF) {
                acc += exp(ms - m) * partial[base + s * stride + d];
            }
        }
        outs[outBase + d] = acc * inverse;
    }
}
