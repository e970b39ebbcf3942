#version 450
// OpCopy's tensor-to-tensor copy where a shader beats the copy command (see
// src/internal/ShaderCopy.hpp): one 16-byte vector per invocation, over a
// 2D grid of workgroups (x at most 65535, the smallest limit Vulkan allows).
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) restrict readonly buffer Source { uvec4 source[]; };
layout(set = 0, binding = 1) restrict writeonly buffer Target { uvec4 target[]; };
layout(push_constant) uniform Count { uint vectors; };

void main()
{
    uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint i = group * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i < vectors) {
        target[i] = source[i];
    }
}
