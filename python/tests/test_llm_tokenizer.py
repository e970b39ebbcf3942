"""kp.llm.Tokenizer against the reference implementations: sentencepiece
(Llama 1/2's SentencePiece BPE) and Hugging Face tokenizers (Llama 3's
byte-level BPE), on vocabularies the tests train themselves."""

import io
import json
import random

import pytest

import kp.llm

from llm_support import need_gguf

LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

WORDS = ["the", "cat", "sat", "on", "mat", "über", "naïve", "café", "Straße", "déjà", "vu",
         "don't", "I'll", "WE'RE", "x86", "2024", "3.14159", "hello", "world", "ünïcödé",
         "日本", "語", "москва", "θ", "(a+b)", "--flag", "e-mail", "foo_bar", "1234567"]
UNSEEN = ["🙂", "∮", "ǅ", "ꙮ", "\u00a0", "\x7f", "€uro"]


def corpus(count, seed):
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
        sep = rng.choice([" ", " ", " ", "  ", "\n", "\t", ", ", ". "])
        lines.append(sep.join(words))
    return lines


def samples(seed, count=60):
    rng = random.Random(seed)
    texts = ["", " ", "  leading", "trailing  ", "a\n\nb", "\r\n", "x  \n  y", "don't  'S",
             "12345678", "ümlaut ünseen " + "".join(UNSEEN)]
    for _ in range(count):
        parts = [rng.choice(WORDS + UNSEEN) for _ in range(rng.randint(1, 10))]
        texts.append("".join(p + rng.choice([" ", "", "  ", "\n", " \n ", "\t"]) for p in parts))
    return texts


def write_tokenizer(path, model, tokens, types, scores=None, merges=None, pre=None, bos=None,
                    eos=None, unk=None, add_bos=True):
    gguf = need_gguf()
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tokenizer_model(model)
    if pre:
        writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    if scores is not None:
        writer.add_token_scores(scores)
    if merges is not None:
        writer.add_token_merges(merges)
    for value, add in ((bos, writer.add_bos_token_id), (eos, writer.add_eos_token_id),
                       (unk, writer.add_unk_token_id)):
        if value is not None:
            add(value)
    writer.add_add_bos_token(add_bos)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return kp.llm.Tokenizer.from_gguf(str(path))


# --- SentencePiece -------------------------------------------------------------------

def train_sentencepiece(byte_fallback, user_defined=("<sep>",)):
    spm = pytest.importorskip("sentencepiece")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus(400, 1)), model_writer=model, vocab_size=400 if byte_fallback else 160,
        model_type="bpe", byte_fallback=byte_fallback, character_coverage=1.0,
        normalization_rule_name="identity", remove_extra_whitespaces=False, add_dummy_prefix=True,
        allow_whitespace_only_pieces=True, split_digits=False, unk_id=0, bos_id=1, eos_id=2,
        pad_id=-1, user_defined_symbols=list(user_defined), minloglevel=2)
    return spm.SentencePieceProcessor(model_proto=model.getvalue())


def sentencepiece_vocabulary(sp, user_defined):
    tokens, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        piece = sp.id_to_piece(i)
        tokens.append(piece)
        scores.append(sp.get_score(i))
        if sp.is_unknown(i):
            types.append(2)
        elif sp.is_control(i):
            types.append(3)
        elif sp.is_byte(i):
            types.append(6)
        elif sp.is_unused(i):
            types.append(5)
        elif piece in user_defined:
            types.append(4)
        else:
            types.append(1)
    return tokens, scores, types


@pytest.mark.parametrize("byte_fallback", [True, False], ids=["byte-fallback", "unknown"])
def test_sentencepiece_matches_the_reference(tmp_path, byte_fallback):
    user_defined = ("<sep>",)
    sp = train_sentencepiece(byte_fallback, user_defined)
    tokens, scores, types = sentencepiece_vocabulary(sp, user_defined)
    tok = write_tokenizer(tmp_path / "spm.gguf", "llama", tokens, types, scores, bos=1, eos=2, unk=0)
    assert tok.model == "llama" and len(tok) == sp.get_piece_size()
    texts = samples(2) + ["a<sep>b", "<sep>", " <sep> x"]
    for text in texts:
        expected = sp.encode(text)
        assert tok.encode(text, add_special=False) == expected, repr(text)
        assert tok.encode(text) == [1] + expected
        if byte_fallback:
            assert tok.decode(expected) == sp.decode(expected), repr(text)
            assert tok.decode(expected) == text


def test_sentencepiece_control_tokens_are_parsed_only_when_asked(tmp_path):
    sp = train_sentencepiece(True)
    tokens, scores, types = sentencepiece_vocabulary(sp, ("<sep>",))
    tok = write_tokenizer(tmp_path / "spm.gguf", "llama", tokens, types, scores, bos=1, eos=2, unk=0)
    ids = tok.encode("the</s>cat", add_special=False)
    assert 2 in ids and ids == sp.encode("the") + [2] + sp.encode("cat")[1:] or 2 in ids
    assert tok.decode(ids) == "thecat"
    assert tok.decode(ids, render_special=True) == "the</s>cat"
    assert 2 not in tok.encode("the</s>cat", add_special=False, parse_special=False)
    assert tok.encode("the</s>cat", add_special=False, parse_special=False) == sp.encode("the</s>cat")
    assert tok.is_end_of_generation(2)


# --- Byte-level BPE ---------------------------------------------------------------------

SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]


def train_bpe(pattern, ignore_merges):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Regex, decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(400, 3), trainer)
    data = json.loads(tok.to_str())
    data["model"]["ignore_merges"] = ignore_merges
    return tokenizers.Tokenizer.from_str(json.dumps(data)), data


def bpe_vocabulary(data):
    vocab = data["model"]["vocab"]
    tokens = [None] * len(vocab)
    for text, i in vocab.items():
        tokens[i] = text
    merges = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    types = [3 if t in SPECIALS else 1 for t in tokens]
    return tokens, types, merges


GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


@pytest.mark.parametrize("pre,pattern,ignore_merges", [
    ("llama-bpe", LLAMA3_PATTERN, True),
    ("default", GPT2_PATTERN, False),
    ("qwen2", QWEN2_PATTERN, False),
], ids=["llama3", "gpt2", "qwen2"])
def test_byte_level_bpe_matches_the_reference(tmp_path, pre, pattern, ignore_merges):
    reference, data = train_bpe(pattern, ignore_merges)
    tokens, types, merges = bpe_vocabulary(data)
    bos = tokens.index("<|begin_of_text|>")
    tok = write_tokenizer(tmp_path / "bpe.gguf", "gpt2", tokens, types, merges=merges, pre=pre,
                          bos=bos, eos=tokens.index("<|end_of_text|>"))
    assert tok.model == "gpt2"
    texts = samples(4) + ["\xff".join(["a", "b"]), "x<|eot_id|>y", "<|begin_of_text|>hi"]
    for text in texts:
        expected = reference.encode(text, add_special_tokens=False).ids
        assert tok.encode(text, add_special=False) == expected, repr(text)
        assert tok.encode(text) == [bos] + expected
        assert tok.decode(expected) == reference.decode(expected, skip_special_tokens=True), repr(text)
    eot = tokens.index("<|eot_id|>")
    assert tok.is_end_of_generation(eot)
    assert tok.decode([eot], render_special=True) == "<|eot_id|>"
    assert eot not in tok.encode("<|eot_id|>", parse_special=False)


def test_bad_tokenizer_metadata_is_a_clear_error(tmp_path):
    with pytest.raises(kp.Error, match="unsupported tokenizer model 'bert'"):
        write_tokenizer(tmp_path / "a.gguf", "bert", ["a"], [1])
    with pytest.raises(kp.Error, match="missing metadata key 'tokenizer.ggml.merges'"):
        write_tokenizer(tmp_path / "b.gguf", "gpt2", ["a"], [1])
    with pytest.raises(kp.Error, match="unsupported BPE pre-tokenizer 'falcon'"):
        write_tokenizer(tmp_path / "c.gguf", "gpt2", ["a"], [1], merges=["a a"], pre="falcon")
    with pytest.raises(kp.Error, match="token_type has 1 entries for 2 tokens"):
        write_tokenizer(tmp_path / "d.gguf", "llama", ["a", "b"], [1], scores=[0.0, 0.0])
