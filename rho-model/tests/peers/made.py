"""Builds model-API responses with the official SDKs' own response models.

    VENV/bin/python made.py < request.json > response.json

stdin:  one JSON object
    {"kind": K,
     "calls": [{"id": "call_1", "name": "get_weather",
                "arguments": "{\"city\":\"Paris\"}",
                "thought_signature": "base64..."}],      # Gemini only, optional
     "text": "optional assistant text",
     "chunk": 7}                                         # stream kinds, default 7
stdout: one JSON value, the body (or, for *.stream, the array of streamed
        events / chunks, in order) as the API sends it.

`arguments` is the raw argument string as the model streamed it; it may be
invalid JSON on purpose. OpenAI carries it as it is. Anthropic's `input` and
Gemini's `args` are parsed objects, so for anthropic.response, gemini.response
and gemini.stream it must parse as a JSON object (an empty string counts as
{}), else made.py fails; anthropic.stream streams the raw string in
`partial_json` pieces, so anything goes there.

Every value is put together as the wire JSON, validated by the SDK model
(OpenAI/Anthropic: `model_validate`, then refused if any model on the way
kept an unknown key, since those models allow extras; Gemini: strict JSON,
by alias, unknown fields forbidden) and dumped back with
`model_dump(mode="json", by_alias=True, exclude_unset=True)` (Gemini:
`exclude_none=True`, camelCase), so the output is exactly what the SDK
accepted, nulls included where the API sends them.

Ids: a call's `id` is used verbatim (OpenAI chat `id`, Responses `call_id`,
Anthropic `id`, Gemini `functionCall.id`); when it is missing: call_N,
toolu_N, and no id for Gemini. Responses item ids are fc_rho_N / msg_rho_1.
An empty or missing `text` means no text part.

Errors go to stderr with exit status 1 (bad input: 2).
"""

from __future__ import annotations

import json
import sys
import typing
import warnings

import pydantic

CREATED = 1767225600  # 2026-01-01T00:00:00Z, fixed so outputs are stable


class Refused(Exception):
    pass


# --- helpers ---------------------------------------------------------------

def pieces(s, n):
    return [s[i:i + n] for i in range(0, len(s), n)]


def round_robin(per_call):
    """[(call index, piece)] taking one piece of each call in turn."""
    out, r = [], 0
    while any(r < len(p) for p in per_call):
        for i, p in enumerate(per_call):
            if r < len(p):
                out.append((i, p[r]))
        r += 1
    return out


def parsed_args(call, api):
    raw = call["arguments"]
    if raw == "":
        return {}
    try:
        v = json.loads(raw)
    except json.JSONDecodeError as e:
        raise Refused(f"{api} needs the arguments of call {call['name']!r} as a JSON object, "
                      f"and {raw!r} is not JSON: {e}")
    if not isinstance(v, dict):
        raise Refused(f"{api} needs the arguments of call {call['name']!r} as a JSON object, got {raw!r}")
    return v


def no_extras(obj, path="$"):
    """OpenAI's and Anthropic's models keep unknown keys (extra=allow); refuse them."""
    if isinstance(obj, pydantic.BaseModel):
        extra = obj.__pydantic_extra__ or {}
        if extra:
            raise Refused(f"{type(obj).__name__} at {path} does not define {sorted(extra)}")
        for name in type(obj).model_fields:
            no_extras(getattr(obj, name), f"{path}.{name}")
    elif isinstance(obj, (list, tuple)):
        for i, x in enumerate(obj):
            no_extras(x, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for k, x in obj.items():
            no_extras(x, f"{path}.{k}")


def sdk(model, wire):
    """Validate wire JSON with an OpenAI/Anthropic response model; dump it back."""
    try:
        m = model.model_validate(wire)
    except pydantic.ValidationError as e:
        raise Refused(f"{model.__name__} refused what made.py built: {e}")
    no_extras(m)
    return keep_ints(m.model_dump(mode="json", by_alias=True, exclude_unset=True), wire)


def keep_ints(dumped, wire):
    """A float field given an integer (created_at) is sent as the integer."""
    if isinstance(dumped, float) and isinstance(wire, int) and not isinstance(wire, bool) and dumped == wire:
        return wire
    if isinstance(dumped, dict) and isinstance(wire, dict):
        return {k: keep_ints(v, wire.get(k)) for k, v in dumped.items()}
    if isinstance(dumped, list) and isinstance(wire, list) and len(dumped) == len(wire):
        return [keep_ints(d, w) for d, w in zip(dumped, wire)]
    return dumped


def by_type(union):
    """{type literal: model} for the members of a discriminated union."""
    while typing.get_origin(union) is typing.Annotated:
        union = typing.get_args(union)[0]
    out = {}
    for m in typing.get_args(union):
        lit = m.model_fields["type"].annotation
        for v in typing.get_args(lit):
            out[v] = m
    return out


def gemini(model, wire):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            m = model.model_validate_json(json.dumps(wire), strict=True, by_alias=True, by_name=False)
        except pydantic.ValidationError as e:
            raise Refused(f"google.genai {model.__name__} refused what made.py built: {e}")
    if caught:
        raise Refused(f"google.genai {model.__name__}: {caught[0].message}")
    return m.model_dump(mode="json", by_alias=True, exclude_none=True)


# --- OpenAI Chat Completions ----------------------------------------------

def openai_chat_response(req):
    from openai.types.chat import ChatCompletion

    message = {"role": "assistant", "content": req["text"], "refusal": None, "annotations": []}
    if req["calls"]:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in req["calls"]
        ]
    return sdk(ChatCompletion, {
        "id": "chatcmpl-rho1",
        "object": "chat.completion",
        "created": CREATED,
        "model": "gpt-5",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": "tool_calls" if req["calls"] else "stop",
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
        "service_tier": "default",
        "system_fingerprint": None,
    })


def openai_chat_stream(req):
    from openai.types.chat import ChatCompletionChunk

    def chunk(delta, finish=None):
        return sdk(ChatCompletionChunk, {
            "id": "chatcmpl-rho1",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": "gpt-5",
            "service_tier": "default",
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        })

    n = req["chunk"]
    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for piece in pieces(req["text"] or "", n):
        out.append(chunk({"content": piece}))
    for i, c in enumerate(req["calls"]):
        out.append(chunk({"tool_calls": [{
            "index": i, "id": c["id"], "type": "function",
            "function": {"name": c["name"], "arguments": ""},
        }]}))
    for i, piece in round_robin([pieces(c["arguments"], n) for c in req["calls"]]):
        out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls" if req["calls"] else "stop"))
    return out


# --- OpenAI Responses ---------------------------------------------------------

def _responses_parts(req):
    msg = None
    if req["text"]:
        msg = {
            "id": "msg_rho_1", "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": req["text"], "annotations": [], "logprobs": []}],
        }
    calls = [{
        "id": f"fc_rho_{i + 1}", "type": "function_call", "status": "completed",
        "call_id": c["id"], "name": c["name"], "arguments": c["arguments"],
    } for i, c in enumerate(req["calls"])]
    return msg, calls


def _response(status, output, usage):
    body = {
        "id": "resp_rho1", "object": "response", "created_at": CREATED, "status": status,
        "background": False, "error": None, "incomplete_details": None, "instructions": None,
        "max_output_tokens": None, "model": "gpt-5", "output": output,
        "parallel_tool_calls": True, "previous_response_id": None, "reasoning": {"effort": None, "summary": None},
        "temperature": 1.0, "text": {"format": {"type": "text"}},
        "tool_choice": "auto", "tools": [], "top_p": 1.0, "truncation": "disabled",
        "usage": None, "user": None, "metadata": {},
    }
    if usage:
        body["usage"] = {
            "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 30,
        }
    return body


def openai_responses_response(req):
    from openai.types.responses import Response

    msg, calls = _responses_parts(req)
    return sdk(Response, _response("completed", ([msg] if msg else []) + calls, True))


def openai_responses_client_calls(req):
    """A Response whose output is calls of the client tools: a call named
    `shell` is a `shell_call` whose action is its arguments, one named
    `apply_patch` an `apply_patch_call` whose operation is its arguments."""
    from openai.types.responses import Response

    items = []
    for i, c in enumerate(req["calls"]):
        body = parsed_args(c, "Responses (client tool calls)")
        if c["name"] == "shell":
            items.append({"id": f"sh_rho_{i + 1}", "type": "shell_call", "status": "completed",
                          "call_id": c["id"], "action": body})
        elif c["name"] == "apply_patch":
            items.append({"id": f"ap_rho_{i + 1}", "type": "apply_patch_call", "status": "completed",
                          "call_id": c["id"], "operation": body})
        else:
            raise Refused(f"call {c['name']!r}: this kind makes only shell and apply_patch calls")
    return sdk(Response, _response("completed", items, True))


def openai_responses_stream(req):
    from openai.types.responses import ResponseStreamEvent

    models = by_type(ResponseStreamEvent)
    out = []

    def ev(type_, **fields):
        out.append(sdk(models[type_], {"type": type_, "sequence_number": len(out), **fields}))

    n = req["chunk"]
    msg, calls = _responses_parts(req)
    ev("response.created", response=_response("in_progress", [], False))
    ev("response.in_progress", response=_response("in_progress", [], False))
    index = 0
    if msg:
        text = req["text"]
        part = msg["content"][0]
        ev("response.output_item.added", output_index=0,
           item={**msg, "status": "in_progress", "content": []})
        ev("response.content_part.added", item_id=msg["id"], output_index=0, content_index=0,
           part={**part, "text": ""})
        for piece in pieces(text, n):
            ev("response.output_text.delta", item_id=msg["id"], output_index=0, content_index=0,
               delta=piece, logprobs=[])
        ev("response.output_text.done", item_id=msg["id"], output_index=0, content_index=0,
           text=text, logprobs=[])
        ev("response.content_part.done", item_id=msg["id"], output_index=0, content_index=0, part=part)
        ev("response.output_item.done", output_index=0, item=msg)
        index = 1
    for i, item in enumerate(calls):
        ev("response.output_item.added", output_index=index + i,
           item={**item, "status": "in_progress", "arguments": ""})
    for i, piece in round_robin([pieces(c["arguments"], n) for c in calls]):
        ev("response.function_call_arguments.delta", item_id=calls[i]["id"], output_index=index + i,
           delta=piece)
    for i, item in enumerate(calls):
        ev("response.function_call_arguments.done", item_id=item["id"], output_index=index + i,
           arguments=item["arguments"])
        ev("response.output_item.done", output_index=index + i, item=item)
    ev("response.completed", response=_response("completed", ([msg] if msg else []) + calls, True))
    return out


# --- Anthropic Messages ----------------------------------------------------------

def _anthropic_message(content, stop_reason, output_tokens):
    return {
        "id": "msg_rho1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": content, "stop_reason": stop_reason, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": output_tokens,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def anthropic_response(req):
    from anthropic.types import Message

    content = []
    if req["text"]:
        content.append({"type": "text", "text": req["text"]})
    for c in req["calls"]:
        content.append({"type": "tool_use", "id": c["id"], "name": c["name"],
                        "input": parsed_args(c, "Anthropic (tool_use.input)")})
    return sdk(Message, _anthropic_message(content, "tool_use" if req["calls"] else "end_turn", 20))


def anthropic_stream(req):
    from anthropic.types import RawMessageStreamEvent

    models = by_type(RawMessageStreamEvent)
    out = []

    def ev(type_, **fields):
        out.append(sdk(models[type_], {"type": type_, **fields}))

    n = req["chunk"]
    ev("message_start", message=_anthropic_message([], None, 1))
    index = 0
    if req["text"]:
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""})
        for piece in pieces(req["text"], n):
            ev("content_block_delta", index=0, delta={"type": "text_delta", "text": piece})
        ev("content_block_stop", index=0)
        index = 1
    # Anthropic streams one block after another, never interleaved
    for c in req["calls"]:
        ev("content_block_start", index=index,
           content_block={"type": "tool_use", "id": c["id"], "name": c["name"], "input": {}})
        for piece in pieces(c["arguments"], n):
            ev("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece})
        ev("content_block_stop", index=index)
        index += 1
    ev("message_delta", delta={"stop_reason": "tool_use" if req["calls"] else "end_turn", "stop_sequence": None},
       usage={"output_tokens": 20})
    ev("message_stop")
    return out


# --- Gemini -------------------------------------------------------------------------

def _gemini_call_part(c):
    call = {"name": c["name"], "args": parsed_args(c, "Gemini (functionCall.args)")}
    if c.get("id"):
        call = {"id": c["id"], **call}
    part = {"functionCall": call}
    if c.get("thought_signature"):
        part["thoughtSignature"] = c["thought_signature"]
    return part


def _gemini_chunk(parts, finish):
    cand = {"content": {"role": "model", "parts": parts}, "index": 0}
    body = {"candidates": [cand], "modelVersion": "gemini-2.5-flash", "responseId": "rho-1"}
    if finish:
        cand["finishReason"] = "STOP"
        body["usageMetadata"] = {"promptTokenCount": 10, "candidatesTokenCount": 20, "totalTokenCount": 30}
    return body


def gemini_response(req):
    from google.genai.types import GenerateContentResponse

    parts = [{"text": req["text"]}] if req["text"] else []
    parts += [_gemini_call_part(c) for c in req["calls"]]
    return gemini(GenerateContentResponse, _gemini_chunk(parts, True))


def gemini_stream(req):
    from google.genai.types import GenerateContentResponse

    # Gemini streams text in pieces and each functionCall part whole
    parts = [[{"text": p}] for p in pieces(req["text"] or "", req["chunk"])]
    parts += [[_gemini_call_part(c)] for c in req["calls"]]
    if not parts:
        parts = [[]]
    return [gemini(GenerateContentResponse, _gemini_chunk(p, i == len(parts) - 1))
            for i, p in enumerate(parts)]


KINDS = {
    "openai.chat.response": openai_chat_response,
    "openai.chat.stream": openai_chat_stream,
    "openai.responses.response": openai_responses_response,
    "openai.responses.stream": openai_responses_stream,
    "openai.responses.client_calls": openai_responses_client_calls,
    "anthropic.response": anthropic_response,
    "anthropic.stream": anthropic_stream,
    "gemini.response": gemini_response,
    "gemini.stream": gemini_stream,
}

DEFAULT_ID = {"openai": "call_{}", "anthropic": "toolu_{}", "gemini": None}


def read_request(raw):
    if not isinstance(raw, dict):
        raise ValueError("stdin must be one JSON object")
    unknown = set(raw) - {"kind", "calls", "text", "chunk"}
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)}; known: kind, calls, text, chunk")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; kinds: {sorted(KINDS)}")
    text = raw.get("text")
    if text is not None and not isinstance(text, str):
        raise ValueError("text must be a string")
    chunk = raw.get("chunk", 7)
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError("chunk must be an integer >= 1")
    calls = raw.get("calls", [])
    if not isinstance(calls, list):
        raise ValueError("calls must be an array")
    template = DEFAULT_ID[kind.split(".")[0]]
    out = []
    for i, c in enumerate(calls):
        if not isinstance(c, dict):
            raise ValueError(f"calls[{i}] must be an object")
        unknown = set(c) - {"id", "name", "arguments", "thought_signature"}
        if unknown:
            raise ValueError(f"calls[{i}]: unknown keys {sorted(unknown)}")
        if not isinstance(c.get("name"), str) or not isinstance(c.get("arguments"), str):
            raise ValueError(f"calls[{i}] needs name and arguments, both strings")
        c = dict(c)
        if c.get("id") is None and template:
            c["id"] = template.format(i + 1)
        out.append(c)
    return {"kind": kind, "calls": out, "text": text or None, "chunk": chunk}


def make(raw):
    """One request's value; raises ValueError (bad input) or Refused."""
    req = read_request(raw)
    return KINDS[req["kind"]](req)


def main():
    """One request object in, its value out; or an array of requests in,
    an array out with `{"refused": "<why>"}` where the SDK refused one."""
    try:
        raw = json.load(sys.stdin)
    except ValueError as e:
        print(f"made.py: bad input: {e}", file=sys.stderr)
        sys.exit(2)
    try:
        if isinstance(raw, list):
            out = []
            for item in raw:
                try:
                    out.append(make(item))
                except Refused as e:
                    out.append({"refused": str(e)})
            value = out
        else:
            value = make(raw)
    except ValueError as e:
        print(f"made.py: bad input: {e}", file=sys.stderr)
        sys.exit(2)
    except Refused as e:
        print(f"made.py: {e}", file=sys.stderr)
        sys.exit(1)
    json.dump(value, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
