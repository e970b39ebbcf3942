// The rotation of RoPE, shared by OpRoPE, OpRoPECache (RoPE.comp) and the
// mat-vec that applies OpRoPECache to the row it writes (MatVec.comp with
// ROPE_EPILOGUE), so that both ways compute the same angles.

// Pair (a, b) of slot j < ropeDims/2 turned by its angle at `position`:
// position * freqScale * theta^(-2j / ropeDims) / factor (factor: Llama
// 3.1's rope_freqs[j], or 1).
vec2 ropeRotate(float a, float b, uint j, uint position, uint ropeDims, float log2Theta, float freqScale, float factor)
{
    float angle = float(position) * freqScale * exp2(-2.0 * float(j) / float(ropeDims) * log2Theta);
    angle /= factor;
    float c = cos(angle);
    float s = sin(angle);
    return vec2(a * c - b * s, a * s + b * c);
}
