#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// OpRMSNorm and, with LAYER, OpLayerNorm: one workgroup per row. The
// statistics are reduced over the workgroup in f32 (LayerNorm: the mean
// first, then the variance around it, reading the row again, which is
// exact where sum-of-squares formulas cancel); the last pass writes.
// Without a weight or bias the op binds x in their place (HAS_* = 0).
// With heads > 1 (RMSNorm per head) workgroup g normalizes vector g % heads
// of row g / heads, the vectors of a row lying cols apart; vector h's weight
// starts wHeadStride * h after wOffset. y holds Y_TYPE (TYPE unless
// given): a prefill step's norm writes the f16 rows its products read.
#include "Common.glsl"
#ifndef Y_TYPE
#define Y_TYPE TYPE
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HAS_WEIGHT = 1;
layout(constant_id = 2) const uint HAS_BIAS = 0;
// Values of a row each invocation keeps in registers (rows of up to
// CACHED * local size values; longer rows take the loops).
const uint CACHED = 4;

#include "Reduce.glsl"

layout(set = 0, binding = 0) readonly buffer X { STORAGE(TYPE) x[]; };
layout(set = 0, binding = 1) readonly buffer W { float w[]; };
layout(set = 0, binding = 2) readonly buffer B { float b[]; };
layout(set = 0, binding = 3) buffer Y { STORAGE(Y_TYPE) y[]; };
layout(push_constant) uniform Push
{
    uint rows;
    uint cols;
    float eps;
    uint xRowStride;
    uint yRowStride;
    uint xOffset;
    uint wOffset;
    uint bOffset;
    uint yOffset;
    uint heads;
    uint wHeadStride;
} p;

// Writes normalized value v of column c: `weight` and `bias` (column c's,
// or 1 and 0 without them) applied.
void storeNormalized(float v, uint c, uint yBase, float weight, float bias)
{
    if (HAS_WEIGHT != 0) {
        v *= weight;
    }
    if (HAS_BIAS != 0) {
        v += bias;
    }
    STORE(Y_TYPE, y, yBase + c, v);
}

float weightOf(uint c, uint wBase)
{
    return HAS_WEIGHT != 0 ? w[wBase + c] : 1.0;
}

float biasOf(uint c)
{
    return HAS_BIAS != 0 ? b[p.bOffset + c] : 0.0;
}

void main()
{
    uint group = flatGroup();
    if (group >= p.rows * p.heads) {
        return;
    }
    uint row = group / p.heads;
    uint head = group % p.heads;
    uint xBase = p.xOffset + row * p.xRowStride + head * p.cols;
    uint yBase = p.yOffset + row * p.yRowStride + head * p.cols;
    uint wBase = p.wOffset + head * p.wHeadStride;
    uint t = gl_LocalInvocationID.x;
    float invCols = 1.0 / float(p.cols);

    // A row of at most CACHED values per invocation (a decode step's 4096
    // with 1024 invocations) is read once, all loads issued together, and
    // kept in registers for the statistics and the write: one row per
    // workgroup is latency-bound, and the loops below cost a memory round
    // trip per iteration and pass (12 us a 4096-row on the H200).
    const uint WG = gl_WorkGroupSize.x;
    if (p.cols <= CACHED * WG) {
        // The weights and biases are loaded with the row, so that their
        // loads overlap those of x instead of following the reductions.
        float v[CACHED];
        float weights[CACHED];
        float biases[CACHED];
        [[unroll]] for (uint k = 0; k < CACHED; ++k) {
            uint c = t + k * WG;
            bool inside = c < p.cols;
            v[k] = inside ? LOAD(TYPE, x, xBase + c) : 0.0;
            weights[k] = inside ? weightOf(c, wBase) : 1.0;
            biases[k] = inside ? biasOf(c) : 0.0;
        }
        float cachedMean = 0.0;
#ifdef LAYER
        float cachedSum = 0.0;
        [[unroll]] for (uint k = 0; k < CACHED; ++k) {
            cachedSum += v[k];
        }
        cachedMean = workgroupSum(cachedSum) * invCols;
#endif
        float cachedSquares = 0.0;
        [[unroll]] for (uint k = 0; k < CACHED; ++k) {
            float d = t + k * WG < p.cols ? v[k] - cachedMean : 0.0;
            cachedSquares += d * d;
        }
        float cachedInverse = inversesqrt(workgroupSum(cachedSquares) * invCols + p.eps);
        [[unroll]] for (uint k = 0; k < CACHED; ++k) {
            uint c = t + k * WG;
            if (c < p.cols) {
                storeNormalized((v[k] - cachedMean) * cachedInverse, c, yBase, weights[k], biases[k]);
            }
        }
        return;
    }

    float mean = 0.0;
#ifdef LAYER
    float sum = 0.0;
    for (uint c = t; c < p.cols; c += gl_WorkGroupSize.x) {
        sum += LOAD(TYPE, x, xBase + c);
    }
    mean = workgroupSum(sum) * invCols;
#endif
    float squares = 0.0;
    for (uint c = t; c < p.cols; c += gl_WorkGroupSize.x) {
        float d = LOAD(TYPE, x, xBase + c) - mean;
        squares += d * d;
    }
    float inverse = inversesqrt(workgroupSum(squares) * invCols + p.eps);
    for (uint c = t; c < p.cols; c += gl_WorkGroupSize.x) {
        storeNormalized((LOAD(TYPE, x, xBase + c) - mean) * inverse, c, yBase, weightOf(c, wBase), biasOf(c));
    }
}
