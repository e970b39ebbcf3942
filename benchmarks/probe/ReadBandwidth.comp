#version 450
// The device's read bandwidth: every invocation XORs 16-byte loads of a
// grid-stride loop over the source; nothing is written unless the result is
// one unlikely value (so the loads cannot be dropped).
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Source { uvec4 source[]; };
layout(binding = 1) buffer Sink { uint sink[]; };
layout(push_constant) uniform P { uint count; } p;
void main()
{
    uvec4 acc = uvec4(0);
    uint stride = gl_NumWorkGroups.x * 256u;
    uint i = gl_GlobalInvocationID.x;
    for (; i + 3u * stride < p.count; i += 4u * stride) {
        acc ^= source[i] ^ source[i + stride] ^ source[i + 2u * stride] ^ source[i + 3u * stride];
    }
    for (; i < p.count; i += stride) {
        acc ^= source[i];
    }
    if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678u) {
        sink[0] = 1u;
    }
}
