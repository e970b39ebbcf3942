// OpAttention's decode paths (AttentionSplit.comp, AttentionDecode.comp):
// after a workgroup has written its chunk's partial results for the GROUP
// query heads of one (row, KV head) pair into `partial`
// ([row][head][split][PARTIAL_STRIDE]: the unnormalized output, then
// (max, sum, 0, 0)), it counts itself, and the last of the pair's
// activeSplits workgroups to finish merges the chunks into `outs`:
//   out = sum_s w_s o_s / sum_s w_s l_s,  w_s = exp(m_s - max_s m_s),
// and sets the counter back to 0, so that the recorded operation can run
// again. The includer declares outs, partial, counters, p (with rows, heads,
// kvHeads, splits, outRowStride and outOffset), HEAD_DIM, GROUP, VECS and
// PARTIAL_STRIDE.
#ifndef MERGE_UNROLL
#define MERGE_UNROLL 8 // chunks merged at once (2 loads each)
#endif

shared bool mergeHere;

void mergeIfLast(uint row, uint kvHead, uint activeSplits)
{
    uint t = gl_LocalInvocationID.x;
    uint T = gl_WorkGroupSize.x;
    uint firstHead = kvHead * GROUP;
    // Who merges. Memory model (GLSL without the Vulkan memory model
    // extension: `coherent` makes each access of `partial` available /
    // visible at device scope, memoryBarrierBuffer is a device-scope
    // acquire-release fence on buffer memory):
    // - every invocation fences after its partial writes (release), then
    //   the workgroup barrier orders all of them before invocation 0's
    //   fence and atomic increment, so whoever reads the incremented count
    //   is ordered after every write of this workgroup;
    // - the workgroup that reads activeSplits - 1 (all others finished, in
    //   modification order of the counter) fences after the atomic
    //   (acquire), passes the news on through shared memory and a barrier,
    //   and each of its invocations fences again before reading `partial`
    //   (coherent, so not from a stale non-coherent cache).
    // Lavapipe and the validation layer cannot show a mistake here; this is
    // the threadfence-reduction pattern of CUDA in Vulkan's terms.
    memoryBarrierBuffer();
    barrier();
    uint counter = row * p.kvHeads + kvHead;
    if (t == 0) {
        memoryBarrierBuffer();
        uint finished = atomicAdd(counters[counter], 1u);
        mergeHere = finished + 1 == activeSplits;
        memoryBarrierBuffer();
    }
    barrier();
    if (!mergeHere) {
        return;
    }
    memoryBarrierBuffer();

    // The merge: invocation (head, vector) walks the chunks with a running
    // maximum (an online softmax), MERGE_UNROLL chunks' loads in flight.
    uint outRow = p.outOffset + row * p.outRowStride;
    for (uint i = t; i < GROUP * VECS; i += T) {
        uint h = i / VECS;
        uint mergeVec = i % VECS;
        uint base = ((row * p.heads + firstHead + h) * p.splits) * PARTIAL_STRIDE;
        float m = NEG_INF;
        float l = 0.0;
        vec4 acc = vec4(0.0);
        for (uint s0 = 0; s0 < activeSplits; s0 += MERGE_UNROLL) {
            vec4 stats[MERGE_UNROLL];
            vec4 o[MERGE_UNROLL];
            for (uint u = 0; u < MERGE_UNROLL; ++u) {
                uint s = s0 + u;
                bool inside = s < activeSplits;
                stats[u] = inside ? partial[base + s * PARTIAL_STRIDE + VECS] : vec4(NEG_INF, 0.0, 0.0, 0.0);
                o[u] = inside ? partial[base + s * PARTIAL_STRIDE + mergeVec] : vec4(0.0);
            }
            float mNew = m;
            for (uint u = 0; u < MERGE_UNROLL; ++u) {
                mNew = max(mNew, stats[u].x);
            }
            // mNew is finite: chunk s0 holds at least one position.
            float rescale = exp(m - mNew);
            acc *= rescale;
            l *= rescale;
            for (uint u = 0; u < MERGE_UNROLL; ++u) {
                float w = exp(stats[u].x - mNew); // 0 for the chunks past the end
                acc += w * o[u];
                l += w * stats[u].y;
            }
            m = mNew;
        }
        acc /= l;
        uint e = outRow + (firstHead + h) * HEAD_DIM + 4 * mergeVec;
        storeOut4(e, acc);
    }
    if (t == 0) {
        // Every chunk of this pair has counted itself: nobody else touches
        // the counter in this dispatch.
        atomicExchange(counters[counter], 0u);
    }
}
