// Shared by the kernel library's shaders (src/kernels/shaders/*.comp).
//
// Element types: each buffer's *_TYPE define (0 = f32, 1 = f16, 2 = bf16)
// picks its storage type; LOAD and STORE convert to and from f32, in which
// all arithmetic is done. 16-bit values need only the 16-bit storage
// feature (no 16-bit arithmetic): they are converted as they are loaded and
// stored. bf16 is stored as its 16 raw bits.
#extension GL_EXT_shader_16bit_storage : require

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#define STORAGE_0 float
#define STORAGE_1 float16_t
#define STORAGE_2 uint16_t
#define STORAGE(t) CAT(STORAGE_, t)

#define LOAD_0(buf, i) (buf[i])
#define LOAD_1(buf, i) float(buf[i])
#define LOAD_2(buf, i) uintBitsToFloat(uint(buf[i]) << 16)
#define LOAD(t, buf, i) CAT(LOAD_, t)(buf, i)

#define STORE_0(buf, i, v) buf[i] = (v)
#define STORE_1(buf, i, v) buf[i] = float16_t(v)
#define STORE_2(buf, i, v) buf[i] = uint16_t(bf16Bits(v))
#define STORE(t, buf, i, v) CAT(STORE_, t)(buf, i, v)

// f32 -> bf16 bits, rounded to nearest even; NaN stays a quiet NaN.
uint bf16Bits(float v)
{
    uint b = floatBitsToUint(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return (b >> 16) | 0x40u;
    }
    return (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
}

// Workgroups are dispatched on a 2-D grid when there are more than the
// device's maxComputeWorkGroupCount[0]; this is the flat index.
uint flatGroup()
{
    return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}

// -infinity (a literal: uintBitsToFloat is not a constant expression).
const float NEG_INF = -1.0 / 0.0;
