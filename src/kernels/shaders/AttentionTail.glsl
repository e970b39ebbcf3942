// OpAttention's decode for the one query row of a query/key/value mat-vec,
// in the mat-vec's own dispatch (MatMulParams::attentionC; MatVec.comp with
// ROPE_EPILOGUE and ATTN_TAIL). A decode step otherwise waits for the
// product, launches the attention, and waits for it again before the
// attention output's product: two dependent dispatches where this leaves
// one (docs/performance.md, eighteenth session).
//
// Each workgroup, once all its tiles are written (rotated queries in C, the
// key and value rows in the caches), counts them into their KV head's
// counter; the workgroup that completes a KV head (its GROUP query heads'
// rows, its key rows and its value rows) computes that KV head's attention
// over cache positions 0..position with the whole workgroup, a chunk of WG
// positions at a time:
//  - scores: a thread per position, its K row (f16, HEAD_DIM values) loaded
//    at once, dotted with the GROUP scaled queries from shared memory;
//  - online softmax: each head's maximum and sum over the chunk through
//    subgroup reductions and shared memory (every invocation then holds the
//    same running maximum and sum);
//  - P V: thread (chunk dc of 8 values, slice) takes positions slice,
//    slice + SL, ... of the chunk, 8 V loads in flight.
// The slices are summed through shared memory at the end. A KV head's work
// grows with the context in one workgroup: the runner keeps OpAttention
// (split over the context) past a context length (llm's ContextOptions).
//
// Memory model (GLSL without the Vulkan memory model, as AttentionMerge.glsl
// and gluFinish): C and the caches are coherent in these builds; every
// invocation fences after its writes and the workgroup barrier orders them
// before its counts; the workgroup whose count completes a KV head fences
// after its atomic before it reads, and sets the counter back to 0 (no one
// else touches it in this dispatch).
//
// Included by MatVec.comp after the rotation's bindings (positions at 4,
// the caches at 5 and 6); the host checks that HEAD_DIM is a multiple of 8
// and of the workgroup's rows, at most 128, GROUP at most 8, the caches f16
// with offset and row stride multiples of 8, and WG a multiple of HEAD_DIM / 8.

layout(constant_id = 22) const uint ATTN_GROUP = 4;      // query heads per KV head
layout(constant_id = 23) const uint ATTN_HEAD_DIM = 128; // values per head
layout(constant_id = 24) const uint ATTN_OUT_HALF = 0;   // f16 output (else f32)

layout(set = 0, binding = 5) coherent readonly buffer KeyRead { uvec4 keyRows[]; };
layout(set = 0, binding = 6) coherent readonly buffer ValueRead { uvec4 valueRows[]; };
layout(set = 0, binding = 9) writeonly buffer AttnOut32 { float attnOut32[]; };
layout(set = 0, binding = 9) writeonly buffer AttnOut16 { float16_t attnOut16[]; };
// Per KV head, its tiles counted so far (zero before the dispatch, left zero).
layout(set = 0, binding = 10) coherent buffer AttnCounts { uint attnCount[]; };

const uint ATTN_CHUNKS = ATTN_HEAD_DIM / 8u;  // 8-value chunks of a head
const uint ATTN_SLICES = WG / ATTN_CHUNKS;    // position slices of P V
const float ATTN_NO_SCORE = -1e30;            // below every real score

shared vec4 attnQ[ATTN_GROUP * ATTN_HEAD_DIM / 4u]; // the scaled queries
shared float attnP[ATTN_GROUP * WG];                // a chunk's probabilities
shared float attnMax[64u * ATTN_GROUP];             // per subgroup and head
shared float attnSum[64u * ATTN_GROUP];
shared float attnSlices[WG * 8u];                   // P V's partial sums
shared uint attnLast;

vec4 halvesLo(uvec4 w) { return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y)); }
vec4 halvesHi(uvec4 w) { return vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w)); }

// The attention of the ATTN_GROUP query heads of KV head g.
void attendKvHead(uint g)
{
    uint tid = gl_LocalInvocationID.x;
    uint position = ropePositions[p.ropePositionsOffset];
    uint capacity = min(p.ropeKeyRows, p.ropeValueRows);
    uint contextLength = min(position, capacity - 1u) + 1u;
    uint qBase = p.outOffset + g * ATTN_GROUP * ATTN_HEAD_DIM;
    for (uint i = tid; i < ATTN_GROUP * ATTN_HEAD_DIM / 4u; i += WG) {
        uint e = qBase + 4u * i;
        vec4 q = OUT_TYPE == TYPE_F32 ? vec4(Out32[e], Out32[e + 1u], Out32[e + 2u], Out32[e + 3u])
                                      : vec4(Out16[e], Out16[e + 1u], Out16[e + 2u], Out16[e + 3u]);
        attnQ[i] = q * p.attnScale;
    }
    barrier();

    uint kvBase = p.ropeCacheOffset + g * ATTN_HEAD_DIM; // elements
    uint dc = tid % ATTN_CHUNKS, slice = tid / ATTN_CHUNKS;
    float m[ATTN_GROUP], l[ATTN_GROUP];
    vec4 lo[ATTN_GROUP], hi[ATTN_GROUP]; // this thread's 8 output values of each head
    [[unroll]] for (uint h = 0; h < ATTN_GROUP; ++h) {
        m[h] = ATTN_NO_SCORE;
        l[h] = 0.0;
        lo[h] = vec4(0.0);
        hi[h] = vec4(0.0);
    }
    for (uint c0 = 0; c0 < contextLength; c0 += WG) {
        // The scores of position c0 + tid, its K row loaded whole.
        uint j = c0 + tid;
        bool inside = j < contextLength;
        float s[ATTN_GROUP];
        [[unroll]] for (uint h = 0; h < ATTN_GROUP; ++h) {
            s[h] = 0.0;
        }
        if (inside) {
            uint row = (kvBase + j * p.ropeCacheRowStride) / 8u;
            uvec4 k[ATTN_CHUNKS];
            [[unroll]] for (uint c = 0; c < ATTN_CHUNKS; ++c) {
                k[c] = keyRows[row + c];
            }
            [[unroll]] for (uint c = 0; c < ATTN_CHUNKS; ++c) {
                vec4 a = halvesLo(k[c]), b = halvesHi(k[c]);
                [[unroll]] for (uint h = 0; h < ATTN_GROUP; ++h) {
                    uint q = (h * ATTN_HEAD_DIM + 8u * c) / 4u;
                    s[h] += dot(a, attnQ[q]) + dot(b, attnQ[q + 1u]);
                }
            }
        }
        // The chunk's maximum of each head, then its probabilities and sum.
        uint sg = gl_SubgroupID;
        [[unroll]] for (uint h = 0; h < ATTN_GROUP; ++h) {
            float top = subgroupMax(inside ? s[h] : ATTN_NO_SCORE);
            if (subgroupElect()) {
                attnMax[sg * ATTN_GROUP + h] = top;
            }
        }
        barrier();
        float rescale[ATTN_GROUP];
        [[unroll]] for (uint h = 0; h < ATTN_GROUP; ++h) {
            float top = m[h];
            for (uint i = 0; i < gl_NumSubgroups; ++i) {
                top = max(top, attnMax[i * ATTN_GROUP + h]);
            }
            rescale[h] = exp(m[h] - top);
            m[h] = top;
            // Selected, not multiplied by 0: past the context s is 0, and
            // exp(0 - top) may be anything.
            float e = inside ? exp(s[h] - top) : 0.0;
            attnP[h * WG + tid] = e;
            float total = subgroupAdd(e);
            if (subgroupElect()) {
                attnSum[sg * ATTN_GROUP + h] = total;
            }
        }
        barrier();
        [[unroll]] for (uint h = 0; h < ATTN_GROUP; ++h) {
            float total = 0.0;
            for (uint i = 0; i < gl_NumSubgroups; ++i) {
                total += attnSum[i * ATTN_GROUP + h];
            }
            l[h] = l[h] * rescale[h] + total;
            lo[h] *= rescale[h];
            hi[h] *= rescale[h];
        }
        // P V over the chunk's positions of this thread's slice, 8 V loads
        // in flight.
        uint n = min(WG, contextLength - c0);
        for (uint i0 = slice; i0 < n; i0 += 8u * ATTN_SLICES) {
            uvec4 v[8];
            [[unroll]] for (uint u = 0; u < 8u; ++u) {
                uint i = i0 + u * ATTN_SLICES;
                v[u] = i < n ? valueRows[(kvBase + (c0 + i) * p.ropeCacheRowStride) / 8u + dc] : uvec4(0u);
            }
            [[unroll]] for (uint u = 0; u < 8u; ++u) {
                uint i = i0 + u * ATTN_SLICES;
                if (i < n) {
                    vec4 a = halvesLo(v[u]), b = halvesHi(v[u]);
                    [[unroll]] for (uint h = 0; h < ATTN_GROUP; ++h) {
                        float w = attnP[h * WG + i];
                        lo[h] += w * a;
                        hi[h] += w * b;
                    }
                }
            }
        }
        barrier(); // attnP, attnMax and attnSum read before the next chunk writes them
    }

    // The slices' sums, a head at a time.
    uint outBase = p.attnOutOffset + g * ATTN_GROUP * ATTN_HEAD_DIM;
    [[unroll]] for (uint h = 0; h < ATTN_GROUP; ++h) {
        uint at = slice * ATTN_HEAD_DIM + 8u * dc;
        [[unroll]] for (uint u = 0; u < 4u; ++u) {
            attnSlices[at + u] = lo[h][u];
            attnSlices[at + 4u + u] = hi[h][u];
        }
        barrier();
        for (uint d = tid; d < ATTN_HEAD_DIM; d += WG) {
            float sum = 0.0;
            for (uint i = 0; i < ATTN_SLICES; ++i) {
                sum += attnSlices[i * ATTN_HEAD_DIM + d];
            }
            sum /= l[h];
            if (ATTN_OUT_HALF != 0) {
                attnOut16[outBase + h * ATTN_HEAD_DIM + d] = float16_t(sum);
            } else {
                attnOut32[outBase + h * ATTN_HEAD_DIM + d] = sum;
            }
        }
        barrier(); // read before the next head writes them
    }
}

// After the workgroup's last tile: each of its tiles counted into its KV
// head's counter, and the KV heads this workgroup completes attended.
// Workgroup-uniform control flow.
void attentionTail()
{
    memoryBarrierBuffer();
    barrier();
    uint tiles = (p.rows + ROWS - 1u) / ROWS;
    uint headTiles = ATTN_HEAD_DIM / ROWS;
    uint perKvHead = (ATTN_GROUP + 2u) * headTiles;
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
        uint head = tile / headTiles;
        uint g = head < p.ropeHeads ? head / ATTN_GROUP : (head - p.ropeHeads) % p.ropeKvHeads;
        if (gl_LocalInvocationIndex == 0u) {
            memoryBarrierBuffer();
            attnLast = atomicAdd(attnCount[g], 1u) + 1u == perKvHead ? 1u : 0u;
        }
        barrier();
        bool last = attnLast != 0u;
        barrier(); // read before the next tile's count writes it
        if (last) {
            memoryBarrierBuffer();
            attendKvHead(g);
            if (gl_LocalInvocationIndex == 0u) {
                atomicExchange(attnCount[g], 0u);
            }
        }
    }
}
