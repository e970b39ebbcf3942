#version 450
// Built-in shader of kp::OpMult: out[i] = a[i] * b[i].
// The local size must match kOpMultLocalSize in src/operations/OpMult.cpp.
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer TensorA { float a[]; };
layout(set = 0, binding = 1) readonly buffer TensorB { float b[]; };
layout(set = 0, binding = 2) writeonly buffer TensorOut { float result[]; };

void main()
{
    uint index = gl_GlobalInvocationID.x;
    if (index < uint(result.length())) {
        result[index] = a[index] * b[index];
    }
}
