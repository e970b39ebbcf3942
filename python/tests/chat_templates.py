"""Chat templates of common model families, as their Hugging Face
tokenizer_config.json files publish them (and llama.cpp copies them into
GGUF files as tokenizer.chat_template), with the special tokens of each
family and the text each gives for one conversation, written out by hand
from the model cards' prompt formats."""

# Meta-Llama-3-8B-Instruct.
LLAMA3 = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

# Qwen2.5-7B-Instruct (ChatML, with tool calls).
QWEN25 = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

# Mistral-7B-Instruct-v0.1 (user and assistant only, alternating).
MISTRAL = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}"
    "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}"
)

CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Hi there"},
    {"role": "assistant", "content": "Hello!"},
    {"role": "user", "content": "What is 2+2?"},
]


def family(name):
    """(template, control tokens of the vocabulary, BOS text or None, EOS
    text, add_bos, the conversation, its text with the generation prompt)."""
    if name == "llama3":
        return dict(template=LLAMA3,
                    control=["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                             "<|eot_id|>"],
                    bos="<|begin_of_text|>", eos="<|end_of_text|>", add_bos=True, messages=CONVERSATION,
                    expected="<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
                             "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
                             "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
                             "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
                             "<|start_header_id|>assistant<|end_header_id|>\n\n",
                    end_of_turn="<|eot_id|>")
    if name == "qwen2.5":
        return dict(template=QWEN25, control=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                    bos=None, eos="<|endoftext|>", add_bos=False, messages=CONVERSATION,
                    expected="<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n"
                             "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
                             "<|im_start|>assistant\n",
                    end_of_turn="<|im_end|>")
    if name == "mistral":
        return dict(template=MISTRAL, control=[], bos="<s>", eos="</s>", add_bos=True,
                    messages=CONVERSATION[1:],
                    expected="<s>[INST] Hi there [/INST]Hello!</s>[INST] What is 2+2? [/INST]",
                    end_of_turn="</s>")
    raise ValueError(name)


FAMILIES = ["llama3", "qwen2.5", "mistral"]
