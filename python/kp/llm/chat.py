"""Chat with a model: chat templates, :meth:`kp.llm.Model.chat`, and the
interactive loop ``python -m kp.llm.chat`` (which ``kompute-llm --chat``
runs).

A chat template is the Jinja source that a model's GGUF file carries as
``tokenizer.chat_template`` (llama.cpp copies it from the model's Hugging
Face ``tokenizer_config.json``). It is rendered here as Hugging Face
transformers' ``apply_chat_template`` renders it, so a template gives the
same text in both: jinja2's ``ImmutableSandboxedEnvironment`` (a template
is code from the internet: it cannot reach Python's internals or change
the objects it is given) with ``trim_blocks`` and ``lstrip_blocks``, the
``loopcontrols`` extension, transformers' ``{% generation %}`` block (its
body is rendered as is), and the same names: ``messages``, ``tools``,
``documents``, ``add_generation_prompt``, the special tokens
(``bos_token``, ``eos_token``, ``unk_token``, ``pad_token``, where the file
has them), ``raise_exception(message)``, ``strftime_now(format)`` and a
``tojson`` filter that writes JSON as Python's ``json.dumps`` does
(non-ASCII kept, no HTML escaping, keys in their order).

jinja2 is imported when a template is first compiled, so ``import kp.llm``
works without it (``pip install jinja2``, or the tree's ``[llm]`` extra).
"""

import argparse
import datetime
import functools
import json
import os
import sys

from .._kp import Error

__all__ = ["ChatTemplate", "ChatTemplateError", "Generation", "main"]


class ChatTemplateError(Error):
    """A chat template that cannot be used: the model's file has none (and
    the caller gave none), it does not compile, or it failed on the messages
    (a template's ``raise_exception()``, such as Mistral's "Conversation
    roles must alternate user/assistant/user/assistant/...", ends up here
    with the template's own message)."""


# --- Rendering, as transformers renders ---------------------------------------------------

def _to_json(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # jinja2's own tojson escapes <, >, & and ' for HTML and sorts keys:
    # templates that print tool schemas expect plain json.dumps output.
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def _refuse(message):
    raise ChatTemplateError(f"the chat template refused the messages: {message}")


def _now_formatted(format):
    return datetime.datetime.now().strftime(format)


@functools.lru_cache(maxsize=None)
def _environment():
    try:
        import jinja2
        import jinja2.ext
        import jinja2.nodes
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError as error:
        raise ImportError("chat templates need the jinja2 package: pip install jinja2 "
                          "(or install kp with its [llm] extra)") from error

    class GenerationBlock(jinja2.ext.Extension):
        """``{% generation %}...{% endgeneration %}``: transformers marks the
        assistant's part of a conversation with it (for training masks);
        for rendering, the block is its body."""

        tags = {"generation"}

        def parse(self, parser):
            line = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(line)

        def _body(self, caller):
            return caller()

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, jinja2.ext.loopcontrols])
    environment.filters["tojson"] = _to_json
    environment.globals["raise_exception"] = _refuse
    environment.globals["strftime_now"] = _now_formatted
    return environment


@functools.lru_cache(maxsize=32)
def _compiled(source):
    import jinja2

    try:
        return _environment().from_string(source)
    except jinja2.TemplateSyntaxError as error:
        raise ChatTemplateError(f"the chat template does not compile: {error.message} "
                                f"(line {error.lineno} of the template)") from None


# Distinctive texts for the probe conversation that finds a template's end of turn.
_PROBE_USER = "kp-probe-question"
_PROBE_REPLY = "kp-probe-reply"


class ChatTemplate:
    """A chat template (Jinja source) and the special tokens it is rendered
    with, rendered as transformers' ``apply_chat_template`` does.

    ``source``: the template, as ``tokenizer.chat_template`` of a GGUF file
    or ``chat_template`` of a Hugging Face ``tokenizer_config.json`` holds
    it. ``special_tokens``: the variables for special tokens, such as
    ``{"bos_token": "<s>", "eos_token": "</s>"}``
    (:meth:`kp.llm.Model.chat_template` fills them from the model's file).
    A template that does not compile raises :class:`ChatTemplateError`."""

    def __init__(self, source, special_tokens=None):
        """Compiles ``source`` (ChatTemplateError when it does not compile)."""
        if not isinstance(source, str):
            raise TypeError(f"a chat template is Jinja source as a str, not {type(source).__name__}")
        self.source = source
        """The Jinja source."""
        self.special_tokens = dict(special_tokens or {})
        """The special-token variables the template sees (``bos_token``, ...)."""
        self._template = _compiled(source)

    def render(self, messages, add_generation_prompt=False, tools=None, documents=None, **variables):
        """The text of a conversation: ``messages`` is a list of dicts with
        a ``"role"`` (``"system"``, ``"user"``, ``"assistant"``, ...) and
        usually a ``"content"``; ``add_generation_prompt`` appends what
        opens the assistant's reply (transformers' default is False too);
        ``tools`` and ``documents`` are passed to templates that use them;
        further keyword arguments are further variables (they override the
        special tokens of the same name, as in transformers). Raises
        :class:`ChatTemplateError` when the template fails on the messages,
        ``TypeError`` for messages that are not dicts."""
        messages = _checked_messages(messages)
        context = dict(self.special_tokens)
        context.update(variables)
        try:
            return self._template.render(messages=messages, tools=tools, documents=documents,
                                         add_generation_prompt=add_generation_prompt, **context)
        except ChatTemplateError:
            raise
        except Exception as error:  # jinja2's errors, and the template's own TypeErrors and the like
            raise ChatTemplateError(f"the chat template failed on these messages: "
                                    f"{type(error).__name__}: {error}") from error

    @functools.cached_property
    def end_of_turn(self):
        """The text the template puts right after an assistant's message,
        such as ``"<|eot_id|>"`` (Llama 3), ``"<|im_end|>"`` (ChatML, Qwen)
        or ``"</s>"`` (Mistral): what ends a reply. None when the template
        puts nothing there, or refuses a plain user-assistant exchange."""
        exchanges = (
            [{"role": "user", "content": _PROBE_USER}, {"role": "assistant", "content": _PROBE_REPLY}],
            [{"role": "system", "content": "kp-probe-system"}, {"role": "user", "content": _PROBE_USER},
             {"role": "assistant", "content": _PROBE_REPLY}],
        )
        for messages in exchanges:
            try:
                text = self.render(messages)
            except ChatTemplateError:
                continue
            at = text.rfind(_PROBE_REPLY)
            if at < 0:
                return None
            # The marker is the first word after the reply: a template may
            # follow it with a newline or with the next turn's opening.
            after = text[at + len(_PROBE_REPLY):].split()
            return after[0] if after else None
        return None

    def __repr__(self):
        """The template's length and special tokens (the source can be long)."""
        return f"ChatTemplate({len(self.source)} characters, special_tokens={self.special_tokens!r})"


def _checked_messages(messages):
    if isinstance(messages, (str, bytes)) or not hasattr(messages, "__iter__"):
        raise TypeError("messages must be a list of dicts such as {'role': 'user', 'content': 'Hello'}, "
                        f"not {type(messages).__name__}")
    checked = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise TypeError(f"messages[{index}] must be a dict with a 'role' and a 'content', "
                            f"not {type(message).__name__}")
        if "role" not in message:
            raise TypeError(f"messages[{index}] has no 'role' (such as 'user' or 'assistant')")
        checked.append(message)
    return checked


# --- Templates of a model ---------------------------------------------------------------

# The special-token variables of transformers and the GGUF keys of their ids.
_SPECIAL_TOKEN_KEYS = (
    ("bos_token", "tokenizer.ggml.bos_token_id"),
    ("eos_token", "tokenizer.ggml.eos_token_id"),
    ("unk_token", "tokenizer.ggml.unknown_token_id"),
    ("pad_token", "tokenizer.ggml.padding_token_id"),
)


def _needs_tokenizer(model):
    if model.tokenizer is None or model.file is None:
        raise ValueError("a model with random weights has no tokenizer and no chat template: "
                         "load a GGUF file")
    return model.tokenizer


def _special_tokens(model):
    tokenizer = _needs_tokenizer(model)
    tokens = {}
    for name, key in _SPECIAL_TOKEN_KEYS:
        token = model.file.get(key)
        if isinstance(token, int) and 0 <= token < len(tokenizer):
            tokens[name] = tokenizer.token_text(token)
    return tokens


def _chat_template(self, template=None):
    """The model's chat template, a :class:`ChatTemplate` with the special
    tokens of its file: ``template`` when given (Jinja source, or a
    ChatTemplate used as it is), else the file's ``tokenizer.chat_template``.
    A file without one raises :class:`ChatTemplateError` (give
    ``template=``); a model with random weights raises ``ValueError``."""
    if isinstance(template, ChatTemplate):
        return template
    _needs_tokenizer(self)
    if template is None:
        template = self.file.get("tokenizer.chat_template")
        if template is None:
            raise ChatTemplateError(
                f"{self.file.name} has no chat template (no tokenizer.chat_template in its metadata): "
                "give one with template=... (Jinja source, as in the chat_template of a Hugging Face "
                "tokenizer_config.json), or use generate() with a prompt of your own")
    return ChatTemplate(template, _special_tokens(self))


def _apply_chat_template(self, messages, add_generation_prompt=False, tokenize=False, template=None,
                         **variables):
    """Renders ``messages`` with the model's chat template (see
    :meth:`chat_template`) as transformers' ``apply_chat_template`` does:
    the text, or with ``tokenize`` its token ids. The text's special tokens
    (``<|eot_id|>``, ...) become those tokens; BOS is put first when the
    vocabulary asks for it and the template did not write it (as llama.cpp
    does; transformers never adds one)."""
    text = _chat_template(self, template).render(messages, add_generation_prompt=add_generation_prompt,
                                                 **variables)
    if not tokenize:
        return text
    return _prompt_ids(self.tokenizer, text)


def _prompt_ids(tokenizer, text):
    ids = tokenizer.encode(text, add_special=False, parse_special=True)
    if tokenizer.add_bos and (not ids or ids[0] != tokenizer.bos):
        ids.insert(0, tokenizer.bos)
    return ids


def _is_control_token(tokenizer, token):
    # Control tokens are the ones decode() leaves out unless asked to render them.
    return tokenizer.piece(token) == b"" and tokenizer.piece(token, True) != b""


def _end_of_turn_tokens(tokenizer, template):
    """The token of the template's end of turn, where it is one control
    token of the vocabulary (a reply stops there, besides EOS and the
    vocabulary's own end-of-generation tokens)."""
    marker = template.end_of_turn
    if not marker:
        return ()
    ids = tokenizer.encode(marker, add_special=False, parse_special=True)
    if len(ids) == 1 and _is_control_token(tokenizer, ids[0]):
        return (ids[0],)
    return ()


def _chat(self, messages, n=None, temperature=0.8, top_k=40, top_p=0.95, seed=0, stop=None, stream=False,
          template=None, **variables):
    """The assistant's reply to ``messages`` (a list of
    ``{"role": ..., "content": ...}`` dicts), rendered with the model's chat
    template (the file's, or ``template``; see :meth:`apply_chat_template`)
    with the generation prompt. The reply ends at the template's end of turn
    (its control token, such as ``<|eot_id|>`` or ``<|im_end|>``), at EOS,
    at the first of the ``stop`` strings (left out of the reply), or after
    ``n`` tokens (None: as many as the context holds). Sampling as in
    :meth:`stream` (``temperature`` 0 is greedy). Returns the text, or with
    ``stream`` a :class:`Generation` to iterate for the text as it comes
    (the KV cache is emptied and the prompt evaluated when iteration
    starts). Further keyword arguments are template variables."""
    tokenizer = _needs_tokenizer(self)
    chat_template = _chat_template(self, template)
    prompt = _prompt_ids(tokenizer, chat_template.render(messages, add_generation_prompt=True, **variables))
    generation = Generation(self, prompt, n, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                            stop=stop, stop_tokens=_end_of_turn_tokens(tokenizer, chat_template))
    if stream:
        return generation
    return generation.read()


# --- Text as it is generated ----------------------------------------------------------------

_REPLACEMENT = "\ufffd"


class Generation:
    """One generation's text, piece by piece: iterate it for the pieces as
    they are generated; afterwards ``text``, ``tokens``, ``finish_reason``
    and the token counts describe it. What :meth:`kp.llm.Model.chat` returns
    with ``stream=True``, and what the server (:mod:`kp.llm.serve`) streams.

    ``prompt``: text (tokenized as :meth:`kp.llm.Model.stream` does) or
    token ids. ``max_tokens``: the most tokens to generate (None: as many
    as fit into the context). Sampling as in :meth:`kp.llm.Model.stream`.
    Generation ends at EOS and the vocabulary's end-of-generation tokens
    (unless ``ignore_eos``), at any of ``stop_tokens``, and at the first of
    the ``stop`` strings (a str or a list of them), which is not part of
    the text. A prompt and ``max_tokens`` that do not fit into the context
    raise :class:`kp.Error` here, before anything runs.

    The pieces join to exactly ``tokenizer.decode(tokens)`` (cut at a stop
    string): a piece is held back while it may still be the start of a
    stop string or ends inside a UTF-8 character. The model's KV cache is
    emptied when iteration starts: one generation at a time per Model."""

    def __init__(self, model, prompt, max_tokens=None, temperature=0.8, top_k=40, top_p=0.95, seed=0, stop=None,
                 stop_tokens=(), ignore_eos=False):
        """Checks the prompt and max_tokens against the context; nothing runs until iteration."""
        if model.tokenizer is None:
            raise ValueError("a model with random weights has no tokenizer to turn tokens into text")
        if isinstance(prompt, str):
            prompt = model.tokenizer.encode(prompt)
        self.prompt_tokens = [int(token) for token in prompt]
        """The prompt's token ids."""
        if not self.prompt_tokens:
            raise Error("the prompt has no tokens")
        # Model.stream evaluates the prompt and every generated token but the last.
        room = model.context_size - len(self.prompt_tokens) + 1
        if max_tokens is None:
            max_tokens = room
        if room < 1 or max_tokens > room:
            raise Error(f"the prompt ({len(self.prompt_tokens)} tokens) and {max_tokens} tokens to generate do "
                        f"not fit into the context of {model.context_size} tokens (at most "
                        f"{max(room, 0)} tokens can follow this prompt)")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
        if isinstance(stop, str):
            stop = [stop]
        self.stop = [text for text in (stop or []) if text]
        """The stop strings."""
        self.max_tokens = max_tokens
        """The most tokens this generation makes."""
        self.tokens = []
        """The generated token ids so far (the ending token, such as EOS, is not among them)."""
        self.text = ""
        """The text so far: all of it once iteration has ended."""
        self.finish_reason = None
        """None while running (or when closed early), then "stop" (EOS, end of turn or a stop string) or
        "length" (max_tokens reached), as the OpenAI API names them."""
        self._model = model
        self._sampling = dict(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                              ignore_eos=ignore_eos, stop_tokens=tuple(stop_tokens))
        self._pieces = self._run()

    @property
    def completion_tokens(self):
        """How many tokens were generated (len(tokens))."""
        return len(self.tokens)

    def __iter__(self):
        """The text pieces, as they are generated (one pass only)."""
        return self._pieces

    def __next__(self):
        """The next text piece (StopIteration at the end)."""
        return next(self._pieces)

    def read(self):
        """Runs the generation to its end and returns the whole text."""
        for _ in self._pieces:
            pass
        return self.text

    def close(self):
        """Stops the generation where it is (``finish_reason`` stays None)."""
        self._pieces.close()

    def _held_back(self, text):
        """How many characters at the end of text may still change: an
        incomplete UTF-8 character (decoded as U+FFFD) or the start of a stop
        string."""
        replaced = len(text) - len(text.rstrip(_REPLACEMENT))
        partial = 0
        for stop in self.stop:
            for length in range(min(len(stop) - 1, len(text)), partial, -1):
                if text.endswith(stop[:length]):
                    partial = length
                    break
        return max(replaced, partial)

    def _run(self):
        tokenizer = self._model.tokenizer
        longest_stop = max((len(text) for text in self.stop), default=0)
        emitted = 0
        steps = self._model.stream(self.prompt_tokens, self.max_tokens, **self._sampling)
        try:
            for token in steps:
                self.tokens.append(token)
                # Decoding everything again keeps the pieces equal to decode()
                # of the whole (SentencePiece drops the space before the first
                # word, byte tokens complete characters).
                text = tokenizer.decode(self.tokens)
                if self.stop:
                    search_from = max(0, emitted - longest_stop + 1)
                    hits = [at for at in (text.find(stop, search_from) for stop in self.stop) if at >= 0]
                    if hits:
                        end = max(min(hits), emitted)
                        self.text = text[:end]
                        self.finish_reason = "stop"
                        if end > emitted:
                            yield text[emitted:end]
                        return
                self.text = text
                ready = len(text) - self._held_back(text)
                if ready > emitted:
                    yield text[emitted:ready]
                    emitted = ready
        finally:
            steps.close()
        self.finish_reason = "length" if len(self.tokens) >= self.max_tokens else "stop"
        if len(self.text) > emitted:
            yield self.text[emitted:]


# --- The interactive loop ------------------------------------------------------------------

def _read_chat_template(parser, path):
    """The template of a --chat-template FILE option (None without one); a
    file that cannot be read is a usage error of `parser`."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as source:
            return source.read()
    except OSError as error:
        parser.error(f"cannot read the chat template: {error}")


def main(argv=None, prog=None):
    """The interactive chat of ``python -m kp.llm.chat --model FILE.gguf``
    and ``kompute-llm --chat``: reads a user message per line from standard
    input, streams the model's reply to standard output, and keeps the
    conversation (``/reset`` starts a new one, ``/exit`` or end of input
    ends). The oldest exchanges are dropped when the conversation outgrows
    the context. Returns the exit status."""
    parser = argparse.ArgumentParser(
        prog=prog or "python -m kp.llm.chat",
        description="Chat with a GGUF model in the terminal, through its chat template.")
    parser.add_argument("-m", "--model", required=True, help="a GGUF file with a tokenizer (and a chat template)")
    parser.add_argument("--chat-template", metavar="FILE",
                        help="a Jinja chat template to use instead of the file's tokenizer.chat_template")
    parser.add_argument("--system", metavar="TEXT", help="a system message that opens the conversation")
    parser.add_argument("-n", "--n-predict", type=int, default=None, metavar="N",
                        help="most tokens of a reply (default: until the end of the turn)")
    parser.add_argument("--temp", type=float, default=0.8, help="temperature (default 0.8; 0 is greedy)")
    parser.add_argument("--top-k", type=int, default=40, help="keep the K most likely tokens (default 40; 0: all)")
    parser.add_argument("--top-p", type=float, default=0.95, help="keep the most likely tokens adding up to P")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: a new one)")
    parser.add_argument("--device", type=int, default=0, help="Vulkan device index (default 0)")
    parser.add_argument("-c", "--ctx-size", type=int, default=0, metavar="N",
                        help="tokens the KV cache holds (default: the model's, at most 4096)")
    parser.add_argument("-b", "--batch-size", type=int, default=512, metavar="N", help="most tokens per prompt step")
    parser.add_argument("-v", "--verbose", action="store_true", help="token counts of each reply on stderr")
    options = parser.parse_args(argv)

    from . import Model  # here, so that importing this module needs no device

    template = _read_chat_template(parser, options.chat_template)
    seed = options.seed if options.seed is not None else int.from_bytes(os.urandom(8), "little")
    name = parser.prog
    try:
        model = Model(options.model, device=options.device, context_size=options.ctx_size,
                      batch_size=options.batch_size)
        chat_template = model.chat_template(template)
    except (Error, ValueError, ImportError) as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 1
    interactive = sys.stdin.isatty()
    if interactive:
        print(f"{os.path.basename(options.model)}: type a message, /reset for a new conversation, "
              "/exit (or Ctrl-D) to end", file=sys.stderr)
    opening = [{"role": "system", "content": options.system}] if options.system else []
    messages = list(opening)
    turn = 0
    while True:
        if interactive:
            sys.stdout.write("> ")
            sys.stdout.flush()
        try:
            line = sys.stdin.readline()
        except KeyboardInterrupt:
            break
        if not line:
            break
        line = line.rstrip("\n")
        if line.strip() == "/exit":
            break
        if line.strip() == "/reset":
            messages = list(opening)
            continue
        if not line.strip():
            continue
        messages.append({"role": "user", "content": line})
        turn += 1
        try:
            reply = _reply(model, chat_template, messages, opening, options, seed + turn)
        except Error as error:
            print(f"{name}: {error}", file=sys.stderr)
            messages.pop()
            continue
        try:
            for piece in reply:
                sys.stdout.write(piece)
                sys.stdout.flush()
        except KeyboardInterrupt:
            reply.close()  # Ctrl-C ends the reply, not the chat; the part shown so far stays
        except Error as error:
            print(f"\n{name}: {error}", file=sys.stderr)
            messages.pop()
            continue
        sys.stdout.write("\n")
        sys.stdout.flush()
        messages.append({"role": "assistant", "content": reply.text})
        if options.verbose:
            print(f"[{len(reply.prompt_tokens)} prompt tokens, {reply.completion_tokens} generated, "
                  f"{reply.finish_reason}]", file=sys.stderr)
    return 0


def _reply(model, chat_template, messages, opening, options, seed):
    """A Generation for the conversation, dropping its oldest exchanges
    (after the system message) while the prompt leaves no room for a reply."""
    while True:
        try:
            return model.chat(messages, n=options.n_predict, temperature=options.temp, top_k=options.top_k,
                              top_p=options.top_p, seed=seed, stream=True, template=chat_template)
        except Error as error:
            if isinstance(error, ChatTemplateError) or len(messages) <= len(opening) + 1:
                raise
            del messages[len(opening):len(opening) + 2]


if __name__ == "__main__":
    sys.exit(main())
