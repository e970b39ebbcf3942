#version 450
#extension GL_GOOGLE_include_directive : require
// OpReduce: one workgroup per row; sum, mean, max (y float) or, with
// ARGMAX, the index of the largest value (y uint). x of X_TYPE.
#include "Common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0; // kp::ReduceOp

#include "Reduce.glsl"

layout(set = 0, binding = 0) readonly buffer X { STORAGE(X_TYPE) x[]; };
#ifdef ARGMAX
layout(set = 0, binding = 1) writeonly buffer Y { uint y[]; };
#else
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
#endif
layout(push_constant) uniform Push
{
    uint rows;
    uint cols;
    uint xRowStride;
    uint xOffset;
    uint yOffset;
} p;

void main()
{
    uint row = flatGroup();
    if (row >= p.rows) {
        return;
    }
    uint base = p.xOffset + row * p.xRowStride;
    uint t = gl_LocalInvocationID.x;
#ifdef ARGMAX
    float best = NEG_INF;
    uint bestIndex = 0xffffffffu;
    for (uint c = t; c < p.cols; c += gl_WorkGroupSize.x) {
        float v = LOAD(X_TYPE, x, base + c);
        if (v > best) { // NaN never wins; the first of equals is kept
            best = v;
            bestIndex = c;
        }
    }
    uint result = workgroupArgmax(best, bestIndex);
    if (t == 0) {
        y[p.yOffset + row] = result == 0xffffffffu ? 0u : result;
    }
#else
    float acc = OP == 2 ? NEG_INF : 0.0;
    for (uint c = t; c < p.cols; c += gl_WorkGroupSize.x) {
        float v = LOAD(X_TYPE, x, base + c);
        acc = OP == 2 ? max(acc, v) : acc + v;
    }
    float result = OP == 2 ? workgroupMax(acc) : workgroupSum(acc);
    if (t == 0) {
        y[p.yOffset + row] = OP == 1 ? result / float(p.cols) : result;
    }
#endif
}
