"""Chat templates and chat: the templates of Llama 3, Qwen2.5 (ChatML) and
Mistral written into tiny GGUF files, rendered by kp.llm, compared with the
prompt formats written out by hand and with transformers'
apply_chat_template on the same template and special tokens (skipped where
transformers is not installed; scripts/test-python.sh installs it); the
replies of Model.chat against Model.generate on the rendered prompt; the
end of a turn found in the template; the chat loop of python -m
kp.llm.chat and kompute-llm --chat.

The tiny files' vocabulary is SentencePiece-like whatever the family (the
template's text does not depend on the tokenizer model); the families'
control tokens are in it, so their markers become single tokens.
"""

import os
import subprocess
import sys

import pytest

import kp
import kp.llm

from chat_templates import CONVERSATION, FAMILIES, MISTRAL, family
from llm_support import TinyConfig, need_gguf, write_model

pytest.importorskip("jinja2")

CONFIG = TinyConfig(context=256)
TIMEOUT = 60  # seconds, for each program the tests run


@pytest.fixture(scope="module")
def manager():
    mgr = kp.Manager()
    yield mgr
    mgr.destroy()


def family_file(path, name, seed=3, template=None):
    """A tiny model with the family's template and control tokens; BOS and
    EOS are the family's tokens."""
    need_gguf()
    spec = family(name)
    control = spec["control"]
    first_control = CONFIG.vocab - len(control)

    def token_id(text):
        if text in control:
            return first_control + control.index(text)
        return {None: None, "<s>": 1, "</s>": 2}[text]

    extra = {"tokenizer.ggml.add_bos_token": spec["add_bos"]}
    chat_template = spec["template"] if template is None else template
    if chat_template:
        extra["tokenizer.chat_template"] = chat_template
    write_model(path, CONFIG, "f32", seed=seed, extra=extra, control_tokens=control,
                bos=token_id(spec["bos"]), eos=token_id(spec["eos"]))
    return path


def special_tokens_of(spec):
    tokens = {"unk_token": "<unk>", "eos_token": spec["eos"]}
    if spec["bos"]:
        tokens["bos_token"] = spec["bos"]
    return tokens


# --- Rendering ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", FAMILIES)
def test_templates_give_the_families_prompt_format(tmp_path, manager, name):
    spec = family(name)
    model = kp.llm.Model(str(family_file(tmp_path / f"{name}.gguf", name)), manager=manager, context_size=64)
    template = model.chat_template()
    assert template.special_tokens == special_tokens_of(spec)
    assert model.apply_chat_template(spec["messages"], add_generation_prompt=True) == spec["expected"]
    assert template.end_of_turn == spec["end_of_turn"]

    ids = model.apply_chat_template(spec["messages"], add_generation_prompt=True, tokenize=True)
    tokenizer = model.tokenizer
    for marker in spec["control"] + ["<s>"]:
        if marker in spec["expected"]:  # each marker is one token, as often as the text has it
            token = tokenizer.encode(marker, add_special=False)
            assert len(token) == 1 and ids.count(token[0]) == spec["expected"].count(marker), marker
    # BOS once: the template writes it, and nothing adds another.
    if spec["bos"]:
        assert ids[0] == tokenizer.bos and ids.count(tokenizer.bos) == 1
    else:
        assert ids[0] != tokenizer.bos
    # (The SentencePiece vocabulary puts a space before the text that
    # follows a control token, as llama.cpp's does: compare without spaces.)
    assert tokenizer.decode(ids, render_special=True).replace(" ", "") == spec["expected"].replace(" ", "")


def test_bos_is_added_when_the_template_leaves_it_out(tmp_path, manager):
    path = family_file(tmp_path / "plain.gguf", "mistral", template="{% for m in messages %}{{ m.content }}\n{% endfor %}")
    model = kp.llm.Model(str(path), manager=manager, context_size=64)
    ids = model.apply_chat_template([{"role": "user", "content": "ab"}], tokenize=True)
    assert ids[0] == model.tokenizer.bos and ids[1:] == model.tokenizer.encode("ab\n", add_special=False)


@pytest.fixture(scope="module")
def transformers_tokenizer():
    """A transformers tokenizer with given special tokens and template (its
    vocabulary is irrelevant: only the template's text is compared)."""
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")

    def make(template, special_tokens):
        vocabulary = {"<unk>": 0}
        for text in special_tokens.values():
            vocabulary.setdefault(text, len(vocabulary))
        backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocabulary, unk_token="<unk>"))
        tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, **special_tokens)
        tokenizer.chat_template = template
        return tokenizer

    return make


TOOL = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                         "parameters": {"type": "object",
                                                        "properties": {"city": {"type": "string"}},
                                                        "required": ["city"]}}}
TOOL_CONVERSATION = [
    {"role": "user", "content": "Weather in Zürich?"},
    {"role": "assistant", "content": "",
     "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich"}}}]},
    {"role": "tool", "content": "{\"temperature\": 21}"},
    {"role": "tool", "content": "<sunny> & \"dry\""},
    {"role": "assistant", "content": "21 degrees, sunny."},
]


@pytest.mark.parametrize("name", FAMILIES)
def test_templates_render_as_transformers_renders_them(tmp_path, manager, transformers_tokenizer, name):
    spec = family(name)
    model = kp.llm.Model(str(family_file(tmp_path / f"{name}.gguf", name)), manager=manager, context_size=64)
    reference = transformers_tokenizer(spec["template"], special_tokens_of(spec))
    conversations = [spec["messages"], spec["messages"][:2], [m for m in spec["messages"] if m["role"] == "user"][:1]]
    if name == "qwen2.5":
        conversations.append(TOOL_CONVERSATION)
    for messages in conversations:
        for add_generation_prompt in (False, True):
            expected = reference.apply_chat_template(messages, tokenize=False,
                                                     add_generation_prompt=add_generation_prompt)
            assert model.apply_chat_template(messages, add_generation_prompt=add_generation_prompt) == expected
    if name == "qwen2.5":
        expected = reference.apply_chat_template(CONVERSATION, tools=[TOOL], tokenize=False, add_generation_prompt=True)
        assert model.apply_chat_template(CONVERSATION, add_generation_prompt=True, tools=[TOOL]) == expected
        assert '"description": "The weather in a city"' in expected and "Zürich" not in expected


FEATURES = """{%- set state = namespace(count=0) -%}
{%- for message in messages -%}
{%- if loop.index > 3 %}{% break %}{% endif -%}
{%- if message.role == 'system' %}{% continue %}{% endif -%}
{%- set state.count = state.count + 1 -%}
  {% generation %}[{{ message.role }}] {{ message.content | tojson }}{% endgeneration %}
{% endfor -%}
{{ tools | tojson(indent=2) }} {{ {"b": 1, "a": [1.5, none, true]} | tojson(sort_keys=true) }}
{{ state.count }} {{ bos_token }}{{ eos_token }}{{ unk_token }} year {{ strftime_now('%Y') }} {{ custom_flag }}
{% if documents %}{% for document in documents %}{{ document.title }}{% endfor %}{% endif %}
{%- if add_generation_prompt %}  >>>{% endif %}"""


def test_template_features_match_transformers(tmp_path, manager, transformers_tokenizer):
    # tojson as json.dumps (no HTML escaping, non-ASCII kept, indent and
    # sort_keys), loop controls, namespace, {% generation %},
    # trim_blocks/lstrip_blocks, strftime_now, tools, documents and a
    # variable of the caller.
    path = family_file(tmp_path / "features.gguf", "mistral", template=FEATURES)
    model = kp.llm.Model(str(path), manager=manager, context_size=64)
    reference = transformers_tokenizer(FEATURES, special_tokens_of(family("mistral")))
    messages = [{"role": "system", "content": "skipped"}, {"role": "user", "content": "é <b>&'\"\n"},
                {"role": "assistant", "content": "ok"}, {"role": "user", "content": "after the break"}]
    documents = [{"title": "One", "text": "1"}, {"title": "Two", "text": "2"}]
    expected = reference.apply_chat_template(messages, tools=[TOOL], documents=documents, tokenize=False,
                                             add_generation_prompt=True, custom_flag="on")
    rendered = model.apply_chat_template(messages, add_generation_prompt=True, tools=[TOOL], documents=documents,
                                         custom_flag="on")
    assert rendered == expected
    assert '"é <b>&\'\\"\\n"' in rendered and "after the break" not in rendered
    # transformers raises the template's raise_exception() message too.
    import jinja2
    with pytest.raises(jinja2.TemplateError, match="Conversation roles must alternate user/assistant"):
        transformers_tokenizer(MISTRAL, special_tokens_of(family("mistral"))).apply_chat_template(
            TWO_USERS, tokenize=False)


TWO_USERS = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]


def test_template_errors_are_clear(tmp_path, manager):
    path = family_file(tmp_path / "mistral.gguf", "mistral")
    model = kp.llm.Model(str(path), manager=manager, context_size=64)
    with pytest.raises(kp.llm.ChatTemplateError, match="Conversation roles must alternate user/assistant"):
        model.apply_chat_template(TWO_USERS)
    with pytest.raises(kp.llm.ChatTemplateError, match="Only user and assistant roles are supported"):
        model.chat(family("mistral")["messages"] + [{"role": "system", "content": "x"}])
    with pytest.raises(kp.llm.ChatTemplateError, match=r"does not compile: .*line 1"):
        model.chat_template("{% for m in messages %}{{ m.content }")
    with pytest.raises(kp.llm.ChatTemplateError, match="failed on these messages: UndefinedError"):
        model.apply_chat_template([{"role": "user"}], template="{{ messages[0].content.upper() }}")
    with pytest.raises(TypeError, match=r"messages\[1\] must be a dict"):
        model.chat([{"role": "user", "content": "a"}, "b"])
    with pytest.raises(TypeError, match="messages must be a list of dicts"):
        model.chat("Hello")
    # The sandbox: a template cannot reach Python's internals.
    with pytest.raises(kp.llm.ChatTemplateError, match="SecurityError"):
        model.apply_chat_template([], template="{{ ''.__class__.__mro__ }}")
    with pytest.raises(kp.llm.ChatTemplateError, match="SecurityError"):
        model.apply_chat_template([{"role": "user", "content": "a"}], template="{{ messages.append(1) }}")


def test_a_file_without_a_template_is_a_clear_error(tmp_path, manager):
    path = family_file(tmp_path / "bare.gguf", "mistral", template="")
    model = kp.llm.Model(str(path), manager=manager, context_size=64)
    assert model.file.get("tokenizer.chat_template") is None
    with pytest.raises(kp.llm.ChatTemplateError, match=r"bare.gguf has no chat template .*give one with template="):
        model.chat([{"role": "user", "content": "hi"}])
    reply = model.chat([{"role": "user", "content": "hi"}], template=MISTRAL, n=3, temperature=0)
    assert isinstance(reply, str)
    random = kp.llm.Model(random="tiny:f32", manager=manager, context_size=16)
    with pytest.raises(ValueError, match="random weights has no tokenizer"):
        random.chat([{"role": "user", "content": "hi"}])


# --- Replies ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", FAMILIES)
def test_chat_replies_are_what_generate_makes_of_the_prompt(tmp_path, manager, name):
    spec = family(name)
    model = kp.llm.Model(str(family_file(tmp_path / f"{name}.gguf", name, seed=5)), manager=manager,
                         context_size=128)
    prompt = model.apply_chat_template(spec["messages"], add_generation_prompt=True, tokenize=True)
    expected = model.generate(prompt, n=10, temperature=0)
    assert model.chat(spec["messages"], n=10, temperature=0) == model.tokenizer.decode(expected)
    generation = model.chat(spec["messages"], n=10, temperature=0, stream=True)
    assert isinstance(generation, kp.llm.Generation) and generation.finish_reason is None
    pieces = list(generation)
    assert "".join(pieces) == generation.text == model.tokenizer.decode(expected)
    assert generation.tokens == expected and generation.prompt_tokens == prompt
    assert generation.finish_reason == ("length" if len(expected) == 10 else "stop")
    # Sampling with a seed repeats itself.
    sampled = model.chat(spec["messages"], n=10, temperature=1.0, seed=42)
    assert sampled == model.chat(spec["messages"], n=10, temperature=1.0, seed=42)


def test_stop_strings_cut_the_reply(tmp_path, manager):
    model = kp.llm.Model(str(family_file(tmp_path / "qwen.gguf", "qwen2.5", seed=5)), manager=manager,
                         context_size=128)
    messages = [{"role": "user", "content": "Tell me"}]
    full = model.chat(messages, n=16, temperature=0)
    # A stop string from the middle of the reply, of ordinary characters.
    at = next(i for i in range(3, len(full) - 1) if full[i:i + 2].isprintable() and "\ufffd" not in full[i:i + 2])
    stop = full[at:at + 2]
    generation = model.chat(messages, n=16, temperature=0, stop=["never there", stop], stream=True)
    assert "".join(generation) == full[:full.find(stop)] == generation.text
    assert generation.finish_reason == "stop" and generation.completion_tokens < 16
    with pytest.raises(kp.Error, match=r"do not fit into the context of 128 tokens"):
        model.chat(messages, n=1000)


def test_chat_stops_at_the_templates_end_of_turn(tmp_path, manager):
    # A template whose turns end with a marker the tokenizer does not know
    # as an end of generation: the reply stops there because the template
    # puts it after an assistant's message. The model's weights are random,
    # so the marker is given the id of a token the model picks: the same
    # weights, with one vocabulary entry renamed.
    template = ("{% for m in messages %}{% if m.role == 'user' %}<|user|>{{ m.content }}<|assistant|>"
                "{% else %}{{ m.content }}<|turn_end|>{% endif %}{% endfor %}")
    need_gguf()
    messages = [{"role": "user", "content": "hi"}]
    markers = ["<|user|>", "<|assistant|>", "<|turn_end|>"]
    first = tmp_path / "first.gguf"
    write_model(first, CONFIG, "f32", seed=9, extra={"tokenizer.chat_template": template}, control_tokens=markers)
    model = kp.llm.Model(str(first), manager=manager, context_size=64)
    assert model.chat_template().end_of_turn == "<|turn_end|>"
    prompt = model.apply_chat_template(messages, tokenize=True)
    generation = model.chat(messages, n=8, temperature=0, stream=True)
    generation.read()
    tokens = generation.tokens
    assert len(tokens) == 8
    # A later token that is an ordinary piece (not a byte, control or prompt token) becomes the marker.
    at = next(i for i in range(2, 8) if 259 <= tokens[i] < CONFIG.vocab - 3 and tokens[i] not in prompt + tokens[:i])
    second = tmp_path / "second.gguf"
    write_model(second, CONFIG, "f32", seed=9, extra={"tokenizer.chat_template": template},
                control_tokens=["<|user|>", "<|assistant|>", "<|spare|>"], renamed_tokens={tokens[at]: "<|turn_end|>"})
    renamed = kp.llm.Model(str(second), manager=manager, context_size=64)
    assert renamed.apply_chat_template(messages, tokenize=True) == prompt
    assert not renamed.tokenizer.is_end_of_generation(tokens[at])
    stopped = renamed.chat(messages, n=8, temperature=0, stream=True)
    assert "".join(stopped) == renamed.tokenizer.decode(tokens[:at])
    assert stopped.tokens == tokens[:at] and stopped.finish_reason == "stop"


# --- The chat loop ------------------------------------------------------------------------

def expected_transcript(model, turns, n):
    messages, out = [], ""
    for text in turns:
        messages.append({"role": "user", "content": text})
        reply = model.chat(messages, n=n, temperature=0)
        messages.append({"role": "assistant", "content": reply})
        out += reply + "\n"
    return out


def run_chat(command, turns, extra_env=None):
    # Only errors logged: "[validation]" below is then a validation error,
    # not one of the layer's warnings (the H200's layer warns at every device).
    env = dict(os.environ, PYTHONIOENCODING="utf-8", KOMPUTE_LOG_LEVEL="error", **(extra_env or {}))
    run = subprocess.run(command, input="\n".join(turns[:1] + ["/reset"] + turns) + "\n", capture_output=True,
                         text=True, encoding="utf-8", env=env, timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr
    assert "[validation]" not in run.stderr
    return run.stdout


def test_python_chat_loop(tmp_path, manager):
    path = family_file(tmp_path / "llama3.gguf", "llama3", seed=5)
    model = kp.llm.Model(str(path), manager=manager, context_size=128)
    turns = ["Hi there", "What is 2+2?"]
    expected = expected_transcript(model, turns, n=6)
    first_alone = expected_transcript(model, turns[:1], n=6)
    out = run_chat([sys.executable, "-m", "kp.llm.chat", "-m", str(path), "--temp", "0", "-n", "6", "-c", "128"], turns)
    assert out == first_alone + expected  # the first turn, then /reset, then the conversation


KOMPUTE_LLM = os.environ.get("KOMPUTE_LLM")


@pytest.mark.skipif(not KOMPUTE_LLM, reason="KOMPUTE_LLM (the path of kompute-llm) is not set")
def test_kompute_llm_chat_runs_the_same_loop(tmp_path, manager):
    path = family_file(tmp_path / "qwen.gguf", "qwen2.5", seed=5)
    model = kp.llm.Model(str(path), manager=manager, context_size=256)
    turns = ["Hi there", "What is 2+2?"]
    expected = expected_transcript(model, turns[:1], n=5) + expected_transcript(model, turns, n=5)
    out = run_chat([KOMPUTE_LLM, "--chat", "-m", str(path), "--temp", "0", "-n", "5", "-c", "256"], turns,
                   {"KOMPUTE_PYTHON": sys.executable})
    assert out == expected
    bad = subprocess.run([KOMPUTE_LLM, "--chat", "-m", str(path), "--bench"], capture_output=True, text=True,
                         env=dict(os.environ, KOMPUTE_PYTHON=sys.executable), timeout=TIMEOUT)
    assert bad.returncode == 2 and "unrecognized arguments: --bench" in bad.stderr
    missing = subprocess.run([KOMPUTE_LLM, "--chat", "-m", str(path)], capture_output=True, text=True,
                             env=dict(os.environ, KOMPUTE_PYTHON=str(tmp_path / "no-python")), timeout=TIMEOUT)
    assert missing.returncode == 1 and "KOMPUTE_PYTHON" in missing.stderr
