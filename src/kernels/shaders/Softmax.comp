#version 450
#extension GL_GOOGLE_include_directive : require
// OpSoftmax: one workgroup per row. Pass 1 keeps a running maximum and a
// sum of exponentials rescaled to it per invocation (one read of the row),
// combined over the workgroup; pass 2 reads the row again (from cache for
// rows of up to a few MiB) and writes the normalized values.
#include "Common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint CAUSAL = 0;

#include "Reduce.glsl"

layout(set = 0, binding = 0) readonly buffer X { STORAGE(TYPE) x[]; };
layout(set = 0, binding = 1) buffer Y { STORAGE(TYPE) y[]; };
layout(push_constant) uniform Push
{
    uint rows;
    uint cols;
    float scale;
    uint rowsPerMatrix;
    uint causalShift;
    uint xRowStride;
    uint yRowStride;
    uint xOffset;
    uint yOffset;
} p;

void main()
{
    uint row = flatGroup();
    if (row >= p.rows) {
        return;
    }
    uint xBase = p.xOffset + row * p.xRowStride;
    uint yBase = p.yOffset + row * p.yRowStride;
    uint t = gl_LocalInvocationID.x;
    // Columns [0, kept) take part; with the causal mask the rest are 0.
    uint kept = p.cols;
    if (CAUSAL != 0) {
        kept = min(p.cols, row % p.rowsPerMatrix + p.causalShift + 1);
    }

    float m = NEG_INF;
    float s = 0.0;
    for (uint c = t; c < kept; c += gl_WorkGroupSize.x) {
        float v = p.scale * LOAD(TYPE, x, xBase + c);
        if (v > m) {
            s = s * exp(m - v) + 1.0;
            m = v;
        } else {
            s += exp(v - m);
        }
    }
    float rowMax = workgroupMax(m);
    float total = workgroupSum(m == NEG_INF ? 0.0 : s * exp(m - rowMax));
    float inverse = 1.0 / total;
    for (uint c = t; c < p.cols; c += gl_WorkGroupSize.x) {
        float r = 0.0;
        if (c < kept) {
            r = exp(p.scale * LOAD(TYPE, x, xBase + c) - rowMax) * inverse;
        }
        STORE(TYPE, y, yBase + c, r);
    }
}
