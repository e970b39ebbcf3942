// OpAttention's output buffer (binding 4): f32, or f16 where the host sets
// OUT_HALF (a specialization constant of the including kernel). Only the
// kernels of f16 caches declare the f16 view: those of f32 caches stay
// free of 16-bit storage, and OpAttention refuses an f16 output with them.
layout(set = 0, binding = 4) writeonly buffer Out { float outs[]; };
#if !defined(KV_TYPE) || KV_TYPE == 1
#define ATTENTION_OUT_HALF_VIEW
layout(set = 0, binding = 4) writeonly buffer Out16 { float16_t outs16[]; };
#endif

void storeOut(uint e, float value)
{
#ifdef ATTENTION_OUT_HALF_VIEW
    if (OUT_HALF != 0) {
        outs16[e] = float16_t(value);
        return;
    }
#endif
    outs[e] = value;
}

void storeOut4(uint e, vec4 value)
{
    storeOut(e, value.x);
    storeOut(e + 1, value.y);
    storeOut(e + 2, value.z);
    storeOut(e + 3, value.w);
}
