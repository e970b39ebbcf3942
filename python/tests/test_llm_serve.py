"""The OpenAI-compatible server: python -m kp.llm.serve started on
127.0.0.1 (an ephemeral port) with a tiny generated ChatML model, used
through the real openai client package: chat and text completions,
streamed and not, stop sequences, seeds, two clients at once, a client
that drops its stream, bad requests. Greedy replies are checked against
Model.generate on the same prompt, in this process.

Bounded in time: the client has a timeout, every thread and poll has a
deadline, and the server is stopped (SIGTERM, then SIGKILL) at the end of
the module, where its exit status and stderr are checked too.
"""

import json
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

import kp
import kp.llm
import kp.llm.serve

from chat_templates import family
from llm_support import TinyConfig, need_gguf, write_model

openai = pytest.importorskip("openai")
pytest.importorskip("aiohttp")
pytest.importorskip("jinja2")

CONFIG = TinyConfig(context=512)  # a dropped stream would run ~500 tokens: long enough to see it stop
NAME = "tiny-chat"
STARTUP_TIMEOUT = 120  # seconds: loading and building the model's sequences on lavapipe
REQUEST_TIMEOUT = 60
MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi there"}]


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    need_gguf()
    spec = family("qwen2.5")
    path = tmp_path_factory.mktemp("serve") / f"{NAME}.gguf"
    first_control = CONFIG.vocab - len(spec["control"])
    write_model(path, CONFIG, "f32", seed=21, control_tokens=spec["control"], bos=None, eos=first_control,
                extra={"tokenizer.chat_template": spec["template"], "tokenizer.ggml.add_bos_token": False})
    return path


@pytest.fixture(scope="module")
def reference(model_path):
    """The same model in this process, for the expected replies."""
    manager = kp.Manager()
    model = kp.llm.Model(str(model_path), manager=manager, context_size=CONFIG.context)
    yield model
    del model
    manager.destroy()


@pytest.fixture(scope="module")
def server(model_path, tmp_path_factory):
    """The server's base URL; the server runs for the whole module."""
    stderr_path = tmp_path_factory.mktemp("serve-log") / "stderr.txt"
    with open(stderr_path, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "kp.llm.serve", "--model", str(model_path), "--host", "127.0.0.1", "--port", "0",
             "-c", str(CONFIG.context), "--max-queue", "4"],
            stdout=subprocess.PIPE, stderr=stderr, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    try:
        try:
            banner = lines.get(timeout=STARTUP_TIMEOUT)
        except queue.Empty:
            pytest.fail(f"the server did not start within {STARTUP_TIMEOUT} s: {stderr_path.read_text()}")
        prefix = f"kp.llm.serve: {NAME} on http://127.0.0.1:"
        assert banner.startswith(prefix) and banner.rstrip().endswith("/v1"), (banner, stderr_path.read_text())
        # Listening on loopback only: the address it bound is 127.0.0.1.
        yield banner[len("kp.llm.serve: " + NAME + " on "):].strip()
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            status = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
            pytest.fail("the server did not stop within 30 s of SIGTERM")
    log = stderr_path.read_text()
    assert status == 0, log
    # No validation-layer error (warnings, such as the H200's layer
    # warning about its own vkGetDeviceProcAddr use, are not errors) and
    # no exception.
    assert "ERROR: [validation]" not in log and "Traceback" not in log, log


class Http:
    """Plain HTTP requests at a server's root (/health, /v1/...), for what
    the openai client will not send; no proxy, a timeout on each."""

    def __init__(self, root):
        self.root = root
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def request(self, method, path, body=None, headers=None):
        """(status, decoded JSON body)."""
        if body is not None and not isinstance(body, bytes):
            body = json.dumps(body).encode()
        request = urllib.request.Request(self.root + path, data=body, method=method,
                                         headers=dict({"Content-Type": "application/json"}, **(headers or {})))
        try:
            with self._opener.open(request, timeout=REQUEST_TIMEOUT) as reply:
                return reply.status, json.loads(reply.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, body):
        return self.request("POST", path, body)


@pytest.fixture
def http(server):
    return Http(server[:-len("/v1")])


def make_client(base_url, api_key="unused"):
    # trust_env=False: no proxy from the environment between the tests and 127.0.0.1.
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=REQUEST_TIMEOUT,
                         http_client=openai.DefaultHttpxClient(trust_env=False, timeout=REQUEST_TIMEOUT))


@pytest.fixture
def client(server):
    client = make_client(server)
    yield client
    client.close()


def chat_prompt(reference, messages):
    return reference.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)


def greedy_text(reference, prompt, n):
    return reference.tokenizer.decode(reference.generate(prompt, n=n, temperature=0))


def health(http):
    status, body = http.get("/health")
    assert status == 200
    return body


# --- Replies ------------------------------------------------------------------------------

def test_models_and_health(client, http):
    models = client.models.list()
    assert [model.id for model in models.data] == [NAME]
    assert client.models.retrieve(NAME).id == NAME
    state = health(http)
    assert state["status"] == "ok" and state["model"] == NAME and state["running"] == 0


def test_chat_completion_is_generate_on_the_chat_prompt(client, reference):
    prompt = chat_prompt(reference, MESSAGES)
    expected = reference.generate(prompt, n=12, temperature=0)
    reply = client.chat.completions.create(model=NAME, messages=MESSAGES, temperature=0, max_tokens=12)
    assert reply.object == "chat.completion" and reply.model == NAME and len(reply.choices) == 1
    choice = reply.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == reference.tokenizer.decode(expected)
    assert choice.finish_reason == ("length" if len(expected) == 12 else "stop")
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (len(prompt), len(expected))
    assert reply.usage.total_tokens == len(prompt) + len(expected)


def test_chat_streams_the_same_reply(client, reference):
    expected = greedy_text(reference, chat_prompt(reference, MESSAGES), 12)
    stream = client.chat.completions.create(model=NAME, messages=MESSAGES, temperature=0, max_tokens=12, stream=True,
                                            stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == expected
    finishes = [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices and chunk.choices[0].finish_reason]
    assert len(finishes) == 1
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens <= 12
    assert len({chunk.id for chunk in chunks}) == 1


def test_text_completions_streamed_and_not(client, reference):
    expected = greedy_text(reference, "Once upon a time", 10)
    reply = client.completions.create(model=NAME, prompt="Once upon a time", temperature=0, max_tokens=10)
    assert reply.object == "text_completion" and reply.choices[0].text == expected
    assert reply.usage.prompt_tokens == len(reference.tokenizer.encode("Once upon a time"))
    pieces = [chunk.choices[0].text for chunk in client.completions.create(
        model=NAME, prompt="Once upon a time", temperature=0, max_tokens=10, stream=True)]
    assert "".join(pieces) == expected
    ids = [1, 40, 270, 7, 100]
    by_ids = client.completions.create(model=NAME, prompt=ids, temperature=0, max_tokens=6)
    assert by_ids.choices[0].text == greedy_text(reference, ids, 6) and by_ids.usage.prompt_tokens == len(ids)
    # Without max_tokens, the OpenAI default of 16.
    default = client.completions.create(model=NAME, prompt=ids, temperature=0, extra_body={"ignore_eos": True})
    assert default.usage.completion_tokens == 16


def test_stop_sequences(client, reference):
    full = greedy_text(reference, "Once upon a time", 24)
    at = next(i for i in range(3, len(full) - 1) if full[i:i + 2].isprintable() and "\ufffd" not in full[i:i + 2])
    stop = full[at:at + 2]
    expected = full[:full.find(stop)]
    reply = client.completions.create(model=NAME, prompt="Once upon a time", temperature=0, max_tokens=24,
                                      stop=[stop, "not in the text"])
    assert reply.choices[0].text == expected and reply.choices[0].finish_reason == "stop"
    streamed = client.completions.create(model=NAME, prompt="Once upon a time", temperature=0, max_tokens=24,
                                         stop=stop, stream=True)
    assert "".join(chunk.choices[0].text for chunk in streamed) == expected


def test_a_seed_repeats_a_sampled_reply(client):
    def sampled(seed):
        return client.chat.completions.create(model=NAME, messages=MESSAGES, temperature=1.0, top_p=0.9, seed=seed,
                                              max_tokens=10).choices[0].message.content
    assert sampled(7) == sampled(7)


# --- Several clients ------------------------------------------------------------------------

def test_two_concurrent_clients_get_their_own_replies(server, reference, http):
    conversations = [MESSAGES, [{"role": "user", "content": "Count to three"}]]
    expected = [greedy_text(reference, chat_prompt(reference, messages), 30) for messages in conversations]
    served_before = health(http)["served"]
    results, errors = [None, None], []
    start = threading.Barrier(2, timeout=REQUEST_TIMEOUT)

    def converse(index):
        client = make_client(server)
        try:
            start.wait()
            stream = client.chat.completions.create(model=NAME, messages=conversations[index], temperature=0,
                                                    max_tokens=30, stream=True)
            results[index] = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
        except Exception as error:  # reported below, in the test's thread
            errors.append(error)
        finally:
            client.close()

    threads = [threading.Thread(target=converse, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=2 * REQUEST_TIMEOUT)
    assert not any(thread.is_alive() for thread in threads), "a client is still waiting"
    assert not errors, errors
    assert results == expected
    assert health(http)["served"] == served_before + 2


def test_a_client_dropping_its_stream_frees_the_model(client, reference, http):
    before = health(http)
    # A long generation (every token the context holds, EOS ignored), dropped after its first pieces.
    stream = client.chat.completions.create(model=NAME, messages=MESSAGES, temperature=0, stream=True,
                                            extra_body={"ignore_eos": True})
    pieces = iter(stream)
    next(pieces)
    next(pieces)
    stream.close()
    deadline = time.monotonic() + REQUEST_TIMEOUT
    while True:
        state = health(http)
        if state["running"] == 0 and state["cancelled"] > before["cancelled"]:
            break
        assert time.monotonic() < deadline, f"the dropped generation still runs: {state}"
        time.sleep(0.05)
    assert state["served"] == before["served"]  # stopped, not finished
    # The model serves the next request, and correctly.
    reply = client.chat.completions.create(model=NAME, messages=MESSAGES, temperature=0, max_tokens=8)
    assert reply.choices[0].message.content == greedy_text(reference, chat_prompt(reference, MESSAGES), 8)


# --- Bad requests -----------------------------------------------------------------------------

def error_of(reply, status):
    assert reply[0] == status, reply
    body = reply[1]
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]


def test_bad_requests_get_openai_errors(client, http, reference):
    error = error_of(http.post("/v1/chat/completions", b'{"messages": ['), 400)
    assert error["type"] == "invalid_request_error" and "not valid JSON" in error["message"]
    error = error_of(http.post("/v1/completions", ["a list"]), 400)
    assert "must be a JSON object" in error["message"]
    with pytest.raises(openai.NotFoundError) as raised:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert raised.value.status_code == 404 and raised.value.code == "model_not_found"
    assert "'gpt-4o' does not exist" in raised.value.message
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model=NAME, messages=MESSAGES, max_tokens=100000)
    assert raised.value.code == "context_length_exceeded" and raised.value.param == "max_tokens"
    assert "leaves room for at most" in raised.value.message
    with pytest.raises(openai.BadRequestError, match="'temperature' must be between 0.0 and 2.0"):
        client.completions.create(model=NAME, prompt="x", temperature=5)
    with pytest.raises(openai.BadRequestError, match="'temperature' must be a number"):
        client.completions.create(model=NAME, prompt="x", extra_body={"temperature": "hot"})
    with pytest.raises(openai.BadRequestError, match="'messages' must be a non-empty list"):
        client.chat.completions.create(model=NAME, messages=[])
    with pytest.raises(openai.BadRequestError, match="'n' must be 1"):
        client.chat.completions.create(model=NAME, messages=MESSAGES, n=2)
    with pytest.raises(openai.BadRequestError, match="'stop' takes at most 4 strings"):
        client.completions.create(model=NAME, prompt="x", stop=["a", "b", "c", "d", "e"])
    with pytest.raises(openai.BadRequestError, match="outside the vocabulary"):
        client.completions.create(model=NAME, prompt=[1, 2, 99999])
    with pytest.raises(openai.BadRequestError, match="only text parts"):
        client.chat.completions.create(model=NAME, messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:,"}}]}])
    error = error_of(http.get("/v1/no-such-thing"), 404)
    assert "no such endpoint" in error["message"]
    error_of(http.get("/v1/chat/completions"), 405)
    # Text parts are joined, and the server is unharmed by all of the above.
    parts = [{"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]}]
    joined = client.chat.completions.create(model=NAME, messages=parts, temperature=0, max_tokens=5)
    expected = greedy_text(reference, chat_prompt(reference, [{"role": "user", "content": "Hi\nthere"}]), 5)
    assert joined.choices[0].message.content == expected
    assert health(http)["status"] == "ok"


def test_the_program_refuses_bad_arguments(model_path, tmp_path):
    run = subprocess.run([sys.executable, "-m", "kp.llm.serve", "--model", str(tmp_path / "absent.gguf"), "--port",
                          "0"], capture_output=True, text=True, timeout=REQUEST_TIMEOUT)
    assert run.returncode == 1 and "cannot open" in run.stderr
    run = subprocess.run([sys.executable, "-m", "kp.llm.serve"], capture_output=True, text=True,
                         timeout=REQUEST_TIMEOUT)
    assert run.returncode == 2 and "--model" in run.stderr


def test_api_key_and_a_full_queue(model_path):
    # A second server, with a key (requests without it get 401) and no
    # room to wait (a request while one runs gets 503).
    process = subprocess.Popen([sys.executable, "-m", "kp.llm.serve", "--model", str(model_path), "--port", "0",
                                "--api-key", "sesame", "--max-queue", "0", "-c", str(CONFIG.context)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    try:
        banner = lines.get(timeout=STARTUP_TIMEOUT)
        base = banner.split(" on ", 1)[1].strip()
        with pytest.raises(openai.AuthenticationError):
            make_client(base).models.list()
        client = make_client(base, api_key="sesame")
        assert client.models.list().data[0].id == NAME
        assert Http(base[:-len("/v1")]).get("/health")[0] == 200  # no key needed
        long = client.completions.create(model=NAME, prompt="ab", stream=True, max_tokens=400,
                                         extra_body={"ignore_eos": True})
        next(iter(long))  # it runs now
        with pytest.raises(openai.InternalServerError) as raised:
            client.completions.create(model=NAME, prompt="ab", max_tokens=2)
        assert raised.value.status_code == 503 and "the server is busy" in raised.value.message
        long.close()
        deadline = time.monotonic() + REQUEST_TIMEOUT
        while True:  # the dropped one frees the model, and the next request runs
            try:
                assert client.completions.create(model=NAME, prompt="ab", max_tokens=2).choices[0].text is not None
                break
            except openai.InternalServerError:
                assert time.monotonic() < deadline, "the model stayed busy after its client left"
                time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            assert process.wait(timeout=30) == 0
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
            raise


def test_chat_without_a_template_is_a_clear_error(tmp_path):
    need_gguf()
    bare = tmp_path / "bare.gguf"
    write_model(bare, TinyConfig(), "f32", seed=2)
    process = subprocess.Popen([sys.executable, "-m", "kp.llm.serve", "--model", str(bare), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    try:
        base = lines.get(timeout=STARTUP_TIMEOUT).split(" on ", 1)[1].strip()
        http = Http(base[:-len("/v1")])
        error = error_of(http.post("/v1/chat/completions", {"messages": MESSAGES}), 400)
        assert "has no chat template" in error["message"] and "--chat-template" in error["message"]
        assert http.post("/v1/completions", {"prompt": "ab", "max_tokens": 2})[0] == 200
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
    assert "/v1/chat/completions is off" in process.stderr.read()


def test_server_can_be_used_in_process(reference):
    # Server() without the program: the aiohttp application, for embedding.
    server = kp.llm.serve.Server(reference, "in-process", max_queue=1)
    try:
        app = server.application()
        assert {route.resource.canonical for route in app.router.routes()} >= {
            "/v1/chat/completions", "/v1/completions", "/v1/models", "/health"}
        assert server.chat_template_problem is None
    finally:
        server.close()

