"""kp.llm: run Llama-family models from GGUF files on any Vulkan GPU: the
architectures llama (Llama 1/2/3/3.1/3.2, Mistral, TinyLlama), qwen2
(Qwen2, Qwen2.5) and qwen3.

The same C++ code as the ``kompute-llm`` program::

    import kp.llm
    model = kp.llm.Model("model.gguf")          # device 0, or manager=kp.Manager(...)
    print(model.generate_text("The capital of France is", n=32, temperature=0))
    logits = model.logits(model.tokenizer.encode("Hello"))   # float32 [tokens, vocabulary]
    for token in model.stream("Once upon a time", n=64):     # token ids as they come
        ...

    bench = kp.llm.Model(random="tiny:f32")     # random weights of a named shape, no file
    print(model)                                # name, architecture, size, the file's type mix
    model.config["type_counts"]                 # {"Q4_0": 224, "F32": 65, "Q6_K": 1}, ...

    reply = model.chat([{"role": "user", "content": "Hello!"}])   # through the file's chat template

Also here: :class:`GgufFile` (metadata and tensor infos of a file),
:class:`Tokenizer` (the file's own tokenizer: SentencePiece for Llama 1/2,
byte-level BPE for Llama 3) and :class:`Sampler`; for chat (:mod:`kp.llm.chat`,
which needs jinja2) :class:`ChatTemplate`, :class:`Generation` and
:class:`ChatTemplateError`; :mod:`kp.llm.serve` is an OpenAI-compatible
HTTP server (``python -m kp.llm.serve --model FILE.gguf``). Bad files raise
:class:`kp.Error` naming the file and what is wrong.
"""

from .._kp import Error
from .._kp import llm as _llm
from .chat import ChatTemplate, ChatTemplateError, Generation
from .chat import _apply_chat_template, _chat, _chat_template

GgufFile = _llm.GgufFile
"""A GGUF model file, memory-mapped: its metadata and tensor infos (kp._kp.llm.GgufFile)."""
Tokenizer = _llm.Tokenizer
"""Text to token ids and back, with a GGUF file's own tokenizer (kp._kp.llm.Tokenizer)."""
Sampler = _llm.Sampler
"""Picks the next token from logits: greedy, temperature, top-k, top-p (kp._kp.llm.Sampler)."""
Model = _llm.Model
"""A Llama-family model (llama, qwen2, qwen3) on the device with one context (KV cache) (kp._kp.llm.Model)."""

__all__ = ["ChatTemplate", "ChatTemplateError", "Generation", "GgufFile", "Model", "Sampler", "Tokenizer"]
for _name in ("GgufFile", "Model", "Sampler", "Tokenizer"):
    globals()[_name].__module__ = "kp.llm"
del _name


def _prompt_tokens(model, prompt):
    if isinstance(prompt, str):
        if model.tokenizer is None:
            raise ValueError("a model with random weights has no tokenizer: give token ids")
        return model.tokenizer.encode(prompt)
    return [int(token) for token in prompt]


def _stream(self, prompt, n=64, temperature=0.8, top_k=40, top_p=0.95, seed=0, ignore_eos=False, stop_tokens=()):
    """Yields up to ``n`` generated token ids, one at a time as each is
    computed, for ``prompt`` (text, tokenized with BOS as the file asks, or
    token ids used as given). The KV cache is emptied first. Generation
    stops at end-of-sequence unless ``ignore_eos``, and at any of the ids
    ``stop_tokens`` (neither is yielded). ``temperature`` 0 is greedy, with
    the argmax computed on the device."""
    stop_tokens = frozenset(int(token) for token in stop_tokens)
    tokens = _prompt_tokens(self, prompt)
    sampler = Sampler(temperature, top_k, top_p, seed)
    self.reset()

    def step(ids):
        if sampler.is_greedy:
            return self.evaluate_greedy(ids)
        return sampler.sample(self.evaluate(ids, "last")[0])

    if n <= 0:
        return
    # Checked before the first step, so that nothing is half generated (the
    # last token is returned, not evaluated).
    if len(tokens) + n - 1 > self.context_size:
        raise Error(f"the prompt ({len(tokens)} tokens) and n={n} do not fit into the context of "
                    f"{self.context_size} tokens (make the Model with a larger context_size)")
    token = step(tokens)
    for produced in range(n):
        if token in stop_tokens:
            return
        if not ignore_eos and self.tokenizer is not None and self.tokenizer.is_end_of_generation(token):
            return
        yield token
        if produced + 1 < n:
            token = step([token])


def _generate(self, prompt, n=64, **sampling):
    """The generated token ids as a list (see :meth:`stream`)."""
    return list(self.stream(prompt, n, **sampling))


def _generate_text(self, prompt, n=64, **sampling):
    """The generated text (see :meth:`stream`)."""
    if self.tokenizer is None:
        raise ValueError("a model with random weights has no tokenizer")
    return self.tokenizer.decode(self.generate(prompt, n, **sampling))


Model.stream = _stream
Model.generate = _generate
Model.generate_text = _generate_text
Model.chat = _chat
"""Model.chat(messages, n=None, temperature=0.8, top_k=40, top_p=0.95, seed=0, stop=None, stream=False,
template=None, **variables): the assistant's reply through the chat template (kp.llm.chat._chat)."""
Model.chat_template = _chat_template
"""Model.chat_template(template=None): the model's ChatTemplate (kp.llm.chat._chat_template)."""
Model.apply_chat_template = _apply_chat_template
"""Model.apply_chat_template(messages, add_generation_prompt=False, tokenize=False, template=None,
**variables): the prompt's text or ids, as transformers renders it (kp.llm.chat._apply_chat_template)."""
