#version 450
// Embedding lookup: out[i][c] = table[ids[i]][c] as f32, for tables in f32,
// f16, bf16 or GGUF blocks of any format the kernels read (dequantized with
// the matrix kernels' loads). One thread per output element; ids past the table's rows
// are a caller error that the host cannot see (they are read on the device),
// so they produce NaN rather than reading outside the table.
#extension GL_GOOGLE_include_directive : require
#include "MatMulCommon.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TABLE_TYPE = 0;

layout(push_constant) uniform GetRowsParams
{
    uint rows;        // ids looked up
    uint cols;
    uint tableRows;   // rows the table holds
    uint tableStride; // elements (weights) between table rows
    uint tableOffset;
    uint idsOffset;
    uint outStride;
    uint outOffset;
}
p;

OPERAND_VIEWS(0, T)
layout(set = 0, binding = 1) readonly buffer Ids { uint ids[]; };
layout(set = 0, binding = 2) writeonly buffer Out { float outValues[]; };
FLOAT_OPERAND_LOADS(T)
#define QUANT_VIEW T16
#define QUANT_VIEW32 T32
#include "QuantBlocks.glsl"
QUANT_OPERAND_LOADS(T)

void main()
{
    uint col = gl_GlobalInvocationID.x;
    uint row = gl_GlobalInvocationID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
    if (col >= p.cols || row >= p.rows) {
        return;
    }
    uint id = ids[p.idsOffset + row];
    float value = uintBitsToFloat(0x7FC00000u); // NaN for an id past the table
    if (id < p.tableRows) {
        uint e = p.tableOffset + id * p.tableStride + col;
        value = IS_QUANT_TYPE(TABLE_TYPE) ? TLoadQ(TABLE_TYPE, e)
                                                                     : TLoad(TABLE_TYPE, e);
    }
    outValues[p.outOffset + row * p.outStride + col] = value;
}
