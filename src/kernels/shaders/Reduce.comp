#version 450
#extension GL_GOOGLE_include_directive : require
// OpReduce: one workgroup per row; sum, mean, max (y float) or, with
// ARGMAX, the index of the largest value (y uint). x of X_TYPE.
//
// With SPLIT (argmax of one long row) workgroup g takes columns [g * chunk,
// (g + 1) * chunk) and leaves its best (value, index) in `scratch`; the last
// workgroup to finish (an atomic count in scratch[0]) merges the groups'
// bests with the same rule (the larger value, the smaller index among
// equals), writes y and sets the count back to 0 for the next evaluation.
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
#ifdef SPLIT
    uint chunk; // columns per workgroup
    uint groups; // workgroups of the row
#endif
} p;

#ifdef SPLIT
// [0]: workgroups finished; [1, 1 + groups): their best values' bits;
// [1 + groups, 1 + 2 groups): their indices.
layout(set = 0, binding = 2) coherent buffer Scratch { uint scratch[]; };
shared bool mergeHere;

// The best (value, index) of the whole row, or (NEG_INF, 0xffffffff): every
// workgroup's best, merged by the last one to finish; false elsewhere.
bool splitArgmax(inout float best, inout uint bestIndex)
{
    uint g = flatGroup();
    uint t = gl_LocalInvocationID.x;
    bestIndex = workgroupArgmax(best, bestIndex);
    if (t == 0) {
        scratch[1 + g] = floatBitsToUint(best);
        scratch[1 + p.groups + g] = bestIndex;
    }
    // The memory model of AttentionSplit.comp's merge: release fences
    // before the count, acquire fences after it, `coherent` partials.
    memoryBarrierBuffer();
    barrier();
    if (t == 0) {
        memoryBarrierBuffer();
        uint finished = atomicAdd(scratch[0], 1u);
        mergeHere = finished + 1 == p.groups;
        memoryBarrierBuffer();
    }
    barrier();
    if (!mergeHere) {
        return false;
    }
    memoryBarrierBuffer();
    best = NEG_INF;
    bestIndex = 0xffffffffu;
    for (uint i = t; i < p.groups; i += gl_WorkGroupSize.x) {
        float v = uintBitsToFloat(scratch[1 + i]);
        uint index = scratch[1 + p.groups + i];
        if (better(v, index, best, bestIndex)) {
            best = v;
            bestIndex = index;
        }
    }
    if (t == 0) {
        // Every workgroup has counted itself: nobody else touches it now.
        atomicExchange(scratch[0], 0u);
    }
    return true;
}
#endif

void main()
{
#ifdef SPLIT
    uint row = 0;
    uint group = flatGroup();
    if (group >= p.groups) {
        return;
    }
    uint begin = group * p.chunk;
    uint end = min(p.cols, begin + p.chunk);
#else
    uint row = flatGroup();
    if (row >= p.rows) {
        return;
    }
    uint begin = 0;
    uint end = p.cols;
#endif
    uint base = p.xOffset + row * p.xRowStride;
    uint t = gl_LocalInvocationID.x;
#ifdef ARGMAX
    float best = NEG_INF;
    uint bestIndex = 0xffffffffu;
    for (uint c = begin + t; c < end; c += gl_WorkGroupSize.x) {
        float v = LOAD(X_TYPE, x, base + c);
        if (v > best) { // NaN never wins; the first of equals is kept
            best = v;
            bestIndex = c;
        }
    }
#ifdef SPLIT
    if (!splitArgmax(best, bestIndex)) {
        return;
    }
#endif
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
