// The push constants of the GEMM kernels (MatMulTiled, MatMulCoopmat);
// src/kernels/MatMul.cpp fills the same layout (GemmPush). Strides and
// offsets count elements (weights for a quantized B).
layout(push_constant) uniform GemmParams
{
    uint m, n, k;
    uint lda, ldb, ldc;
    uint strideA, strideB, strideC; // between batches
    uint offsetA, offsetB, offsetC;
    float alpha, beta;
    uint upRowB; // MatMulParams::swigluC: the row of B where the up rows start
}
p;
