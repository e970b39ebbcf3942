"""An OpenAI-compatible HTTP server for a GGUF model:
``python -m kp.llm.serve --model FILE.gguf [--host 127.0.0.1 --port 8080]``.

Endpoints: ``POST /v1/chat/completions`` (messages rendered with the file's
chat template, see :mod:`kp.llm.chat`), ``POST /v1/completions`` (a raw
prompt), both with server-sent events when ``"stream": true``;
``GET /v1/models`` (and ``/v1/models/{id}``) and ``GET /health``. Request
fields: ``model``, ``messages`` / ``prompt``, ``max_tokens`` (chat also
``max_completion_tokens``), ``temperature``, ``top_p``, ``seed``, ``stop``,
``stream``, ``stream_options.include_usage``, ``n`` (1 only), and the
extensions ``top_k``, ``ignore_eos`` and ``chat_template_kwargs``; replies
carry ``usage`` token counts. Errors have the OpenAI shape
``{"error": {"message", "type", "param", "code"}}`` with a 4xx status for
a bad request (malformed JSON, a missing or mistyped field, an unknown
model, a prompt and ``max_tokens`` beyond the context).

The model has one KV cache, so requests are **queued**: one generation
runs at a time, on a thread of its own, and the others wait their turn in
arrival order (``--max-queue`` of them at most; further ones get 503). A
client that disconnects, while waiting or mid-stream, gives up its place:
its generation stops at the next token. The event loop only parses,
tokenizes and writes, so the server answers ``/health`` and refuses bad
requests while a generation runs.

Built on aiohttp (PyPI: ``aiohttp``): an asyncio HTTP server that is itself
the server (no separate ASGI server to run), streams responses with
back-pressure, and cancels a request's handler when its client goes away,
which is how a dropped stream frees the model here.
"""

import argparse
import asyncio
import concurrent.futures
import hmac
import ipaddress
import json
import logging
import os
import signal
import sys
import threading
import time
import uuid

try:
    from aiohttp import web as _web
except ImportError:  # reported by main() and Server(), so that importing this module never fails
    _web = None

from .._kp import Error
from .chat import ChatTemplateError, Generation, _end_of_turn_tokens, _prompt_ids, _read_chat_template

__all__ = ["Server", "main"]

_log = logging.getLogger("kp.llm.serve")

# The OpenAI API's default for /v1/completions; chat replies default to the rest of the context.
_COMPLETION_DEFAULT_MAX_TOKENS = 16
_MAX_STOP_STRINGS = 4


class _ApiError(Exception):
    """An error reply in the OpenAI shape."""

    def __init__(self, status, message, param=None, code=None, type=None):
        """An error of HTTP `status`; type is invalid_request_error below 500, server_error from it."""
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.type = type or ("invalid_request_error" if status < 500 else "server_error")

    def body(self):
        """The JSON body of the reply."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def _bad(message, param=None, code=None):
    return _ApiError(400, message, param=param, code=code)


# --- Request fields ---------------------------------------------------------------------

def _number(body, name, default, low, high):
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(f"'{name}' must be a number, not {json.dumps(value)}", name)
    if not low <= value <= high:
        raise _bad(f"'{name}' must be between {low} and {high}, not {value}", name)
    return float(value)


def _integer(body, name, default, low=None, high=None):
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(f"'{name}' must be an integer, not {json.dumps(value)}", name)
    if low is not None and value < low:
        raise _bad(f"'{name}' must be at least {low}, not {value}", name)
    if high is not None and value > high:
        raise _bad(f"'{name}' must be at most {high}, not {value}", name)
    return value


def _boolean(body, name, default=False):
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _bad(f"'{name}' must be true or false, not {json.dumps(value)}", name)
    return value


def _stop_strings(body):
    stop = body.get("stop")
    if stop is None:
        return []
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(text, str) for text in stop):
        raise _bad("'stop' must be a string or a list of strings", "stop")
    if len(stop) > _MAX_STOP_STRINGS:
        raise _bad(f"'stop' takes at most {_MAX_STOP_STRINGS} strings, not {len(stop)}", "stop")
    return stop


def _refuse_unsupported(body, kind):
    if _integer(body, "n", 1) != 1:
        raise _bad("this server makes one choice per request: 'n' must be 1", "n")
    if kind == "chat":
        if body.get("logprobs"):
            raise _bad("'logprobs' is not supported by this server", "logprobs")
        if body.get("tools"):
            raise _bad("tool calls are not supported by this server: send the request without 'tools'", "tools")
        response_format = body.get("response_format")
        if response_format is not None and (not isinstance(response_format, dict)
                                            or response_format.get("type") != "text"):
            raise _bad("only the response_format {\"type\": \"text\"} is supported", "response_format")
    else:
        if body.get("logprobs") is not None:
            raise _bad("'logprobs' is not supported by this server", "logprobs")
        if body.get("echo"):
            raise _bad("'echo' is not supported by this server", "echo")
        if _integer(body, "best_of", 1) != 1:
            raise _bad("'best_of' must be 1 on this server", "best_of")
        if body.get("suffix"):
            raise _bad("'suffix' (insertion) is not supported by this server", "suffix")


def _message_text(content, index):
    """A message's content as text: a string, or the OpenAI list of parts
    of which only text parts are supported."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise _bad(f"messages[{index}].content: only text parts ({{\"type\": \"text\", \"text\": ...}}) are "
                           "supported", "messages")
            texts.append(part["text"])
        return "\n".join(texts)
    raise _bad(f"messages[{index}].content must be a string or a list of text parts", "messages")


def _messages(body):
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("'messages' must be a non-empty list of {\"role\": ..., \"content\": ...} objects", "messages")
    checked = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _bad(f"messages[{index}] must be an object with a string 'role'", "messages")
        message = dict(message)
        message["content"] = _message_text(message.get("content"), index)
        checked.append(message)
    return checked


# --- Generations, one at a time ---------------------------------------------------------------

class _Job:
    """One request's generation: run on the generation thread, its pieces
    handed to the request's handler on the event loop."""

    def __init__(self, loop, generation):
        """A job of `generation`, whose events are delivered on `loop`."""
        self.loop = loop
        self.generation = generation
        self.events = asyncio.Queue()
        self.cancelled = threading.Event()
        self.started = False

    def post(self, kind, value=None):
        """From the generation thread: an event ("piece", "done" or "error") for the handler."""
        try:
            self.loop.call_soon_threadsafe(self.events.put_nowait, (kind, value))
        except RuntimeError:
            pass  # the event loop is gone (shutdown): nobody is listening


class Server:
    """The HTTP application around one :class:`kp.llm.Model`: ``name`` is
    the model id clients give (and /v1/models lists); ``chat_template``
    overrides the file's (Jinja source); ``max_queue`` is how many requests
    may wait while one runs; ``api_key``, when set, is required as
    ``Authorization: Bearer KEY``. :meth:`application` is the aiohttp
    application; :func:`main` runs one."""

    def __init__(self, model, name, chat_template=None, max_queue=32, api_key=None):
        """Takes the model over (the server's generation thread uses it from now on); raises
        ImportError without aiohttp, ChatTemplateError for a chat_template that does not compile."""
        self.model = model
        """The model that every request uses."""
        self.name = name
        """The model id of the API."""
        self.max_queue = max_queue
        """How many requests may wait while one generates."""
        self.api_key = api_key
        """The key requests must carry, or None."""
        if _web is None:
            raise ImportError("kp.llm.serve needs the aiohttp package: pip install aiohttp "
                              "(or install kp with its [llm] extra)")
        self.created = int(time.time())
        self._template = None
        self._template_problem = None
        self._end_of_turn = ()
        try:
            self._template = model.chat_template(chat_template)
            self._end_of_turn = _end_of_turn_tokens(model.tokenizer, self._template)
        except ChatTemplateError as error:
            self._template_problem = str(error)
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kp-llm-generate")
        self._lock = threading.Lock()
        self._jobs = set()
        self._waiting = 0
        self._running = 0
        self._cancelled = 0
        self._served = 0

    @property
    def chat_template_problem(self):
        """Why /v1/chat/completions cannot work (the file has no chat
        template), or None."""
        return self._template_problem

    def application(self):
        """The aiohttp web.Application with the routes and the error
        handling of the OpenAI API."""
        @_web.middleware
        async def errors(request, handler):
            return await self._errors(request, handler)

        app = _web.Application(middlewares=[errors], client_max_size=16 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/v1/models/{model:.+}", self._model)
        app.router.add_get("/health", self._health)
        app.on_shutdown.append(self._cancel_all)
        return app

    def close(self):
        """Stops the generation in progress and waits for the generation thread to end."""
        with self._lock:
            for job in self._jobs:
                job.cancelled.set()
        self._executor.shutdown(wait=True)

    # --- Plumbing ---

    @staticmethod
    def _json(body, status=200):
        return _web.json_response(body, status=status, dumps=lambda value: json.dumps(value, ensure_ascii=False))

    async def _errors(self, request, handler):
        """Middleware: every error reply in the OpenAI shape."""
        try:
            if self.api_key is not None and request.path.startswith("/v1/"):
                given = request.headers.get("Authorization", "").encode()
                if not hmac.compare_digest(given, f"Bearer {self.api_key}".encode()):
                    raise _ApiError(401, "a valid API key is needed: send 'Authorization: Bearer KEY'",
                                    code="invalid_api_key")
            return await handler(request)
        except _ApiError as error:
            return self._json(error.body(), error.status)
        except _web.HTTPException as error:
            if error.status < 400:
                raise
            if error.status == 404:
                message = f"no such endpoint: {request.method} {request.path}"
            elif error.status == 405:
                message = f"{request.method} is not allowed on {request.path}"
            else:
                message = error.text or error.reason
            return self._json(_ApiError(error.status, message).body(), error.status)
        except Exception as error:  # a bug, or the device: reported, and the server goes on
            _log.exception("request %s %s failed", request.method, request.path)
            return self._json(_ApiError(500, f"the server failed: {type(error).__name__}: {error}").body(), 500)

    async def _body(self, request):
        raw = await request.read()
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, ValueError) as error:
            raise _bad(f"the request body is not valid JSON: {error}") from None
        if not isinstance(body, dict):
            raise _bad("the request body must be a JSON object")
        model = body.get("model")
        if model is not None and not isinstance(model, str):
            raise _bad(f"'model' must be a string, not {json.dumps(model)}", "model")
        if model is not None and model != self.name:
            raise _ApiError(404, f"the model '{model}' does not exist: this server has '{self.name}' (GET /v1/models)",
                            param="model", code="model_not_found")
        return body

    def _max_tokens(self, body, prompt, prompt_field, names, default):
        """max_tokens checked against the context: the prompt and the tokens
        to generate must fit into the KV cache."""
        context = self.model.context_size
        room = context - len(prompt) + 1
        if room < 1:
            raise _bad(f"the prompt is {len(prompt)} tokens, more than the model's context of {context} tokens",
                       prompt_field, "context_length_exceeded")
        for name in names:
            if body.get(name) is not None:
                value = _integer(body, name, None, low=1)
                if value > room:
                    raise _bad(f"'{name}' is {value}, but the prompt ({len(prompt)} tokens) leaves room for at most "
                               f"{room} tokens in the model's context of {context} tokens",
                               name, "context_length_exceeded")
                return value
        return room if default is None else min(default, room)

    def _generation(self, body, prompt, prompt_field, max_tokens_fields, default_max_tokens, stop_tokens=()):
        temperature = _number(body, "temperature", 1.0, 0.0, 2.0)
        # OpenAI takes top_p 0 too; the sampler's nucleus needs a positive
        # mass, and the smallest one keeps the most likely token, as 0 means.
        top_p = max(_number(body, "top_p", 1.0, 0.0, 1.0), 1e-6)
        top_k = _integer(body, "top_k", 0, low=0)
        seed = _integer(body, "seed", None)
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        max_tokens = self._max_tokens(body, prompt, prompt_field, max_tokens_fields, default_max_tokens)
        return Generation(self.model, prompt, max_tokens,
                          temperature=temperature, top_k=top_k, top_p=top_p, seed=seed % (1 << 64),
                          stop=_stop_strings(body), stop_tokens=stop_tokens,
                          ignore_eos=_boolean(body, "ignore_eos"))

    def _submit(self, generation):
        loop = asyncio.get_running_loop()
        job = _Job(loop, generation)
        with self._lock:
            # The running one does not wait: max_queue counts those behind it.
            if self._waiting + self._running > self.max_queue:
                raise _ApiError(503, f"the server is busy: {self._waiting} requests are waiting; try again later",
                                code="server_busy")
            self._waiting += 1
            self._jobs.add(job)
        self._executor.submit(self._run, job)
        return job

    def _run(self, job):
        """On the generation thread: the job's generation, piece by piece,
        until it ends or its client has gone."""
        with self._lock:
            self._waiting -= 1
            self._running += 1
        stopped_early = False
        failure = None
        try:
            if job.cancelled.is_set():
                stopped_early = True
                return
            for piece in job.generation:
                if job.cancelled.is_set():
                    stopped_early = True
                    job.generation.close()
                    break
                job.post("piece", piece)
        except Exception as error:  # kp.Error from the device, reported to this request only
            _log.exception("generation failed")
            failure = error
        finally:
            # Always the last event: a handler that still listens (a
            # shutdown stopped its generation) ends its reply.
            if failure is not None:
                job.post("error", failure)
            else:
                job.post("done")
            with self._lock:
                self._running -= 1
                self._jobs.discard(job)
                if stopped_early:
                    self._cancelled += 1
                else:
                    self._served += 1

    async def _cancel_all(self, app):
        with self._lock:
            for job in self._jobs:
                job.cancelled.set()

    async def _pieces(self, job):
        """The job's text pieces as they come; raises _ApiError when its
        generation failed."""
        while True:
            kind, value = await job.events.get()
            if kind == "piece":
                yield value
            elif kind == "error":
                raise _ApiError(500, f"the generation failed: {value}")
            else:
                return

    @staticmethod
    def _usage(generation):
        prompt = len(generation.prompt_tokens)
        completion = generation.completion_tokens
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    # --- Endpoints ---

    async def _chat_completions(self, request):
        body = await self._body(request)
        _refuse_unsupported(body, "chat")
        messages = _messages(body)
        if self._template is None:
            raise _bad(f"chat completions need a chat template: {self._template_problem} (or start the server with "
                       "--chat-template FILE)", "messages")
        variables = body.get("chat_template_kwargs") or {}
        if not isinstance(variables, dict):
            raise _bad("'chat_template_kwargs' must be an object", "chat_template_kwargs")
        try:
            text = self._template.render(messages, add_generation_prompt=True, **variables)
        except (ChatTemplateError, TypeError) as error:
            raise _bad(str(error), "messages") from None
        prompt = _prompt_ids(self.model.tokenizer, text)
        generation = self._generation(body, prompt, "messages", ("max_completion_tokens", "max_tokens"), None,
                                      self._end_of_turn)
        return await self._respond(request, body, generation, "chat")

    async def _completions(self, request):
        body = await self._body(request)
        _refuse_unsupported(body, "completion")
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
            prompt = prompt[0]  # a batch of one
        if isinstance(prompt, str):
            ids = self.model.tokenizer.encode(prompt)
        elif (isinstance(prompt, list) and prompt
              and all(isinstance(token, int) and not isinstance(token, bool) for token in prompt)):
            vocabulary = len(self.model.tokenizer)
            if not all(0 <= token < vocabulary for token in prompt):
                raise _bad(f"'prompt' has token ids outside the vocabulary of {vocabulary} tokens", "prompt")
            ids = list(prompt)
        elif isinstance(prompt, list) and len(prompt) > 1:
            raise _bad("this server completes one prompt per request: give 'prompt' as one string", "prompt")
        else:
            raise _bad("'prompt' must be a string (or a list of token ids)", "prompt")
        if not ids:
            raise _bad("the prompt has no tokens", "prompt")
        generation = self._generation(body, ids, "prompt", ("max_tokens",), _COMPLETION_DEFAULT_MAX_TOKENS)
        return await self._respond(request, body, generation, "completion")

    async def _respond(self, request, body, generation, kind):
        stream = _boolean(body, "stream")
        options = body.get("stream_options") or {}
        if not isinstance(options, dict):
            raise _bad("'stream_options' must be an object", "stream_options")
        include_usage = stream and _boolean(options, "include_usage")
        reply_id = ("chatcmpl-" if kind == "chat" else "cmpl-") + uuid.uuid4().hex
        job = self._submit(generation)
        try:
            if stream:
                return await self._stream(request, job, reply_id, kind, include_usage)
            text = "".join([piece async for piece in self._pieces(job)])
            if kind == "chat":
                choice = {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None,
                          "finish_reason": generation.finish_reason}
            else:
                choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": generation.finish_reason}
            return self._json({"id": reply_id, "object": "chat.completion" if kind == "chat" else "text_completion",
                               "created": int(time.time()), "model": self.name, "choices": [choice],
                               "usage": self._usage(generation)})
        finally:
            # A finished job ignores this; one whose client went away (the
            # handler cancelled, or a write failed) stops at its next token.
            job.cancelled.set()

    async def _stream(self, request, job, reply_id, kind, include_usage):
        response = _web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        created = int(time.time())
        chunk_object = "chat.completion.chunk" if kind == "chat" else "text_completion"

        def chunk(piece=None, finish_reason=None, role=False):
            if kind == "chat":
                delta = {}
                if role:
                    delta["role"] = "assistant"
                if piece is not None:
                    delta["content"] = piece
                choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            else:
                choice = {"index": 0, "text": piece or "", "logprobs": None, "finish_reason": finish_reason}
            return {"id": reply_id, "object": chunk_object, "created": created, "model": self.name,
                    "choices": [choice]}

        async def send(event):
            data = event if isinstance(event, str) else json.dumps(event, ensure_ascii=False)
            await response.write(f"data: {data}\n\n".encode("utf-8"))

        try:
            if kind == "chat":
                await send(chunk(piece="", role=True))
            try:
                async for piece in self._pieces(job):
                    await send(chunk(piece=piece))
            except _ApiError as error:
                # The status line has gone out: the error travels as an event.
                await send(error.body())
                await send("[DONE]")
                return response
            await send(chunk(finish_reason=job.generation.finish_reason))
            if include_usage:
                await send({"id": reply_id, "object": chunk_object, "created": created, "model": self.name,
                            "choices": [], "usage": self._usage(job.generation)})
            await send("[DONE]")
            await response.write_eof()
        except ConnectionError:
            _log.info("%s: the client went away mid-stream", reply_id)
        return response

    async def _models(self, request):
        return self._json({"object": "list", "data": [self._model_entry()]})

    async def _model(self, request):
        name = request.match_info["model"]
        if name != self.name:
            raise _ApiError(404, f"the model '{name}' does not exist: this server has '{self.name}'",
                            param="model", code="model_not_found")
        return self._json(self._model_entry())

    def _model_entry(self):
        return {"id": self.name, "object": "model", "created": self.created, "owned_by": "kompute"}

    async def _health(self, request):
        with self._lock:
            return self._json({"status": "ok", "model": self.name, "running": self._running,
                               "waiting": self._waiting, "served": self._served, "cancelled": self._cancelled})


# --- The program -------------------------------------------------------------------------------

def _is_loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _serve(server, host, port, shutdown_timeout):
    # handler_cancellation: a client that disconnects cancels its handler,
    # which stops its generation (see Server._respond).
    runner = _web.AppRunner(server.application(), handler_cancellation=True, access_log=_log,
                           shutdown_timeout=shutdown_timeout)
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signal_number, stop.set)
        except (NotImplementedError, RuntimeError):
            pass  # not on this platform or thread: Ctrl-C still raises KeyboardInterrupt
    try:
        site = _web.TCPSite(runner, host, port)
        await site.start()
        bound_host, bound_port = runner.addresses[0][:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        print(f"kp.llm.serve: {server.name} on http://{shown}:{bound_port}/v1", flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv=None):
    """``python -m kp.llm.serve``: loads the model, serves it until SIGINT
    or SIGTERM, prints ``kp.llm.serve: NAME on http://HOST:PORT/v1`` once it
    listens (with ``--port 0`` the port the system chose). Returns the exit
    status."""
    parser = argparse.ArgumentParser(prog="python -m kp.llm.serve",
                                     description="An OpenAI-compatible HTTP server for a GGUF model.")
    parser.add_argument("-m", "--model", required=True, help="the GGUF file")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080; 0: any free port)")
    parser.add_argument("--alias", help="the model id clients use (default: the file's name without .gguf)")
    parser.add_argument("--chat-template", metavar="FILE", help="a Jinja chat template instead of the file's")
    parser.add_argument("--api-key", help="require 'Authorization: Bearer KEY' (default: $KOMPUTE_API_KEY, else none)")
    parser.add_argument("--max-queue", type=int, default=32, metavar="N",
                        help="requests that may wait while one runs (default 32; more get 503)")
    parser.add_argument("--device", type=int, default=0, help="Vulkan device index (default 0)")
    parser.add_argument("-c", "--ctx-size", type=int, default=0, metavar="N",
                        help="tokens the KV cache holds (default: the model's, at most 4096)")
    parser.add_argument("-b", "--batch-size", type=int, default=512, metavar="N", help="most tokens per prompt step")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request on stderr")
    options = parser.parse_args(argv)
    if options.max_queue < 0:
        parser.error("--max-queue takes 0 or more")

    # The level in each line: a validation layer's warning (some drivers'
    # layers warn about their own loader) is not an error.
    logging.basicConfig(level=logging.INFO if options.verbose else logging.WARNING,
                        format="%(name)s %(levelname)s: %(message)s")
    if _web is None:  # checked before the model is loaded
        print("kp.llm.serve needs the aiohttp package: pip install aiohttp (or install kp with its [llm] extra)",
              file=sys.stderr)
        return 1
    if not _is_loopback(options.host):
        print(f"kp.llm.serve: listening on {options.host}, not only on this machine: anyone who reaches it can use "
              "the model" + ("" if options.api_key else " (no --api-key)"), file=sys.stderr)
    template = _read_chat_template(parser, options.chat_template)

    from . import Model

    name = options.alias or os.path.basename(options.model)
    if not options.alias and name.lower().endswith(".gguf"):
        name = name[:-len(".gguf")]
    try:
        model = Model(options.model, device=options.device, context_size=options.ctx_size,
                      batch_size=options.batch_size)
        server = Server(model, name, chat_template=template, max_queue=options.max_queue,
                        api_key=options.api_key or os.environ.get("KOMPUTE_API_KEY") or None)
    except (Error, ValueError, ImportError) as error:
        print(f"kp.llm.serve: {error}", file=sys.stderr)
        return 1
    if server.chat_template_problem:
        print(f"kp.llm.serve: /v1/chat/completions is off: {server.chat_template_problem}", file=sys.stderr)
    try:
        asyncio.run(_serve(server, options.host, options.port, shutdown_timeout=5.0))
    except KeyboardInterrupt:
        pass
    except OSError as error:
        print(f"kp.llm.serve: cannot listen on {options.host}:{options.port}: {error}", file=sys.stderr)
        return 1
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
