// Workgroup-wide reductions for the row kernels (one workgroup per row):
// every invocation calls them with its partial value and gets the
// workgroup's result. With SUBGROUP defined they reduce within subgroups
// first (subgroupAdd, subgroupMax) and combine the subgroups' results
// through shared memory; without, a shared-memory tree does it all. The
// local size (constant_id 0) is a power of two.
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

shared float reduceValues[gl_WorkGroupSize.x];
shared uint reduceIndices[gl_WorkGroupSize.x];

float workgroupSum(float v)
{
#ifdef SUBGROUP
    v = subgroupAdd(v);
    if (subgroupElect()) {
        reduceValues[gl_SubgroupID] = v;
    }
    barrier();
    float total = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; ++i) {
        total += reduceValues[i];
    }
#else
    uint t = gl_LocalInvocationID.x;
    reduceValues[t] = v;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (t < s) {
            reduceValues[t] += reduceValues[t + s];
        }
        barrier();
    }
    float total = reduceValues[0];
#endif
    barrier(); // the shared values may be reused right away
    return total;
}

float workgroupMax(float v)
{
#ifdef SUBGROUP
    v = subgroupMax(v);
    if (subgroupElect()) {
        reduceValues[gl_SubgroupID] = v;
    }
    barrier();
    float result = NEG_INF;
    for (uint i = 0; i < gl_NumSubgroups; ++i) {
        result = max(result, reduceValues[i]);
    }
#else
    uint t = gl_LocalInvocationID.x;
    reduceValues[t] = v;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (t < s) {
            reduceValues[t] = max(reduceValues[t], reduceValues[t + s]);
        }
        barrier();
    }
    float result = reduceValues[0];
#endif
    barrier();
    return result;
}

// (value, index) of the largest value, the smallest index among equals.
// Invocations without a candidate pass (NEG_INF, 0xffffffff).
bool better(float v, uint i, float bestV, uint bestI)
{
    return v > bestV || (v == bestV && i < bestI);
}

// v: the invocation's best value in, the workgroup's out.
uint workgroupArgmax(inout float v, uint index)
{
#ifdef SUBGROUP
    float best = subgroupMax(v);
    uint bestIndex = subgroupMin(v == best ? index : 0xffffffffu);
    if (subgroupElect()) {
        reduceValues[gl_SubgroupID] = best;
        reduceIndices[gl_SubgroupID] = bestIndex;
    }
    barrier();
    float resultV = NEG_INF;
    uint resultI = 0xffffffffu;
    for (uint i = 0; i < gl_NumSubgroups; ++i) {
        if (better(reduceValues[i], reduceIndices[i], resultV, resultI)) {
            resultV = reduceValues[i];
            resultI = reduceIndices[i];
        }
    }
#else
    uint t = gl_LocalInvocationID.x;
    reduceValues[t] = v;
    reduceIndices[t] = index;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (t < s && better(reduceValues[t + s], reduceIndices[t + s], reduceValues[t], reduceIndices[t])) {
            reduceValues[t] = reduceValues[t + s];
            reduceIndices[t] = reduceIndices[t + s];
        }
        barrier();
    }
    float resultV = reduceValues[0];
    uint resultI = reduceIndices[0];
#endif
    barrier();
    v = resultV;
    return resultI;
}
