"""Local emulations of real providers' documented request rules and error shapes, on 127.0.0.1, for the tests.

Each ``rules`` set enforces what that provider's documentation says it refuses, and answers with
the documented error shape; an accepted request gets a completion that fits what was asked (the
response schema, or the schema written into the prompt), with usage in the provider's own fields.

- ``openai``: a root that is not an object (or is ``anyOf``) is refused; strict schemas must keep
  the strict subset; reasoning model names (o1, o3, o4, gpt-5) refuse ``max_tokens`` and a
  non-default ``temperature``; unknown parameters are refused; ``json_object`` needs "json" in the
  messages. Usage: ``prompt_tokens_details.cached_tokens``, ``completion_tokens_details.reasoning_tokens``.
- ``deepseek``: ``json_schema`` is "unavailable"; ``json_object`` needs "json" in the prompt;
  reasoner models answer with ``reasoning_content``. Usage: ``prompt_cache_hit_tokens``.
- ``ollama``: ``response_format`` becomes Ollama's ``format`` (an object-root JSON schema or "json");
  thinking comes back in ``message.reasoning``; ``/v1/models`` says ``owned_by: library``.
- ``dashscope``: ``json_object`` only; ``enable_thinking`` on by default, thoughts in ``reasoning_content``.
- ``llamacpp``: llama.cpp's server as the probe met it: it accepts every parameter, honours ``max_tokens``
  and the ``json_object`` schema (a grammar), and ignores ``max_completion_tokens`` (asked for 16 tokens
  of a long answer, it gives all 113).
- ``ignoring``: an endpoint that accepts every parameter and honours none: free text whatever the format,
  every token of a long answer, a new reply each time whatever the seed, thinking it was asked to skip.

Every server answers at most the limit it honours (a long answer, to "count from 1 to 100", is 113 tokens;
any other 20), stopping with ``finish_reason: length`` there. The preflight request every live matrix and
probe starts with (``harness.models.dead_endpoint``) is answered like any other but never recorded.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.models.dead_endpoint import is_preflight
from tests.helpers.fault_server import instance

OPENAI_PARAMETERS = {
    "model",
    "messages",
    "temperature",
    "top_p",
    "n",
    "stream",
    "stop",
    "max_tokens",
    "max_completion_tokens",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "user",
    "seed",
    "response_format",
    "tools",
    "tool_choice",
    "reasoning_effort",
    "logprobs",
    "top_logprobs",
    "store",
    "metadata",
    "service_tier",
    "parallel_tool_calls",
    "stream_options",
}
STRICT_UNSUPPORTED = {
    "minLength",
    "maxLength",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "patternProperties",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "default",
    "const",
    "oneOf",
    "propertyNames",
}
REASONING = re.compile(r"^(o\d|gpt-5)")
SCHEMA_NOTE = "It must match this JSON schema: "
LONG_ANSWER_TOKENS = 113  # what llama.cpp's server gave the probe's long question when it ignored the limit
ANSWER_TOKENS = 20
HONOURED_LIMITS = {"llamacpp": ("max_tokens",), "ignoring": ()}  # the rest honour both token parameters


def openai_error(message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def prompt_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The schema bench wrote into the instructions, when it did."""
    for message in body.get("messages", []):
        content = message.get("content") or ""
        if SCHEMA_NOTE in content:
            value, _ = json.JSONDecoder().raw_decode(content, content.index(SCHEMA_NOTE) + len(SCHEMA_NOTE))
            return value
    return None


def strict_violation(schema: Any, where: tuple[str, ...] = ()) -> str | None:
    """The first way ``schema`` breaks OpenAI's strict subset, in the words of its error."""
    if not isinstance(schema, dict):
        return None
    for keyword in STRICT_UNSUPPORTED & set(schema):
        return f"In context={where}, '{keyword}' is not permitted."
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else (kinds or [])
    if "object" in kinds:
        if schema.get("additionalProperties") is not False:
            return f"In context={where}, 'additionalProperties' is required to be supplied and to be false."
        props = schema.get("properties", {})
        if sorted(schema.get("required", [])) != sorted(props):
            missing = sorted(set(props) - set(schema.get("required", [])))
            return (
                f"In context={where}, 'required' is required to be supplied and to be an array including every "
                f"key in properties. Missing '{missing[0] if missing else '?'}'."
            )
        for name, sub in props.items():
            if (problem := strict_violation(sub, (*where, "properties", name))) is not None:
                return problem
    for index, sub in enumerate(schema.get("anyOf", [])):
        if (problem := strict_violation(sub, (*where, "anyOf", str(index)))) is not None:
            return problem
    if "items" in schema:
        return strict_violation(schema["items"], (*where, "items"))
    return None


class ProviderServer:
    """Serves one provider's rules on 127.0.0.1; keeps every body it got and which it refused."""

    def __init__(self, rules: str, *, content: Callable[[str], str] | None = None):
        self.rules = rules
        self.replies = 0  # the ignoring server's replies differ each time, whatever the seed
        self.content = content  # replaces the fitting answer's text (e.g. to echo a key into it)
        self.bodies: list[dict[str, Any]] = []
        self.refusals: list[tuple[int, str]] = []
        self.accepted: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ProviderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # ---------------------------------------------------------------- the rules

    def refuse(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        return getattr(self, f"_{self.rules}")(body)

    def _openai(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        for name in body:
            if name not in OPENAI_PARAMETERS:
                return 400, openai_error(f"Unrecognized request argument supplied: {name}")
        model = body.get("model", "")
        if REASONING.match(model):
            if "max_tokens" in body:
                return 400, openai_error(
                    "Unsupported parameter: 'max_tokens' is not supported with this model. "
                    "Use 'max_completion_tokens' instead.",
                    "max_tokens",
                    "unsupported_parameter",
                )
            if body.get("temperature", 1) != 1:
                return 400, openai_error(
                    f"Unsupported value: 'temperature' does not support {body['temperature']} "
                    "with this model. Only the default (1) value is supported.",
                    "temperature",
                    "unsupported_value",
                )
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            spec = fmt.get("json_schema", {})
            schema = spec.get("schema", {})
            name = spec.get("name", "")
            if set(fmt) - {"type", "json_schema"} or set(spec) - {"name", "schema", "strict", "description"}:
                return 400, openai_error("Unknown parameter: 'response_format.schema'.", "response_format")
            if schema.get("type") != "object" or "anyOf" in schema:
                return 400, openai_error(
                    f"Invalid schema for response_format '{name}': schema must be a JSON Schema "
                    f"of 'type: \"object\"', got 'type: \"{schema.get('type')}\"'.",
                    "response_format",
                    "invalid_json_schema",
                )
            if spec.get("strict") and (problem := strict_violation(schema)) is not None:
                return 400, openai_error(
                    f"Invalid schema for response_format '{name}': {problem}", "response_format", "invalid_json_schema"
                )
        if isinstance(fmt, dict) and fmt.get("type") == "json_object":
            if set(fmt) != {"type"}:
                return 400, openai_error(
                    "Unknown parameter: 'response_format.schema'.", "response_format.schema", "unknown_parameter"
                )
            if "json" not in json.dumps(body.get("messages", [])).lower():
                return 400, openai_error(
                    "'messages' must contain the word 'json' in some form, to use "
                    "'response_format' of type 'json_object'.",
                    "messages",
                )
        return None

    def _deepseek(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") not in ("text", "json_object"):
            return 400, {
                "error": {
                    "message": "This response_format type is unavailable now",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_request_error",
                }
            }
        if isinstance(fmt, dict) and "json" not in json.dumps(body.get("messages", [])).lower():
            return 400, {
                "error": {
                    "message": "Prompt must contain the word 'json' in some form to use "
                    "'response_format' of type 'json_object'.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_request_error",
                }
            }
        return None

    def _ollama(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                return 400, {
                    "error": {
                        "message": 'invalid format: expected "json" or a JSON schema object',
                        "type": "invalid_request_error",
                        "param": None,
                    }
                }
        return None

    def _llamacpp(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        return None  # it refuses nothing

    def _ignoring(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        return None

    def _dashscope(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        if body.get("model", "").startswith("qwen3-") and body.get("enable_thinking", True) is not False:
            return 400, {
                "error": {
                    "message": "<400> InternalError.Algo.InvalidParameter: parameter.enable_thinking "
                    "must be set to false for non-streaming calls",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_parameter_error",
                }
            }
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") not in ("text", "json_object"):
            return 400, {
                "error": {
                    "message": "<400> InternalError.Algo.InvalidParameter: The value of "
                    "'response_format.type' is invalid: json_schema is not supported",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_parameter_error",
                }
            }
        return None

    # ---------------------------------------------------------------- answers

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        fmt = body.get("response_format") or {}
        schema = None
        if fmt.get("type") == "json_schema":
            schema = fmt["json_schema"]["schema"]
        elif fmt.get("type") == "json_object" and self.rules == "generic":
            schema = fmt.get("schema")
        schema = schema or prompt_schema(body) or {"type": "object"}
        text = json.dumps(instance(schema))
        if self.rules == "llamacpp" and fmt.get("type") == "json_object" and "schema" in fmt:
            text = json.dumps(instance(fmt["schema"]))  # its grammar enforces the schema
        if self.rules == "ignoring":
            with self._lock:
                self.replies += 1
                text = f"Sure! Here is my answer number {self.replies}: water is wet."
        if self.content is not None:
            text = self.content(text)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        asked = json.dumps(body.get("messages", []))
        natural = LONG_ANSWER_TOKENS if "Count from 1 to 100" in asked else ANSWER_TOKENS
        honoured = HONOURED_LIMITS.get(self.rules, ("max_tokens", "max_completion_tokens"))
        limits = [body[name] for name in honoured if isinstance(body.get(name), int)]
        completion = min([natural, *limits])
        usage: dict[str, Any] = {
            "prompt_tokens": 100,
            "completion_tokens": completion,
            "total_tokens": 100 + completion,
        }
        model = body.get("model", "")
        if self.rules == "openai":
            usage["prompt_tokens_details"] = {"cached_tokens": 64}
            thinks = REASONING.match(model) and body.get("reasoning_effort") != "minimal"
            usage["completion_tokens_details"] = {"reasoning_tokens": 12 if thinks else 0}
        elif self.rules == "deepseek":
            usage.update(prompt_cache_hit_tokens=48, prompt_cache_miss_tokens=52)
            if "reasoner" in model:
                message["reasoning_content"] = "The user wants JSON. I will answer with the first offered action."
                usage["completion_tokens_details"] = {"reasoning_tokens": 9}
        elif self.rules == "ollama":
            message["reasoning"] = "thinking about it"
        elif self.rules == "ignoring":
            message["reasoning_content"] = "Thinking anyway."
        elif self.rules == "dashscope":
            if body.get("enable_thinking", True):
                message["reasoning_content"] = "Thinking: the schema asks for one action."
                usage["completion_tokens_details"] = {"reasoning_tokens": 7}
            usage["prompt_tokens_details"] = {"cached_tokens": 32}
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "length" if completion < natural else "stop"}
            ],
            "usage": usage,
        }

    def models(self) -> dict[str, Any]:
        owner = {
            "openai": "openai",
            "deepseek": "deepseek",
            "ollama": "library",
            "dashscope": "system",
            "llamacpp": "llamacpp",
            "ignoring": "someone",
        }[self.rules]
        return {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": owner}]}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.split("?")[0].endswith("/models"):
                    self._send(200, server.models())
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                refusal = server.refuse(body)
                if is_preflight(body):  # answered as the provider would, never recorded
                    self._send(*(refusal or (200, server.answer(body))))
                    return
                with server._lock:
                    server.bodies.append(body)
                    if refusal is not None:
                        server.refusals.append((refusal[0], refusal[1]["error"]["message"]))
                    else:
                        server.accepted.append(body)
                if refusal is not None:
                    self._send(*refusal)
                else:
                    self._send(200, server.answer(body))

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
