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
// over cache positions 0..position with the whole workgroup, ATTN_AT_ONCE
// query heads and a chunk of WG positions at a time:
//  - scores: a thread per position, its K row (f16, HEAD_DIM values) read
//    ATTN_K_LOADS 16-byte chunks at a time, dotted with the heads' scaled
//    queries from shared memory;
//  - online softmax: each head's maximum and sum over the chunk through
//    subgroup reductions and shared memory (every invocation then holds the
//    same running maximum and sum);
//  - P V: thread (part dp of 4 values, slice) takes positions slice,
//    slice + SL, ... of the chunk, ATTN_V_LOADS V loads in flight.
// The slices are summed through shared memory at the end. A KV head's work
// grows with the context in one workgroup: the runner keeps OpAttention
// (split over the context) past a context length (llm's ContextOptions).
// The tail shares the product's pipeline, so its registers are the whole
// dispatch's, and they set how many workgroups an SM holds. On an H100 the
// f16 qkv product takes 32 registers alone, 119 with 4 heads at once, 96
// with 2 and 80 with 1 (the loads in flight change nothing); grouped Q4_0's
// 95 alone and 126 with the tail. Either way the fused product was slower
// than the product and OpAttention apart (docs/performance.md, eighteenth
// and nineteenth sessions).
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
// with offset and row stride multiples of 8, and WG a multiple of HEAD_DIM / 4.

layout(constant_id = 22) const uint ATTN_GROUP = 4;      // query heads per KV head
layout(constant_id = 23) const uint ATTN_HEAD_DIM = 128; // values per head
layout(constant_id = 24) const uint ATTN_OUT_HALF = 0;   // f16 output (else f32)
// Loads in flight per thread: 16-byte chunks of a K row, and 8-byte parts of
// V rows (kompute-kernel-probe's "attention stats" compares their
// registers).
layout(constant_id = 25) const uint ATTN_K_LOADS = 4;
layout(constant_id = 26) const uint ATTN_V_LOADS = 4;
// Query heads attended together (at most 8): each batch reads its KV head's
// K and V rows once, and holds a running maximum, sum and 4 output values
// per head. 2: the fused f16 product's registers 96 against 119 for 4, and
// Q4_0's tg128 3% faster than with 4 (H100, nineteenth session).
layout(constant_id = 27) const uint ATTN_AT_ONCE = 2;

layout(set = 0, binding = 5) coherent readonly buffer KeyRead { uvec4 keyRows[]; };
layout(set = 0, binding = 6) coherent readonly buffer ValueRead { uvec2 valueParts[]; };
layout(set = 0, binding = 9) writeonly buffer AttnOut32 { float attnOut32[]; };
layout(set = 0, binding = 9) writeonly buffer AttnOut16 { float16_t attnOut16[]; };
// Per KV head, its tiles counted so far (zero before the dispatch, left zero).
layout(set = 0, binding = 10) coherent buffer AttnCounts { uint attnCount[]; };

const uint ATTN_CHUNKS = ATTN_HEAD_DIM / 8u;  // 16-byte chunks of a K row
const uint ATTN_PARTS = ATTN_HEAD_DIM / 4u;   // 4-value parts of a V row
const uint ATTN_SLICES = WG / ATTN_PARTS;     // position slices of P V
const float ATTN_NO_SCORE = -1e30;            // below every real score

shared vec4 attnQ[ATTN_AT_ONCE * ATTN_HEAD_DIM / 4u]; // a batch's scaled queries
// A chunk's probabilities (AT_ONCE * WG, AT_ONCE at most 8) in the loop, P
// V's partial sums (SLICES * HEAD_DIM = 4 * WG) after it.
shared float attnScratch[8u * WG];
shared float attnMax[64u * ATTN_AT_ONCE];             // per subgroup and head
shared float attnSum[64u * ATTN_AT_ONCE];
shared uint attnLast;

vec4 halvesLo(uvec4 w) { return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y)); }
vec4 halvesHi(uvec4 w) { return vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w)); }

// The attention of query heads h0 .. h0 + ATTN_AT_ONCE - 1 of KV head g
// (those below ATTN_GROUP).
void attendHeads(uint g, uint h0)
{
    uint tid = gl_LocalInvocationID.x;
    uint position = ropePositions[p.ropePositionsOffset];
    uint capacity = min(p.ropeKeyRows, p.ropeValueRows);
    uint contextLength = min(position, capacity - 1u) + 1u;
    uint heads = min(ATTN_AT_ONCE, ATTN_GROUP - h0);
    uint qBase = p.outOffset + (g * ATTN_GROUP + h0) * ATTN_HEAD_DIM;
    for (uint i = tid; i < ATTN_AT_ONCE * ATTN_HEAD_DIM / 4u; i += WG) {
        uint e = qBase + 4u * i;
        vec4 q = vec4(0.0);
        if (i < heads * ATTN_HEAD_DIM / 4u) {
            q = OUT_TYPE == TYPE_F32 ? vec4(Out32[e], Out32[e + 1u], Out32[e + 2u], Out32[e + 3u])
                                     : vec4(Out16[e], Out16[e + 1u], Out16[e + 2u], Out16[e + 3u]);
        }
        attnQ[i] = q * p.attnScale;
    }
    barrier();

    uint kvBase = p.ropeCacheOffset + g * ATTN_HEAD_DIM; // elements
    uint dp = tid % ATTN_PARTS, slice = tid / ATTN_PARTS;
    float m[ATTN_AT_ONCE], l[ATTN_AT_ONCE];
    vec4 o[ATTN_AT_ONCE]; // this thread's 4 output values of each head
    [[unroll]] for (uint h = 0; h < ATTN_AT_ONCE; ++h) {
        m[h] = ATTN_NO_SCORE;
        l[h] = 0.0;
        o[h] = vec4(0.0);
    }
    for (uint c0 = 0; c0 < contextLength; c0 += WG) {
        // The scores of position c0 + tid, its K row ATTN_K_LOADS chunks at
        // a time.
        uint j = c0 + tid;
        bool inside = j < contextLength;
        float s[ATTN_AT_ONCE];
        [[unroll]] for (uint h = 0; h < ATTN_AT_ONCE; ++h) {
            s[h] = 0.0;
        }
        if (inside) {
            uint row = (kvBase + j * p.ropeCacheRowStride) / 8u;
            [[dont_unroll]] for (uint c0k = 0; c0k < ATTN_CHUNKS; c0k += ATTN_K_LOADS) {
                uvec4 k[ATTN_K_LOADS];
                [[unroll]] for (uint c = 0; c < ATTN_K_LOADS; ++c) {
                    // (zero past a row of fewer chunks: those dot to 0)
                    k[c] = c0k + c < ATTN_CHUNKS ? keyRows[row + c0k + c] : uvec4(0u);
                }
                [[unroll]] for (uint c = 0; c < ATTN_K_LOADS; ++c) {
                    vec4 a = halvesLo(k[c]), b = halvesHi(k[c]);
                    [[unroll]] for (uint h = 0; h < ATTN_AT_ONCE; ++h) {
                        uint q = min(h * ATTN_HEAD_DIM + 8u * (c0k + c), ATTN_AT_ONCE * ATTN_HEAD_DIM - 8u) / 4u;
                        s[h] += dot(a, attnQ[q]) + dot(b, attnQ[q + 1u]);
                    }
                }
            }
        }
        // The chunk's maximum of each head, then its probabilities and sum.
        uint sg = gl_SubgroupID;
        [[unroll]] for (uint h = 0; h < ATTN_AT_ONCE; ++h) {
            float top = subgroupMax(inside ? s[h] : ATTN_NO_SCORE);
            if (subgroupElect()) {
                attnMax[sg * ATTN_AT_ONCE + h] = top;
            }
        }
        barrier();
        float rescale[ATTN_AT_ONCE];
        [[unroll]] for (uint h = 0; h < ATTN_AT_ONCE; ++h) {
            float top = m[h];
            for (uint i = 0; i < gl_NumSubgroups; ++i) {
                top = max(top, attnMax[i * ATTN_AT_ONCE + h]);
            }
            rescale[h] = exp(m[h] - top);
            m[h] = top;
            // Selected, not multiplied by 0: past the context s is 0, and
            // exp(0 - top) may be anything.
            float e = inside ? exp(s[h] - top) : 0.0;
            attnScratch[h * WG + tid] = e;
            float total = subgroupAdd(e);
            if (subgroupElect()) {
                attnSum[sg * ATTN_AT_ONCE + h] = total;
            }
        }
        barrier();
        [[unroll]] for (uint h = 0; h < ATTN_AT_ONCE; ++h) {
            float total = 0.0;
            for (uint i = 0; i < gl_NumSubgroups; ++i) {
                total += attnSum[i * ATTN_AT_ONCE + h];
            }
            l[h] = l[h] * rescale[h] + total;
            o[h] *= rescale[h];
        }
        // P V over the chunk's positions of this thread's slice,
        // ATTN_V_LOADS V loads in flight.
        uint n = min(WG, contextLength - c0);
        for (uint i0 = slice; i0 < n; i0 += ATTN_V_LOADS * ATTN_SLICES) {
            uvec2 v[ATTN_V_LOADS];
            [[unroll]] for (uint u = 0; u < ATTN_V_LOADS; ++u) {
                uint i = i0 + u * ATTN_SLICES;
                v[u] = i < n ? valueParts[(kvBase + (c0 + i) * p.ropeCacheRowStride) / 4u + dp] : uvec2(0u);
            }
            [[unroll]] for (uint u = 0; u < ATTN_V_LOADS; ++u) {
                uint i = i0 + u * ATTN_SLICES;
                if (i < n) {
                    vec4 a = vec4(unpackHalf2x16(v[u].x), unpackHalf2x16(v[u].y));
                    [[unroll]] for (uint h = 0; h < ATTN_AT_ONCE; ++h) {
                        o[h] += attnScratch[h * WG + i] * a;
                    }
                }
            }
        }
        barrier(); // attnScratch, attnMax and attnSum read before the next chunk writes them
    }

    // The slices' sums, a head at a time.
    uint outBase = p.attnOutOffset + (g * ATTN_GROUP + h0) * ATTN_HEAD_DIM;
    [[unroll]] for (uint h = 0; h < ATTN_AT_ONCE; ++h) {
        uint at = slice * ATTN_HEAD_DIM + 4u * dp;
        [[unroll]] for (uint u = 0; u < 4u; ++u) {
            attnScratch[at + u] = o[h][u];
        }
        barrier();
        for (uint d = tid; d < ATTN_HEAD_DIM && h < heads; d += WG) {
            float sum = 0.0;
            for (uint i = 0; i < ATTN_SLICES; ++i) {
                sum += attnScratch[i * ATTN_HEAD_DIM + d];
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

// The attention of the ATTN_GROUP query heads of KV head g, ATTN_AT_ONCE at
// a time.
void attendKvHead(uint g)
{
    for (uint h0 = 0; h0 < ATTN_GROUP; h0 += ATTN_AT_ONCE) {
        attendHeads(g, h0);
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
