"""The LLM runner's forward pass against a NumPy reference: tiny models
written as GGUF files in every weight type and architecture (llama with
Llama 3.1's rope_freqs or linear RoPE scaling, qwen2, qwen3), the logits of
every position, greedy generation, and clear errors for bad files.

Tolerances (largest absolute difference over the largest reference logit):
the reference rounds keys and values to float16 as the runner's KV cache
does; F32 weights must then agree to 5e-3 (the cooperative-matrix GEMM of
GPUs that have one rounds f32 activations to f16; lavapipe's paths compute
in f32 and agree to about 1e-6); F16 and BF16 weights to 2e-2 and 4e-2;
Q8_0 and Q4_0, compared with the reference on their dequantized weights (the
integer dot-product path also quantizes activations to 8 bits), to 3e-2. A
wrong layout, position or head mapping is off by the size of the logits.
"""

import os
import subprocess

import numpy as np
import pytest

import kp
import kp.llm

from llm_support import TinyConfig, need_gguf, random_weights, reference_logits, write_model

TOLERANCE = {"f32": 5e-3, "f16": 2e-2, "bf16": 4e-2, "q8_0": 3e-2, "q4_0": 3e-2}
PROMPT = [1, 40, 300 - 30, 7, 100, 5, 61, 200, 33, 12, 280, 3]


@pytest.fixture(scope="module")
def manager():
    mgr = kp.Manager()
    yield mgr
    mgr.destroy()


def relative_error(actual, expected):
    return float(np.max(np.abs(actual - expected)) / np.max(np.abs(expected)))


def greedy_reference(config, weights, prompt, count):
    tokens = list(prompt)
    out = []
    for _ in range(count):
        logits = reference_logits(config, weights, tokens)[-1]
        top = np.sort(logits)[-2:]
        out.append(int(np.argmax(logits)))
        tokens.append(out[-1])
        yield out[-1], float(top[1] - top[0])


@pytest.mark.parametrize("weight_type", list(TOLERANCE))
def test_logits_of_every_position_match_the_reference(tmp_path, manager, weight_type):
    need_gguf()
    config = TinyConfig()
    path = tmp_path / f"tiny-{weight_type}.gguf"
    weights = write_model(path, config, weight_type, seed=3)
    model = kp.llm.Model(str(path), manager=manager, context_size=64)
    assert model.config["weight_type"] == weight_type.upper()
    logits = model.logits(PROMPT)
    assert logits.shape == (len(PROMPT), config.vocab) and logits.dtype == np.float32
    expected = reference_logits(config, weights, PROMPT)
    assert relative_error(logits, expected) < TOLERANCE[weight_type]


@pytest.mark.parametrize("weight_type", ["f32", "q4_0"])
def test_greedy_generation_matches_the_reference_argmax(tmp_path, manager, weight_type):
    need_gguf()
    config = TinyConfig()
    path = tmp_path / "tiny.gguf"
    weights = write_model(path, config, weight_type, seed=5)
    model = kp.llm.Model(str(path), manager=manager, context_size=64)
    generated = model.generate(PROMPT[:6], n=6, temperature=0, ignore_eos=True)
    expected = list(greedy_reference(config, weights, PROMPT[:6], 6))
    scale = max(1.0, max(abs(m) for _, m in expected))
    for index, ((token, margin), got) in enumerate(zip(expected, generated)):
        if margin < TOLERANCE[weight_type] * 10 * scale:
            break  # the reference's top two are too close to call; stop comparing here
        assert got == token, f"token {index}"
    assert len(generated) == 6


def test_chunked_prompts_and_decoding_agree_with_teacher_forcing(tmp_path, manager):
    need_gguf()
    config = TinyConfig()
    path = tmp_path / "tiny.gguf"
    write_model(path, config, "f32", seed=7)
    whole = kp.llm.Model(str(path), manager=manager, context_size=64).logits(PROMPT)
    chunked = kp.llm.Model(str(path), manager=manager, context_size=64, batch_size=5)
    assert relative_error(chunked.logits(PROMPT), whole) < 1e-4
    chunked.reset()
    rows = [chunked.evaluate(PROMPT[:4], "all")]
    for token in PROMPT[4:]:
        rows.append(chunked.evaluate([token], "last"))
    assert chunked.position == len(PROMPT)
    assert relative_error(np.concatenate(rows), whole) < 1e-4


@pytest.mark.parametrize("variant", [
    dict(kv_heads=4), dict(kv_heads=1), dict(rope_dims=8), dict(tied=True),
    dict(rope_base=500000.0, heads=2, kv_heads=1),
], ids=["mha", "one-kv-head", "partial-rope", "tied-output", "llama3-rope"])
def test_model_variants(tmp_path, manager, variant):
    need_gguf()
    config = TinyConfig(**variant)
    path = tmp_path / "variant.gguf"
    weights = write_model(path, config, "f32", seed=11, alignment=64 if variant.get("tied") else None)
    model = kp.llm.Model(str(path), manager=manager, context_size=32)
    assert model.config["tied_output"] == config.tied
    assert relative_error(model.logits(PROMPT), reference_logits(config, weights, PROMPT)) < TOLERANCE["f32"]


ARCHITECTURES = {
    "llama31-rope-freqs": dict(rope_freqs=True, rope_base=500000.0),
    "llama-linear-rope": dict(rope_scale=4.0),
    "qwen2": dict(architecture="qwen2", tied=True),
    "qwen3": dict(architecture="qwen3", key_length=32),
    "qwen3-partial-rope": dict(architecture="qwen3", key_length=8, rope_dims=4, tied=True),
}


@pytest.mark.parametrize("weight_type", ["f32", "q8_0", "q4_0"])
@pytest.mark.parametrize("variant", list(ARCHITECTURES))
def test_architectures_match_the_reference(tmp_path, manager, variant, weight_type):
    # Every prompt position (the GEMM path), then decode steps (mat-vec)
    # after a prompt of 5; and the reference without what the layout adds is
    # far off, so the comparison sees whether it is applied.
    need_gguf()
    config = TinyConfig(**ARCHITECTURES[variant])
    path = tmp_path / f"{variant}.gguf"
    weights = write_model(path, config, weight_type, seed=17)
    model = kp.llm.Model(str(path), manager=manager, context_size=32)
    info = model.config
    assert info["architecture"] == config.architecture and info["head_dim"] == config.head_dim
    assert info["rope_freqs"] == config.rope_freqs and info["tied_output"] == config.tied
    assert info["type_counts"].get(weight_type.upper(), 0) > 0 and weight_type.upper() in info["type_mix"]
    assert config.architecture in repr(model)
    expected = reference_logits(config, weights, PROMPT)
    assert relative_error(model.logits(PROMPT), expected) < TOLERANCE[weight_type]
    model.reset()
    model.evaluate(PROMPT[:5], "none")
    rows = [model.evaluate([token], "last") for token in PROMPT[5:]]
    assert relative_error(np.concatenate(rows), expected[5:]) < TOLERANCE[weight_type]
    plain = TinyConfig(**{k: v for k, v in ARCHITECTURES[variant].items() if k in ("key_length", "rope_dims", "tied", "rope_base")})
    llama_weights = {k: v for k, v in weights.items() if k in random_weights(plain, 0)}
    assert relative_error(expected, reference_logits(plain, llama_weights, PROMPT)) > max(0.05, 3 * TOLERANCE[weight_type])


def test_type_mix_of_a_mixed_file(tmp_path, manager):
    need_gguf()
    config = TinyConfig()
    path = tmp_path / "mix.gguf"
    write_model(path, config, lambda name: "q8_0" if name.endswith("ffn_down.weight") else "q4_0", seed=2)
    model = kp.llm.Model(str(path), manager=manager, context_size=16)
    # 2 layers: 2 Q8_0 down matrices; 6 other matrices per layer, token_embd
    # and output in Q4_0; 5 norm weights in F32.
    assert model.config["type_counts"] == {"Q4_0": 14, "Q8_0": 2, "F32": 5}
    assert model.config["type_mix"] == "14 Q4_0, 5 F32, 2 Q8_0"
    assert model.config["weight_type"] == "Q4_0"


def test_mixed_weight_types(tmp_path, manager):
    # Files mix types (llama.cpp's quantizations keep some matrices wider):
    # a value matrix unlike its query and key, or an up matrix unlike its
    # gate, keeps its own tensor, and the step writes each product into its
    # columns of the shared activations (prefill and decode alike).
    need_gguf()
    config = TinyConfig()
    path = tmp_path / "mixed.gguf"
    wider = ("attn_v.weight", "ffn_up.weight")
    weights = write_model(path, config, lambda name: "q8_0" if name.endswith(wider) else "f16", seed=5)
    model = kp.llm.Model(str(path), manager=manager, context_size=32)
    assert relative_error(model.logits(PROMPT), reference_logits(config, weights, PROMPT)) < TOLERANCE["q8_0"]
    expected = reference_logits(config, weights, PROMPT)[-1]
    model.reset()
    model.evaluate(PROMPT[:-1], "none")
    assert relative_error(model.evaluate(PROMPT[-1:], "last")[0], expected) < TOLERANCE["q8_0"]


# Every block type alone, and the mixes llama-quantize writes (Q4_K_M,
# Q5_K_M, Q6_K, and Q4_0 with its output.weight in Q6_K): a model 256 wide,
# so that rows are whole super-blocks, against the reference on gguf's
# dequantization of the same blocks.
BLOCK_TOLERANCE = {"q4_1": 3e-2, "q5_0": 3e-2, "q5_1": 3e-2, "q2_k": 6e-2, "q3_k": 4e-2, "q4_k": 3e-2,
                   "q5_k": 3e-2, "q6_k": 3e-2, "iq4_nl": 3e-2, "iq4_xs": 3e-2, "q4_k_m": 3e-2, "q5_k_m": 3e-2,
                   "q4_0/q6_k": 3e-2}


@pytest.mark.parametrize("weight_type", list(BLOCK_TOLERANCE))
def test_block_types_and_llama_quantize_mixes(tmp_path, manager, weight_type):
    need_gguf()
    from llm_support import mix

    config = TinyConfig(width=256, ffn=512, layers=3)
    path = tmp_path / "blocks.gguf"
    weights = write_model(path, config, mix(weight_type, config.layers), seed=13)
    model = kp.llm.Model(str(path), manager=manager, context_size=32)
    types = model.config["type_counts"]
    assert types.get("Q6_K", 0) >= (1 if "6" in weight_type or weight_type.endswith("_m") else 0)
    logits = model.logits(PROMPT)
    expected = reference_logits(config, weights, PROMPT)
    assert relative_error(logits, expected) < BLOCK_TOLERANCE[weight_type]
    model.reset()
    model.evaluate(PROMPT[:-1], "none")  # then one decode step (the mat-vec)
    assert relative_error(model.evaluate(PROMPT[-1:], "last")[0], expected[-1]) < BLOCK_TOLERANCE[weight_type]


@pytest.mark.parametrize("mix_name", ["q4_k_m", "q5_k_m", "q6_k", "q4_0/q6_k"])
@pytest.mark.parametrize("architecture", ["llama", "qwen2", "qwen3"])
def test_every_architecture_in_the_usual_mixes(tmp_path, manager, architecture, mix_name):
    # The files people download (Q4_K_M, Q5_K_M, Q6_K, Q4_0 with a Q6_K
    # output) of each layout: qwen2's biases (tied output, so the embedding
    # is the output matrix too) and qwen3's head norms beside K-quant
    # products; every prompt position and a decode step.
    need_gguf()
    from llm_support import mix

    layout = {"llama": dict(), "qwen2": dict(architecture="qwen2", tied=True),
              "qwen3": dict(architecture="qwen3", key_length=128)}[architecture]
    config = TinyConfig(width=256, ffn=512, layers=3, **layout)
    path = tmp_path / f"{architecture}.gguf"
    weights = write_model(path, config, mix(mix_name, config.layers), seed=19)
    model = kp.llm.Model(str(path), manager=manager, context_size=32)
    assert model.config["architecture"] == architecture
    assert model.config["type_counts"].get("Q6_K", 0) >= (0 if config.tied and mix_name == "q4_0/q6_k" else 1)
    expected = reference_logits(config, weights, PROMPT)
    assert relative_error(model.logits(PROMPT), expected) < BLOCK_TOLERANCE[mix_name]
    model.reset()
    model.evaluate(PROMPT[:-1], "none")
    assert relative_error(model.evaluate(PROMPT[-1:], "last")[0], expected[-1]) < BLOCK_TOLERANCE[mix_name]


@pytest.mark.parametrize("mix_name", ["q4_k_m", "q5_k_s", "q4_0/q6_k", "iq4_xs"])
def test_random_mixes(manager, mix_name):
    model = kp.llm.Model(random="tiny:" + mix_name, manager=manager, context_size=16)
    types = model.config["type_counts"]
    assert types["F32"] == 5 and sum(types.values()) == 5 + 2 * 7 + 2  # norms, layers, embedding and output
    if mix_name in ("q4_k_m", "q4_0/q6_k"):
        assert types["Q6_K"] >= 1  # output.weight at least
    tokens = model.generate([1, 2, 3], n=3, temperature=0)
    assert len(tokens) == 3 and all(0 <= t < 1024 for t in tokens)


def test_random_weights_and_bad_input(manager):
    model = kp.llm.Model(random="tiny:q8_0", manager=manager, context_size=16)
    assert model.tokenizer is None and model.config["vocab_size"] == 1024
    first = model.generate([1, 2, 3], n=4, temperature=0)
    assert len(first) == 4 and first == model.generate([1, 2, 3], n=4, temperature=0)
    sampled = model.generate([1, 2, 3], n=4, temperature=1.0, seed=9)
    assert sampled == model.generate([1, 2, 3], n=4, temperature=1.0, seed=9)
    with pytest.raises(kp.Error, match="outside the vocabulary"):
        model.evaluate([5000])
    model.reset()
    with pytest.raises(kp.Error, match="the context is full"):
        model.evaluate(list(range(17)))
    assert model.position == 0
    with pytest.raises(kp.Error, match=r"the prompt \(3 tokens\) and n=15 do not fit into the context of 16 tokens"):
        model.generate([1, 2, 3], n=15)
    assert len(model.generate([1, 2, 3], n=14, temperature=0)) == 14
    with pytest.raises(kp.Error, match="unknown model shape 'huge'"):
        kp.llm.Model(random="huge:f16", manager=manager)
    with pytest.raises(kp.Error, match="unknown weight type 'q8_k'"):
        kp.llm.Model(random="tiny:q8_k", manager=manager)


def test_bad_files_are_clear_errors(tmp_path, manager):
    need_gguf()
    config = TinyConfig()
    good = tmp_path / "good.gguf"
    write_model(good, config, "q8_0")
    data = good.read_bytes()
    cases = {
        "truncated": (data[: len(data) - 700], "ends past the end of the file"),
        "magic": (b"GGML" + data[4:], "not a GGUF file"),
        "header": (data[:30], "truncated"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / f"{name}.gguf"
        path.write_bytes(content)
        with pytest.raises(kp.Error, match=message):
            kp.llm.Model(str(path), manager=manager)
    arch = tmp_path / "arch.gguf"
    write_model(arch, config, "f32", architecture="mamba")
    with pytest.raises(kp.Error, match="unsupported architecture 'mamba' \\(general.architecture\\)"):
        kp.llm.Model(str(arch), manager=manager)
    # No general.architecture at all (GGUFWriter always writes one: drop it
    # by renaming the key in the bytes, same length).
    no_arch = tmp_path / "no-arch.gguf"
    no_arch.write_bytes(data.replace(b"general.architecture", b"general.architectury", 1))
    with pytest.raises(kp.Error, match="missing metadata key 'general.architecture'"):
        kp.llm.Model(str(no_arch), manager=manager)
    # qwen2's biases in a file that says llama: no llama layer reads them.
    extra_tensor = tmp_path / "extra-tensor.gguf"
    write_model(extra_tensor, TinyConfig(architecture="qwen2"), "f32", architecture="llama")
    with pytest.raises(kp.Error, match="tensor 'blk.0.attn_q.bias' is not part of a llama model"):
        kp.llm.Model(str(extra_tensor), manager=manager)
    no_norm = tmp_path / "no-norm.gguf"
    write_model(no_norm, TinyConfig(architecture="qwen3"), "f32", skip={"blk.1.attn_k_norm.weight"})
    with pytest.raises(kp.Error, match="missing tensor 'blk.1.attn_k_norm.weight' \\(shape \\[16\\]\\)"):
        kp.llm.Model(str(no_norm), manager=manager)
    unknown_key = tmp_path / "unknown-key.gguf"
    write_model(unknown_key, config, "f32", extra={"llama.attention.sliding_window": 4096})
    with pytest.raises(kp.Error, match="metadata key 'llama.attention.sliding_window' is not understood"):
        kp.llm.Model(str(unknown_key), manager=manager)
    yarn = tmp_path / "yarn.gguf"
    write_model(yarn, config, "f32", extra={"llama.rope.scaling.type": "yarn", "llama.rope.scaling.factor": 4.0})
    with pytest.raises(kp.Error, match="unsupported RoPE scaling 'yarn' \\(llama.rope.scaling.type\\)"):
        kp.llm.Model(str(yarn), manager=manager)
    missing = tmp_path / "missing.gguf"
    write_model(missing, config, "f32", skip={"blk.1.ffn_up.weight"})
    with pytest.raises(kp.Error, match="missing tensor 'blk.1.ffn_up.weight'"):
        kp.llm.Model(str(missing), manager=manager)
    shape = tmp_path / "shape.gguf"
    write_model(shape, config, "f32", override={"blk.0.attn_k.weight": (np.zeros((16, 64), np.float32), None)})
    with pytest.raises(kp.Error, match=r"'blk.0.attn_k.weight' has shape \[64, 16\], but the model's metadata needs \[64, 32\]"):
        kp.llm.Model(str(shape), manager=manager)
    q5 = tmp_path / "q5_0.gguf"  # a block format the runner does not read: 22 bytes per 32 weights
    write_model(q5, config, "f32", override={"blk.0.ffn_down.weight": (np.zeros((64, 96), np.int8), "I8")})
    with pytest.raises(kp.Error, match="'blk.0.ffn_down.weight' has type I8, which this runner does not support"):
        kp.llm.Model(str(q5), manager=manager)
    with pytest.raises(kp.Error, match="cannot open"):
        kp.llm.Model(str(tmp_path / "absent.gguf"), manager=manager)


# --- The command-line program ------------------------------------------------------------

KOMPUTE_LLM = os.environ.get("KOMPUTE_LLM")
needs_cli = pytest.mark.skipif(not KOMPUTE_LLM, reason="KOMPUTE_LLM (the path of kompute-llm) is not set")


@needs_cli
def test_cli_dump_logits_and_generation(tmp_path):
    need_gguf()
    config = TinyConfig()
    path = tmp_path / "tiny.gguf"
    weights = write_model(path, config, "f16", seed=13)
    out = tmp_path / "logits.npy"
    ids = ",".join(map(str, PROMPT))
    subprocess.run([KOMPUTE_LLM, "--model", str(path), "--tokens", ids, "-n", "0", "--dump-logits", str(out)],
                   check=True)
    logits = np.load(out)
    assert logits.shape == (len(PROMPT), config.vocab) and logits.dtype == np.float32
    assert relative_error(logits, reference_logits(config, weights, PROMPT)) < TOLERANCE["f16"]
    # Random weights pick byte tokens that need not make valid UTF-8: the
    # bytes are printed as they come.
    run = subprocess.run([KOMPUTE_LLM, "-m", str(path), "-p", "ab ba", "-n", "5", "--temp", "0", "--ignore-eos"],
                         check=True, capture_output=True)
    assert run.stdout.startswith(b"ab ba")
    bad = subprocess.run([KOMPUTE_LLM, "-m", str(tmp_path / "none.gguf"), "-p", "x"], capture_output=True, text=True)
    assert bad.returncode == 1 and "cannot open" in bad.stderr
    usage = subprocess.run([KOMPUTE_LLM, "--tokens", "1"], capture_output=True, text=True)
    assert usage.returncode == 2 and "--model" in usage.stderr


@needs_cli
def test_cli_runs_a_qwen3_file_and_shows_its_type_mix(tmp_path):
    need_gguf()
    config = TinyConfig(architecture="qwen3", key_length=32)
    path = tmp_path / "qwen3.gguf"
    weights = write_model(path, config, lambda name: "q8_0" if name.endswith("ffn_down.weight") else "q4_0", seed=19)
    out = tmp_path / "logits.npy"
    ids = ",".join(map(str, PROMPT))
    run = subprocess.run([KOMPUTE_LLM, "-m", str(path), "--tokens", ids, "-n", "0", "--dump-logits", str(out), "-v"],
                         check=True, capture_output=True, text=True)
    assert "(qwen3)" in run.stderr and "of size 32" in run.stderr, run.stderr
    assert "tensor types: 14 Q4_0, 9 F32, 2 Q8_0" in run.stderr, run.stderr
    assert relative_error(np.load(out), reference_logits(config, weights, PROMPT)) < TOLERANCE["q4_0"]
    bench = subprocess.run([KOMPUTE_LLM, "-m", str(path), "--bench", "--bench-prompt", "8", "--bench-gen", "2",
                            "--reps", "1"], capture_output=True, text=True)
    assert bench.returncode == 0 and "pp8" in bench.stdout and "tg2" in bench.stdout, bench.stderr


@needs_cli
def test_cli_bench_json(tmp_path):
    out = tmp_path / "bench.json"
    subprocess.run([KOMPUTE_LLM, "--random", "tiny:q4_0", "--bench", "--bench-prompt", "16", "--bench-gen", "4",
                    "--reps", "2", "--json", str(out)], check=True, capture_output=True)
    import json
    results = json.loads(out.read_text())
    assert [r["test"] for r in results] == ["pp16", "tg4"]
    assert all(r["tokens_per_second"] > 0 and r["repetitions"] == 2 for r in results)
    assert all(r["n_depth"] == 0 for r in results)
    # --bench-depth: the generation after that many cached tokens
    # (llama-bench's -d), beyond the context the model's file gives.
    deep = tmp_path / "deep.json"
    subprocess.run([KOMPUTE_LLM, "--random", "tiny:q4_0", "--bench", "--bench-prompt", "0", "--bench-gen", "3",
                    "--bench-depth", "40", "--reps", "1", "--json", str(deep)], check=True, capture_output=True)
    results = json.loads(deep.read_text())
    assert [(r["test"], r["n_gen"], r["n_depth"]) for r in results] == [("tg3 @ d40", 3, 40)]
    assert results[0]["tokens_per_second"] > 0
    nothing = subprocess.run([KOMPUTE_LLM, "--random", "tiny:f32", "--bench", "--bench-prompt", "0", "--bench-gen", "0"],
                             capture_output=True, text=True)
    assert nothing.returncode == 2 and "--bench needs --bench-prompt or --bench-gen above 0" in nothing.stderr
    # --profile after the bench: the prompt and one decode step, each with
    # its GPU time per operation (it used to fill the bench's context).
    profiled = subprocess.run([KOMPUTE_LLM, "--random", "tiny:q8_0", "--bench", "--bench-prompt", "16",
                               "--bench-gen", "2", "--reps", "1", "--profile"], capture_output=True, text=True)
    assert profiled.returncode == 0, profiled.stderr
    assert "profile of pp16:" in profiled.stderr and "profile of one tg step:" in profiled.stderr
