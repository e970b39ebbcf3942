"""Helpers of the LLM runner's tests: tiny models of the llama, qwen2 and
qwen3 architectures written as GGUF files (with the gguf package), GGUF's block formats quantized and
dequantized in NumPy, and a NumPy reference forward pass.

Everything here is independent of the runner: the dequantization follows
the GGUF block layouts (Q8_0: f16 scale + 32 int8; Q4_0: f16 scale + 16
bytes whose low nibbles are weights 0..15 and high nibbles 16..31, value
(q - 8) * scale; the other block types through the gguf package's
dequantizer, their blocks made by its quantizer or, for the K-quants and
IQ4, by kp.quantize), and the forward pass is the Llama architecture (with
qwen2's biases, qwen3's head norms, NeoX RoPE, Llama 3.1's RoPE factors and
linear scaling) written out in float64.
"""

import dataclasses

import numpy as np

gguf = None  # imported lazily, so a missing package skips instead of failing collection


def need_gguf():
    import pytest

    global gguf
    gguf = pytest.importorskip("gguf")
    return gguf


# --- Block formats -------------------------------------------------------------------

def bf16_bits(values):
    """float32 -> bfloat16 bit patterns (round to nearest even)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    return (rounded >> 16).astype(np.uint16)


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def quantize_q8_0(w):
    """[rows, k] float32 -> [rows, k / 32 * 34] uint8 (GGUF Q8_0 blocks)."""
    rows, k = w.shape
    blocks = w.reshape(rows, k // 32, 32).astype(np.float32)
    amax = np.abs(blocks).max(axis=2, keepdims=True)
    d = (amax / 127.0).astype(np.float16)
    inv = np.where(d.astype(np.float32) > 0, 1.0 / np.maximum(d.astype(np.float32), 1e-30), 0.0)
    q = np.clip(np.rint(blocks * inv), -127, 127).astype(np.int8)
    out = np.empty((rows, k // 32, 34), dtype=np.uint8)
    out[:, :, 0:2] = d.view(np.uint8).reshape(rows, k // 32, 2)
    out[:, :, 2:] = q.view(np.uint8)
    return out.reshape(rows, k // 32 * 34)


def dequantize_q8_0(raw, k):
    rows = raw.shape[0]
    blocks = raw.reshape(rows, k // 32, 34)
    d = blocks[:, :, 0:2].copy().view(np.float16).astype(np.float32)
    q = blocks[:, :, 2:].copy().view(np.int8).astype(np.float32)
    return (q * d).reshape(rows, k)


def quantize_q4_0(w):
    """[rows, k] float32 -> [rows, k / 32 * 18] uint8 (GGUF Q4_0 blocks)."""
    rows, k = w.shape
    blocks = w.reshape(rows, k // 32, 32).astype(np.float32)
    index = np.abs(blocks).argmax(axis=2)[..., None]
    extreme = np.take_along_axis(blocks, index, axis=2)
    d = (extreme / -8.0).astype(np.float16)
    df = d.astype(np.float32)
    inv = np.where(df != 0, 1.0 / np.where(df != 0, df, 1.0), 0.0)
    q = np.clip(np.floor(blocks * inv + 8.5), 0, 15).astype(np.uint8)
    out = np.empty((rows, k // 32, 18), dtype=np.uint8)
    out[:, :, 0:2] = d.view(np.uint8).reshape(rows, k // 32, 2)
    out[:, :, 2:] = q[:, :, :16] | (q[:, :, 16:] << 4)
    return out.reshape(rows, k // 32 * 18)


def dequantize_q4_0(raw, k):
    rows = raw.shape[0]
    blocks = raw.reshape(rows, k // 32, 18)
    d = blocks[:, :, 0:2].copy().view(np.float16).astype(np.float32)
    packed = blocks[:, :, 2:]
    low = (packed & 0x0F).astype(np.float32) - 8.0
    high = (packed >> 4).astype(np.float32) - 8.0
    return (np.concatenate([low, high], axis=2) * d).reshape(rows, k)


# --- Tiny models ---------------------------------------------------------------------

@dataclasses.dataclass
class TinyConfig:
    vocab: int = 300
    width: int = 64
    layers: int = 2
    ffn: int = 96
    heads: int = 4
    kv_heads: int = 2
    context: int = 128
    rope_base: float = 10000.0
    rope_dims: int = 0  # 0: the whole head
    eps: float = 1e-5
    tied: bool = False
    architecture: str = "llama"  # llama, qwen2 (q/k/v biases), qwen3 (query/key head norms)
    key_length: int = 0  # 0: width / heads; else written as attention.key_length (qwen3)
    rope_freqs: bool = False  # Llama 3.1's rope_freqs.weight
    rope_scale: float = 0.0  # linear RoPE scaling factor (rope.scaling.factor); 0: none

    @property
    def head_dim(self):
        return self.key_length or self.width // self.heads

    @property
    def neox(self):
        """qwen2/qwen3 rotate the halves of each head (GGUF keeps Hugging
        Face's layout); llama adjacent pairs."""
        return self.architecture in ("qwen2", "qwen3")


def llama3_rope_factors(dims, base, factor=8.0, low=1.0, high=4.0, original=8192):
    """Llama 3.1's rope_freqs as its converter computes them: 1 for the
    short wavelengths, `factor` for the long, smoothly between."""
    freqs = 1.0 / base ** (np.arange(0, dims, 2) / dims)
    wavelen = 2 * np.pi / freqs
    smooth = (original / wavelen - low) / (high - low)
    mid = 1.0 / ((1 - smooth) / factor + smooth)
    return np.where(wavelen < original / high, 1.0,
                    np.where(wavelen > original / low, factor, mid)).astype(np.float32)


def random_weights(config, seed):
    """Float32 weights of a tiny Llama, as NumPy arrays [out, in]."""
    rng = np.random.default_rng(seed)
    d, hd = config.width, config.head_dim
    q, kv, ff = config.heads * hd, config.kv_heads * hd, config.ffn

    def matrix(out, inp):
        return (rng.standard_normal((out, inp)) / np.sqrt(inp)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    w = {"token_embd.weight": rng.standard_normal((config.vocab, d)).astype(np.float32)}
    if config.rope_freqs:
        # The short context makes llama3's own factors all 1 at these
        # positions' scale: large ones, so that the test sees them.
        w["rope_freqs.weight"] = llama3_rope_factors(config.rope_dims or hd, config.rope_base, original=16)
    for layer in range(config.layers):
        b = f"blk.{layer}."
        w[b + "attn_norm.weight"] = norm(d)
        w[b + "attn_q.weight"] = matrix(q, d)
        w[b + "attn_k.weight"] = matrix(kv, d)
        w[b + "attn_v.weight"] = matrix(kv, d)
        if config.architecture == "qwen2":
            for name, n in (("attn_q.bias", q), ("attn_k.bias", kv), ("attn_v.bias", kv)):
                w[b + name] = (0.5 * rng.standard_normal(n)).astype(np.float32)
        if config.architecture == "qwen3":
            w[b + "attn_q_norm.weight"] = (1.0 + 0.3 * rng.standard_normal(hd)).astype(np.float32)
            w[b + "attn_k_norm.weight"] = (1.0 + 0.3 * rng.standard_normal(hd)).astype(np.float32)
        w[b + "attn_output.weight"] = matrix(d, q)
        w[b + "ffn_norm.weight"] = norm(d)
        w[b + "ffn_gate.weight"] = matrix(ff, d)
        w[b + "ffn_up.weight"] = matrix(ff, d)
        w[b + "ffn_down.weight"] = matrix(d, ff)
    w["output_norm.weight"] = norm(d)
    if not config.tied:
        w["output.weight"] = matrix(config.vocab, d) * 2.0
    return w


def stored(weights, weight_type):
    """What the file holds for each weight: (raw array for the writer,
    GGML type, the weights as the runner sees them after dequantization).
    weight_type: one type for every matrix, or a function of the weight's
    name giving its type."""
    out = {}
    type_of = weight_type if callable(weight_type) else (lambda name: weight_type)
    for name, w in weights.items():
        weight_type = type_of(name)
        if w.ndim == 1 or weight_type == "f32":
            out[name] = (w, None, w.astype(np.float32))
        elif weight_type == "f16":
            h = w.astype(np.float16)
            out[name] = (h, None, h.astype(np.float32))
        elif weight_type == "bf16":
            bits = bf16_bits(w)
            out[name] = (bits.view(np.uint8).reshape(w.shape[0], -1), "BF16", bf16_to_f32(bits))
        elif weight_type == "q8_0":
            raw = quantize_q8_0(w)
            out[name] = (raw, "Q8_0", dequantize_q8_0(raw, w.shape[1]))
        elif weight_type == "q4_0":
            raw = quantize_q4_0(w)
            out[name] = (raw, "Q4_0", dequantize_q4_0(raw, w.shape[1]))
        else:
            out[name] = quantize_block_type(w, weight_type)
    return out


def quantize_block_type(w, weight_type):
    """The other GGUF block types (q4_1, q5_0, q5_1, q2_k .. q6_k, iq4_nl,
    iq4_xs): encoded by gguf's quantizer where it has one, else by
    kp.quantize, and decoded by gguf's dequantizer (independent of the
    runner's decoders)."""
    from gguf import quants

    qtype = gguf.GGMLQuantizationType[weight_type.upper()]
    try:
        raw = quants.quantize(w, qtype)
    except NotImplementedError:
        import kp
        raw = kp.quantize(getattr(kp.WeightFormat, weight_type), w.reshape(-1)).reshape(w.shape[0], -1)
    seen = quants.dequantize(raw, qtype).astype(np.float32).reshape(w.shape)
    return raw, weight_type.upper(), seen


# llama-quantize's per-tensor mixes for a Llama layout (llm/include/kompute/
# llm/WeightMix.hpp): name -> the type of a weight of that name.
def use_more_bits(layer, layers):
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def mix(name, layers):
    """A function of a weight's name giving its type in mix `name`
    ("q4_k_m", "q5_k_m", "q6_k", "q4_0/q6_k")."""
    if "/" in name:
        base, output = name.split("/")
    else:
        base, output = {"q4_k_m": ("q4_k", "q6_k"), "q5_k_m": ("q5_k", "q6_k")}.get(name, (name, name))

    def type_of(weight):
        if weight == "output.weight":
            return output
        if name in ("q4_k_m", "q5_k_m") and weight.endswith(("attn_v.weight", "ffn_down.weight")):
            if use_more_bits(int(weight.split(".")[1]), layers):
                return "q6_k"
        return base
    return type_of


def simple_vocabulary(size):
    """A SentencePiece-style vocabulary: <unk> <s> </s>, the 256 byte
    tokens, then pieces made of letters, scored by length."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    scores = [0.0] * len(tokens)
    letters = "abcdefghijklmnopqrstuvwxyz"
    pieces = ["\u2581" + c for c in letters] + list(letters)
    for a in letters:
        for b in "aeiou":
            pieces.append(a + b)
    for piece in pieces:
        if len(tokens) >= size:
            break
        tokens.append(piece)
        types.append(1)
        scores.append(-float(len(tokens)))
    while len(tokens) < size:
        tokens.append(f"<unused{len(tokens)}>")
        types.append(5)
        scores.append(-1e9)
    return tokens, scores, types


def write_model(path, config, weight_type="f32", seed=0, alignment=None, extra=None,
                skip=(), override=None, architecture=None, control_tokens=(), bos=1, eos=2,
                renamed_tokens=None):
    """Writes a tiny GGUF file of config.architecture (`architecture`
    overrides the name written); returns the weights the runner sees
    (dequantized, float32), for reference_logits. control_tokens: texts of
    control tokens (chat markers such as "<|im_end|>") that take the last
    ids of the vocabulary; bos, eos: their ids (None: not in the file);
    renamed_tokens: {id: text} makes those tokens control tokens of that
    text (the weights stay as they are)."""
    need_gguf()
    weights = random_weights(config, seed)
    files = stored(weights, weight_type)
    if architecture is None:
        architecture = config.architecture
    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_name("tiny test llama")
    writer.add_context_length(config.context)
    writer.add_embedding_length(config.width)
    writer.add_block_count(config.layers)
    writer.add_feed_forward_length(config.ffn)
    writer.add_head_count(config.heads)
    writer.add_head_count_kv(config.kv_heads)
    writer.add_layer_norm_rms_eps(config.eps)
    writer.add_rope_freq_base(config.rope_base)
    if config.rope_dims:
        writer.add_rope_dimension_count(config.rope_dims)
    if config.key_length:
        writer.add_key_length(config.key_length)
        writer.add_value_length(config.key_length)
    if config.rope_scale:
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(config.rope_scale)
    if alignment:
        writer.add_custom_alignment(alignment)
    tokens, scores, types = simple_vocabulary(config.vocab - len(control_tokens))
    tokens += list(control_tokens)
    scores += [0.0] * len(control_tokens)
    types += [3] * len(control_tokens)
    for token, text in (renamed_tokens or {}).items():
        tokens[token], types[token], scores[token] = text, 3, 0.0
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    if bos is not None:
        writer.add_bos_token_id(bos)
    if eos is not None:
        writer.add_eos_token_id(eos)
    writer.add_unk_token_id(0)
    for key, value in (extra or {}).items():
        if isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, str):
            writer.add_string(key, value)
        elif isinstance(value, float):
            writer.add_float32(key, value)
        else:
            writer.add_uint32(key, value)
    for name, (raw, raw_type, _) in files.items():
        if name in skip:
            continue
        if override and name in override:
            raw, raw_type = override[name]
        if raw_type is None:
            writer.add_tensor(name, raw)
        else:
            writer.add_tensor(name, raw, raw_dtype=gguf.GGMLQuantizationType[raw_type])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return {name: seen for name, (_, _, seen) in files.items()}


# --- Reference forward pass ------------------------------------------------------------

def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def rope(x, positions, base, dims, neox=False, factors=None, scale=1.0):
    """Pair i of the first `dims` of each head rotates by position * scale *
    base^(-2i/dims) / factors[i]: in GGUF's llama layout the pairs are
    adjacent (x[2i], x[2i+1]), in the NeoX layout of qwen2/qwen3 they are
    (x[i], x[i + dims/2]). x: [tokens, heads, head_dim]."""
    out = x.copy()
    i = np.arange(dims // 2)
    freq = scale * base ** (-2.0 * i / dims)
    if factors is not None:
        freq = freq / factors
    angle = positions[:, None] * freq[None, :]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    if neox:
        first, second = x[:, :, 0:dims // 2], x[:, :, dims // 2:dims]
        out[:, :, 0:dims // 2] = first * cos - second * sin
        out[:, :, dims // 2:dims] = first * sin + second * cos
    else:
        even, odd = x[:, :, 0:dims:2], x[:, :, 1:dims:2]
        out[:, :, 0:dims:2] = even * cos - odd * sin
        out[:, :, 1:dims:2] = even * sin + odd * cos
    return out


def reference_logits(config, weights, tokens, kv_f16=True):
    """Logits [len(tokens), vocab] of teacher-forced tokens, in float64.
    With kv_f16 the keys and values are rounded to float16 as the runner's
    KV cache stores them."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    t = len(tokens)
    hd, nh, nkv = config.head_dim, config.heads, config.kv_heads
    dims = config.rope_dims or hd
    positions = np.arange(t, dtype=np.float64)
    x = w["token_embd.weight"][np.asarray(tokens)]
    mask = np.triu(np.full((t, t), -np.inf), 1)
    for layer in range(config.layers):
        b = f"blk.{layer}."
        h = rms_norm(x, w[b + "attn_norm.weight"], config.eps)
        q = h @ w[b + "attn_q.weight"].T
        k = h @ w[b + "attn_k.weight"].T
        v = h @ w[b + "attn_v.weight"].T
        if b + "attn_q.bias" in w:  # qwen2
            q, k, v = q + w[b + "attn_q.bias"], k + w[b + "attn_k.bias"], v + w[b + "attn_v.bias"]
        q, k, v = q.reshape(t, nh, hd), k.reshape(t, nkv, hd), v.reshape(t, nkv, hd)
        if b + "attn_q_norm.weight" in w:  # qwen3: every head on its own
            q = rms_norm(q, w[b + "attn_q_norm.weight"], config.eps)
            k = rms_norm(k, w[b + "attn_k_norm.weight"], config.eps)
        factors = w.get("rope_freqs.weight")
        scale = 1.0 / config.rope_scale if config.rope_scale else 1.0
        q = rope(q, positions, config.rope_base, dims, config.neox, factors, scale)
        k = rope(k, positions, config.rope_base, dims, config.neox, factors, scale)
        if kv_f16:
            k = k.astype(np.float16).astype(np.float64)
            v = v.astype(np.float16).astype(np.float64)
        attention = np.empty((t, nh, hd))
        for head in range(nh):
            g = head // (nh // nkv)
            scores = q[:, head, :] @ k[:, g, :].T / np.sqrt(hd) + mask
            scores -= scores.max(axis=1, keepdims=True)
            p = np.exp(scores)
            p /= p.sum(axis=1, keepdims=True)
            attention[:, head, :] = p @ v[:, g, :]
        x = x + attention.reshape(t, nh * hd) @ w[b + "attn_output.weight"].T
        h = rms_norm(x, w[b + "ffn_norm.weight"], config.eps)
        gate = h @ w[b + "ffn_gate.weight"].T
        up = h @ w[b + "ffn_up.weight"].T
        x = x + (gate / (1.0 + np.exp(-gate)) * up) @ w[b + "ffn_down.weight"].T
    x = rms_norm(x, w["output_norm.weight"], config.eps)
    out = w["output.weight"] if "output.weight" in w else w["token_embd.weight"]
    return x @ out.T
