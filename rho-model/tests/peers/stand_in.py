"""A stand-in model API server: a host's whole tool loop, judged by the SDKs.

    VENV/bin/python stand_in.py --script SCRIPT.json [--port 0] [--key KEY]

Binds 127.0.0.1 (port 0: any free port), prints exactly one line
`listening <port>` to stdout once ready, and serves until SIGTERM or
`POST /rho/stop`. SCRIPT.json: {"calls": [{"name": N, "arguments": "<raw
JSON string>"}], "text": "final answer"}.

Endpoints (POST, JSON body; non-streaming answers only):
  /v1/chat/completions, /chat/completions  OpenAI Chat   Authorization: Bearer KEY
  /v1/responses, /responses                OpenAI Responses  (same)
  /v1/messages                             Anthropic     x-api-key: KEY, anthropic-version
  /v1beta/models/<model>:generateContent   Gemini        x-goog-api-key: KEY
  GET /rho/report  {"requests": N, "problems": [{"request", "dialect", "reason"}],
                    "by_dialect": {"chat": n, "responses": n, "anthropic": n, "gemini": n}}
  POST /rho/stop   answers {"stopped": true}, then the server exits

Each request: the body is judged with judge.py's request kind for its dialect
(openai.chat.request.nonstreaming, openai.responses.request.nonstreaming,
anthropic.request.nonstreaming, gemini.request). A request with no tool call
or tool result in its history is a first request: the answer makes the
script's calls (ids call_N; Anthropic toolu_N; Gemini call_N too). Otherwise
the last assistant turn's calls must be the ones made (ids, names) and its
results must answer each of them exactly once, in order (Chat: `role: tool`
messages after the last assistant message; Responses: `function_call_output`
items after the last user item; Anthropic: `tool_result` blocks of the user
message after the last assistant message; Gemini: `functionResponse` parts of
the content after the last `model` content, by id when every call and result
has one, else by name); the answer is the script's text, end of turn. Every
answer is built by made.py (the SDKs' response models), once, at start-up.

A refused body, a failed results check, a missing or wrong key (401, in the
API's error shape; no key check without --key) or a missing anthropic-version
(400) is kept as a problem and written to stderr; apart from 401/400 the
server answers as usual so the host's loop can go on.
"""

from __future__ import annotations

import argparse, json, os, re, signal, sys, threading  # noqa: E401
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import judge  # noqa: E402
import made  # noqa: E402

# dialect: (judge.py request kind, made.py response kind, call id template)
DIALECTS = {
    "chat": ("openai.chat.request.nonstreaming", "openai.chat.response", "call_{}"),
    "responses": ("openai.responses.request.nonstreaming", "openai.responses.response", "call_{}"),
    "anthropic": ("anthropic.request.nonstreaming", "anthropic.response", "toolu_{}"),
    "gemini": ("gemini.request", "gemini.response", "call_{}"),
}


ROUTES = {"/v1/chat/completions": "chat", "/chat/completions": "chat",
          "/v1/responses": "responses", "/responses": "responses", "/v1/messages": "anthropic"}


def route(path):
    path = path.split("?", 1)[0]
    if re.fullmatch(r"/v1beta/models/[^/:]+:generateContent", path):
        return "gemini"
    return ROUTES.get(path)


def error_body(dialect, status, message):
    if dialect == "anthropic":
        kind = "authentication_error" if status == 401 else "invalid_request_error"
        return {"type": "error", "error": {"type": kind, "message": message}}
    if dialect == "gemini":
        return {"error": {"code": status, "message": message,
                          "status": "UNAUTHENTICATED" if status == 401 else "INVALID_ARGUMENT"}}
    return {"error": {"message": message, "type": "invalid_request_error", "param": None,
                      "code": "invalid_api_key" if status == 401 else None}}


# --- the last assistant turn: ([(id, name)] calls, [(id, name)] results) ----------
# Each returns None for a first request (no call and no result anywhere).

def _dicts(v):
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _last(items, pred):
    return max((i for i, x in enumerate(items) if pred(x)), default=-1)


def chat_turn(body):
    msgs = _dicts(body.get("messages"))
    if not any(m.get("role") == "tool" or m.get("tool_calls") for m in msgs):
        return None
    last = _last(msgs, lambda m: m.get("role") == "assistant")
    calls = [(c.get("id"), (c.get("function") or {}).get("name"))
             for c in _dicts(msgs[last].get("tool_calls") if last >= 0 else [])]
    results = [(m.get("tool_call_id"), None) for m in msgs[last + 1:] if m.get("role") == "tool"]
    return calls, results


def responses_turn(body):
    items = _dicts(body.get("input"))
    if not any(i.get("type") in ("function_call", "function_call_output") for i in items):
        return None
    tail = items[_last(items, lambda i: i.get("role") == "user") + 1:]
    calls = [(i.get("call_id"), i.get("name")) for i in tail if i.get("type") == "function_call"]
    results = [(i.get("call_id"), None) for i in tail if i.get("type") == "function_call_output"]
    return calls, results


def anthropic_turn(body):
    msgs = _dicts(body.get("messages"))
    if not any(b.get("type") in ("tool_use", "tool_result") for m in msgs for b in _dicts(m.get("content"))):
        return None
    last = _last(msgs, lambda m: m.get("role") == "assistant")
    calls = [(b.get("id"), b.get("name"))
             for b in _dicts(msgs[last].get("content") if last >= 0 else []) if b.get("type") == "tool_use"]
    after = msgs[last + 1] if last + 1 < len(msgs) else {}
    results = [(b.get("tool_use_id"), None) for b in _dicts(after.get("content")) if b.get("type") == "tool_result"]
    return calls, results


def gemini_turn(body):
    contents = _dicts(body.get("contents"))
    parts = [_dicts(c.get("parts")) for c in contents]
    if not any("functionCall" in p or "functionResponse" in p for ps in parts for p in ps):
        return None
    last = _last(contents, lambda c: c.get("role") == "model")
    calls = [(p["functionCall"].get("id"), p["functionCall"].get("name"))
             for p in (parts[last] if last >= 0 else []) if isinstance(p.get("functionCall"), dict)]
    results = [(p["functionResponse"].get("id"), p["functionResponse"].get("name"))
               for p in (parts[last + 1] if last + 1 < len(parts) else []) if isinstance(p.get("functionResponse"), dict)]
    return calls, results


TURNS = {"chat": chat_turn, "responses": responses_turn, "anthropic": anthropic_turn, "gemini": gemini_turn}


def check_turn(dialect, calls, results, made_calls):
    """The reasons the results do not answer the calls (empty: they do)."""
    if not calls:
        return ["the last assistant turn has no tool calls, yet the request carries tool results"]
    reasons = []
    sent = [(c["id"], c["name"]) for c in made_calls]
    echoed = [(i if i is not None or dialect != "gemini" else s[0], n) for (i, n), s in zip(calls, sent)]
    if len(calls) != len(sent) or echoed != sent:
        reasons.append(f"the assistant turn's calls {calls} are not the calls made {sent}")
    if dialect == "gemini" and not all(i for i, _ in calls + results):
        want, got, by = [n for _, n in calls], [n for _, n in results], "name"
    else:
        want, got, by = [i for i, _ in calls], [i for i, _ in results], "id"
    if got == want:
        return reasons
    found = [(f"no result for call {by}", [k for k in want if k not in got]),
             (f"results for no call: {by}", [k for k in got if k not in want]),
             (f"more than one result for {by}",
              sorted({k for k in got if k in want and got.count(k) > want.count(k)}, key=str))]
    reasons += [f"{what} {keys}" for what, keys in found if keys]
    if not any(keys for _, keys in found):
        reasons.append(f"results in the order {got}, calls in the order {want}")
    return reasons


class StandIn:
    def __init__(self, script, key):
        self.key = key
        self.lock = threading.Lock()
        self.requests = 0
        self.by_dialect = {d: 0 for d in DIALECTS}
        self.problems = []
        kinds = judge._kinds()  # built once: judge_all rebuilds the Gemini type per call
        comp = judge.Compiler()
        self.checkers = {d: comp.get(kinds[k][0]) for d, (k, _, _) in DIALECTS.items()}
        self.made_calls, self.first, self.final = {}, {}, {}
        for d, (_, kind, template) in DIALECTS.items():
            calls = [{"id": template.format(i + 1), "name": c["name"], "arguments": c["arguments"]}
                     for i, c in enumerate(script["calls"])]
            self.made_calls[d] = calls
            self.final[d] = made.make({"kind": kind, "calls": [], "text": script["text"]})
            self.first[d] = made.make({"kind": kind, "calls": calls}) if calls else self.final[d]

    def problem(self, n, dialect, reason):
        self.problems.append({"request": n, "dialect": dialect, "reason": reason})
        print(f"stand_in: request {n} ({dialect}): {reason}", file=sys.stderr, flush=True)

    def report(self):
        with self.lock:
            return {"requests": self.requests, "problems": list(self.problems), "by_dialect": dict(self.by_dialect)}

    def auth(self, dialect, headers):
        """(status, message) when the request is turned away, else None."""
        if dialect == "anthropic" and not headers.get("anthropic-version"):
            return 400, "anthropic-version: header is required"
        if self.key is None:
            return None
        got = {"anthropic": headers.get("x-api-key"), "gemini": headers.get("x-goog-api-key")}.get(
            dialect, headers.get("Authorization"))
        want = self.key if dialect in ("anthropic", "gemini") else f"Bearer {self.key}"
        if got is None:
            return 401, f"no API key: the {dialect} request has no key header"
        if got != want:
            return 401, f"wrong API key: {got[:40]!r}"
        return None

    def answer(self, dialect, headers, raw):
        """(status, JSON body) for one model request."""
        with self.lock:
            self.requests += 1
            self.by_dialect[dialect] += 1
            n = self.requests
            refused = self.auth(dialect, headers)
            if refused:
                self.problem(n, dialect, f"HTTP {refused[0]}: {refused[1]}")
            try:
                body = json.loads(raw)
            except ValueError as e:
                self.problem(n, dialect, f"the body is not JSON: {e}")
                status, message = refused or (400, f"the body is not JSON: {e}")
                return status, error_body(dialect, status, message)
            kind = DIALECTS[dialect][0]
            try:
                self.checkers[dialect](body, ())
            except judge.Invalid as e:
                self.problem(n, dialect, f"the SDK refused the body ({kind}): {e.text()}")
            if refused:
                return refused[0], error_body(dialect, *refused)
            try:
                turn = TURNS[dialect](body) if isinstance(body, dict) else None
            except Exception as e:  # a body the SDK refused may be any shape
                self.problem(n, dialect, f"the history could not be read: {type(e).__name__}: {e}")
                return 200, self.final[dialect]
            if turn is None:
                return 200, self.first[dialect]
            for reason in check_turn(dialect, *turn, self.made_calls[dialect]):
                self.problem(n, dialect, reason)
            return 200, self.final[dialect]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.split("?", 1)[0] == "/rho/report":
            self.send_json(200, self.server.stand_in.report())
        else:
            self.send_json(404, {"error": {"message": f"no GET {self.path}"}})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/rho/stop":
            self.send_json(200, {"stopped": True})
            threading.Thread(target=self.server.shutdown, daemon=True).start()
            return
        dialect = route(self.path)
        if dialect is None:
            self.send_json(404, {"error": {"message": f"no POST {self.path}"}})
            return
        self.send_json(*self.server.stand_in.answer(dialect, self.headers, raw))


def read_script(path):
    with open(path) as f:
        script = json.load(f)
    if not isinstance(script, dict) or set(script) - {"calls", "text"}:
        raise ValueError('the script is {"calls": [{"name", "arguments"}], "text"}')
    calls = script.get("calls", [])
    if not isinstance(calls, list) or not all(
            isinstance(c, dict) and set(c) == {"name", "arguments"}
            and isinstance(c["name"], str) and isinstance(c["arguments"], str) for c in calls):
        raise ValueError('each of the script\'s calls is {"name": string, "arguments": string}')
    text = script.get("text", "")
    if not isinstance(text, str):
        raise ValueError("the script's text is a string")
    return {"calls": calls, "text": text}


def main():
    ap = argparse.ArgumentParser(description="stand-in model API server (see the top of this file)")
    ap.add_argument("--script", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--key")
    args = ap.parse_args()
    try:
        stand_in = StandIn(read_script(args.script), args.key)
    except (OSError, ValueError, made.Refused) as e:
        print(f"stand_in: {e}", file=sys.stderr)
        sys.exit(2)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.stand_in = stand_in
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
