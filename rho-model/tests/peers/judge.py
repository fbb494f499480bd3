"""Judges JSON values against the official model-API SDKs' own types.

    VENV/bin/python judge.py < values.json

stdin:  a JSON array of {"kind": K, "value": V}
stdout: a JSON array, same length and order, of {"ok": true} or
        {"ok": false, "error": "<message>"}

Strict: a key the SDK type does not define is refused at every nesting level,
as are a missing required key, a value of the wrong type, a literal outside
its set and a union that no variant accepts. An unknown kind is an error
entry, not a crash. One process judges any number of values (the checkers
are built once per type). `python judge.py --kinds` lists the kinds and
their types; `--selftest` builds every kind's checkers and lists the
non-JSON annotations met (IO, PathLike: never accepted).

An integer field takes no 1.0, a string field no number, a boolean no 0/1.

OpenAI and Anthropic describe request JSON as TypedDicts (`...Param`).
pydantic's TypedDict validation ignores extra keys and validates
`Iterable[...]` fields lazily (not at all unless iterated), so this file
walks the annotations itself (typing.get_type_hints). Which keys are
required is worked out from `Required[...]`/`NotRequired[...]` and each
declaring class's totality, because `__required_keys__` is wrong for these
modules (they use `from __future__ import annotations`). A TypedDict whose
pydantic config says `extra: allow` (Anthropic's `InputSchemaTyped`, a JSON
schema) keeps its extra keys. `PropertyInfo(alias=...)` renames a key on the
wire. Google's `google.genai.types` are pydantic models that forbid unknown
fields; they are validated by alias only (camelCase, as the REST API takes
it), so a snake_case key is refused too.
"""

from __future__ import annotations

import collections.abc
import datetime
import json
import sys
import types
import typing
import warnings

import typing_extensions
import pydantic

_NoneType = type(None)


class Invalid(Exception):
    def __init__(self, path, message):
        super().__init__(message)
        self.path = path
        self.message = message

    def text(self):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path)
        return f"at ${where}: {self.message}" if where else f"at $: {self.message}"


def _jtype(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _short(v, n=60):
    s = json.dumps(v)
    return s if len(s) <= n else s[: n - 3] + "..."


def _name(tp):
    n = getattr(tp, "__name__", None)
    if n:
        return n
    return str(tp).replace("typing.", "").replace("typing_extensions.", "")


_REQ = {typing.Required, typing_extensions.Required}
_NOTREQ = {typing.NotRequired, typing_extensions.NotRequired}
_READONLY = {getattr(typing_extensions, "ReadOnly", None), getattr(typing, "ReadOnly", None)} - {None}
_SEQ = {list, collections.abc.Sequence, collections.abc.Iterable, collections.abc.MutableSequence,
        collections.abc.Collection, tuple, set, frozenset}
_MAP = {dict, collections.abc.Mapping, collections.abc.MutableMapping}


def _strip(tp):
    """Required[X] -> (X, True); NotRequired[X] -> (X, False); else (X, None)."""
    req = None
    while True:
        o = typing.get_origin(tp)
        if o in _REQ:
            req, tp = True, typing.get_args(tp)[0]
        elif o in _NOTREQ:
            req, tp = False, typing.get_args(tp)[0]
        elif o in _READONLY:
            tp = typing.get_args(tp)[0]
        elif o is typing.Annotated:
            # keep Annotated: the field level reads PropertyInfo from it
            inner, req2 = _strip(typing.get_args(tp)[0])
            if req2 is not None:
                req = req2
                tp = typing.Annotated[(inner, *tp.__metadata__)]
            return tp, req
        else:
            return tp, req


def _is_typeddict(tp):
    return isinstance(tp, type) and (typing.is_typeddict(tp) or typing_extensions.is_typeddict(tp))


def _td_bases(td):
    return [b for b in getattr(td, "__orig_bases__", ()) if _is_typeddict(b)]


_declared_cache = {}


def _declared(td):
    """{key: totality of the class that declared it}."""
    if td in _declared_cache:
        return _declared_cache[td]
    out = {}
    inherited = set()
    for b in _td_bases(td):
        d = _declared(b)
        out.update(d)
        inherited |= set(d)
    for k in td.__annotations__:
        if k not in inherited:
            out[k] = td.__total__
    _declared_cache[td] = out
    return out


def _literal_values(tp):
    """The values of Literal[...] (or Optional[Literal[...]], then with None)."""
    tp, _ = _strip(tp)
    if typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    o = typing.get_origin(tp)
    if o is typing.Literal:
        return typing.get_args(tp)
    if o in (typing.Union, types.UnionType):
        vals = []
        for a in typing.get_args(tp):
            if a is _NoneType:
                vals.append(None)
            elif typing.get_origin(a) is typing.Literal:
                vals.extend(typing.get_args(a))
            else:
                return None
        return tuple(vals)
    return None


class _Ref:
    """Stands for a checker still being built (a recursive type)."""

    target = None

    def __call__(self, v, p):
        return self.target(v, p)

    def __getattr__(self, name):
        if self.target is None:
            raise AttributeError(name)
        return getattr(self.target, name)


class Compiler:
    def __init__(self):
        self.cache = {}
        self.unsupported = set()

    def get(self, tp):
        key = tp
        try:
            hash(key)
        except TypeError:
            key = repr(tp)
        fn = self.cache.get(key)
        if fn is None:
            # placeholder first: recursive types refer to themselves
            ref = _Ref()
            self.cache[key] = ref
            real = self.build(tp)
            ref.target = real
            self.cache[key] = real
            fn = real
        return fn

    def build(self, tp):
        tp, _ = _strip(tp)
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)

        if tp is typing.Any or tp is object:
            return lambda v, p: None
        if origin is typing.Annotated:
            inner = args[0]
            fmt = None
            for m in tp.__metadata__:
                fmt = getattr(m, "format", None) or fmt
            if fmt in ("iso8601", "base64", "custom"):
                return self._scalar(str, "string")
            return self.get(inner)
        if origin in (typing.Union, types.UnionType):
            return self._union(tp, args)
        if origin is typing.Literal:
            allowed = args

            def lit(v, p):
                for a in allowed:
                    if v == a and type(v) is type(a):
                        return
                raise Invalid(p, f"{_short(v)} is not one of {list(allowed)}")
            return lit
        if origin in _SEQ or tp in _SEQ:
            item = self.get(args[0]) if args else self.get(object)

            def seq(v, p):
                if not isinstance(v, list):
                    raise Invalid(p, f"expected an array, got {_jtype(v)} {_short(v)}")
                for i, x in enumerate(v):
                    item(x, p + (i,))
            return seq
        if origin in _MAP or tp in _MAP:
            val = self.get(args[1]) if len(args) == 2 else self.get(object)

            def mp(v, p):
                if not isinstance(v, dict):
                    raise Invalid(p, f"expected an object, got {_jtype(v)} {_short(v)}")
                for k, x in v.items():
                    val(x, p + (k,))
            return mp
        if tp is str:
            return self._scalar(str, "string")
        if tp is bool:
            return self._scalar(bool, "boolean")
        if tp is int:
            def integer(v, p):
                if isinstance(v, bool) or not isinstance(v, int):
                    raise Invalid(p, f"expected an integer, got {_jtype(v)} {_short(v)}")
            return integer
        if tp is float:
            def number(v, p):
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise Invalid(p, f"expected a number, got {_jtype(v)} {_short(v)}")
            return number
        if tp is _NoneType or tp is None:
            def none(v, p):
                if v is not None:
                    raise Invalid(p, f"expected null, got {_jtype(v)} {_short(v)}")
            return none
        if tp in (datetime.datetime, datetime.date):
            return self._scalar(str, "string (ISO 8601)")
        if isinstance(tp, typing.TypeVar):
            return lambda v, p: None
        if _is_typeddict(tp):
            return self._typeddict(tp)
        if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
            return self._model(tp)
        # bytes, IO, PathLike, tuples of files...: not JSON; nothing accepts
        self.unsupported.add(_name(tp))
        desc = _name(tp)

        def never(v, p):
            raise Invalid(p, f"no JSON value is a {desc}")
        return never

    @staticmethod
    def _scalar(t, desc):
        def scalar(v, p):
            if not isinstance(v, t) or (t is not bool and isinstance(v, bool)):
                raise Invalid(p, f"expected a {desc}, got {_jtype(v)} {_short(v)}")
        return scalar

    def _model(self, model):
        def check(v, p):
            # strict, from JSON: "1" is no number, a snake_case key no field.
            # google-genai's enums take unknown values with a UserWarning
            # ("SOMETIMES is not a valid FunctionCallingConfigMode"): refused.
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    model.model_validate_json(json.dumps(v), strict=True, by_alias=True, by_name=False)
                except pydantic.ValidationError as e:
                    err = e.errors()[0]
                    raise Invalid(p + tuple(err["loc"]), f"{err['msg']} ({err['type']})")
            if caught:
                raise Invalid(p, f"{model.__name__}: {caught[0].message}")
            _wire_keys_only(model, v, p)
        return check

    def _typeddict(self, td):
        hints = typing.get_type_hints(td, include_extras=True)
        declared = _declared(td)
        extra_ok = (getattr(td, "__pydantic_config__", None) or {}).get("extra") == "allow"
        fields = []  # (wire key, checker, required, literal?)
        for k, h in hints.items():
            inner, req = _strip(h)
            wire = k
            if typing.get_origin(inner) is typing.Annotated:
                for m in inner.__metadata__:
                    alias = getattr(m, "alias", None)
                    if isinstance(alias, str) and alias != "None":
                        wire = alias
            required = req if req is not None else declared.get(k, td.__total__)
            fields.append((wire, inner, required, _literal_values(inner) is not None))
        # literal-typed keys ("type", "role") first: the wrong variant of a
        # union fails fast there, and the error names it
        fields.sort(key=lambda f: not f[3])
        known = {f[0] for f in fields}
        name = td.__name__
        # eager: every reachable annotation is compiled up front (the
        # placeholder in get() handles recursive types)
        compiled = [(w, self.get(t), r) for w, t, r, _ in fields]

        def check(v, p):
            if not isinstance(v, dict):
                raise Invalid(p, f"expected an object ({name}), got {_jtype(v)} {_short(v)}")
            for w, fn, r in compiled:
                if w in v:
                    fn(v[w], p + (w,))
                elif r:
                    raise Invalid(p, f"missing required key {w!r} ({name})")
            if not extra_ok:
                for k in v:
                    if k not in known:
                        raise Invalid(p + (k,), f"unknown key {k!r}: {name} defines {sorted(known)}")
        check.typeddict = td
        check.literals = {w: _literal_values(t) for w, t, r, lit in fields if lit}
        check.required = {w for w, t, r, _ in fields if r}
        return check

    def _union(self, tp, members):
        members = list(dict.fromkeys(members))
        fns = [self.get(m) for m in members]
        label = str(tp).replace("typing.", "")

        def discriminators(fn, v):
            """(all literal keys agree, how many agree)"""
            lits = getattr(fn, "literals", None)
            if lits is None or not isinstance(v, dict):
                return (False, 0)
            agree, all_agree = 0, True
            for w, vals in lits.items():
                if w in v:
                    if any(v[w] == a and type(v[w]) is type(a) for a in vals):
                        agree += 1
                    else:
                        all_agree = False
                elif w in fn.required:
                    all_agree = False
            return (all_agree, agree)

        def check(v, p):
            errors = []
            for fn in fns:
                try:
                    fn(v, p)
                    return
                except Invalid as e:
                    errors.append((fn, e))
            scored = []
            for fn, e in errors:
                scored.append((discriminators(fn, v) + (len(e.path),), e, fn))
            best_score, best, _ = max(scored, key=lambda s: s[0])
            if best_score[0] or best_score[1]:
                raise best
            if isinstance(v, dict) and any(hasattr(fn, "literals") for fn in fns):
                disc = sorted({w for fn in fns for w in getattr(fn, "literals", {})})
                shown = {w: v[w] for w in disc if w in v}
                variants = [getattr(fn, "typeddict").__name__ + str({w: list(vals) for w, vals in fn.literals.items()})
                            for fn in fns if hasattr(fn, "literals")]
                raise Invalid(p, f"no variant accepts this object {shown or _short(v)}; variants: "
                                 + "; ".join(variants)[:1500])
            if len(errors) == 1 or best_score[2] > len(p):
                raise best
            raise Invalid(p, f"{_short(v)} matches none of {label[:300]}; e.g. "
                             + "; ".join(e.text() for _, e in errors[:4]))
        return check


# --- kinds ---------------------------------------------------------------

def _gemini_request():
    from google.genai import types as g

    fields = {
        "contents": typing.List[g.Content],
        "tools": typing.List[g.Tool],
        "toolConfig": g.ToolConfig,
        "systemInstruction": g.Content,
        "generationConfig": g.GenerationConfig,
        "safetySettings": typing.List[g.SafetySetting],
        "cachedContent": str,
        "labels": typing.Dict[str, str],
        "serviceTier": str,
        "store": bool,
    }
    # The REST body of models.generateContent / streamGenerateContent.
    # google-genai has no public type for it (its GenerateContentConfig
    # mixes body fields with generationConfig fields and the SDK moves them
    # about), so the body is put together from its public parts.
    GeminiRequest = typing_extensions.TypedDict(
        "GeminiGenerateContentRequest",
        {k: (typing_extensions.Required[v] if k == "contents" else v) for k, v in fields.items()},
        total=False,
    )
    return GeminiRequest


def _wire_keys_only(model, v, p):
    """Every key of `v`, at every depth, the wire name (alias) of a field
    of `model`: google-genai's Part validates itself before its fields, and
    so takes a field's Python name too (`function_response`), which the
    REST API does not."""
    if not isinstance(v, dict):
        return
    alias_of = model.model_config.get("alias_generator") or (lambda name: name)
    fields = {(f.alias or alias_of(name)): f for name, f in model.model_fields.items()}
    for k, x in v.items():
        f = fields.get(k)
        if f is None:
            raise Invalid(p + (k,), f"{model.__name__} has no field {k!r} on the wire "
                                    f"(its keys: {sorted(fields)})")
        _wire_keys_in(f.annotation, x, p + (k,))


def _wire_keys_in(tp, x, p):
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _wire_keys_in(typing.get_args(tp)[0], x, p)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            if isinstance(arg, type) and issubclass(arg, pydantic.BaseModel) and isinstance(x, dict):
                return _wire_keys_only(arg, x, p)
            if typing.get_origin(arg) is list and isinstance(x, list):
                return _wire_keys_in(arg, x, p)
        return
    if origin is list and isinstance(x, list):
        (item,) = typing.get_args(tp) or (None,)
        for i, y in enumerate(x):
            _wire_keys_in(item, y, p + (i,))
        return
    if origin is dict and isinstance(x, dict):
        # A map's keys are the caller's (a schema's property names); its
        # values may be models.
        args = typing.get_args(tp)
        if len(args) == 2:
            for k, y in x.items():
                _wire_keys_in(args[1], y, p + (k,))
        return
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        _wire_keys_only(tp, x, p)


def _kinds():
    """{kind: (type, what it is)}"""
    import openai.types.chat as oc
    import openai.types.chat.completion_create_params as occ
    import openai.types.responses as orr
    import openai.types.responses.response_create_params as orc
    import anthropic.types as at
    import anthropic.types.message_create_params as amc
    import anthropic.types.beta as ab
    import anthropic.types.beta.message_create_params as abmc
    from google.genai import types as g

    return {
        "openai.chat.tool": (oc.ChatCompletionToolUnionParam, "openai.types.chat.ChatCompletionToolUnionParam"),
        "openai.chat.message": (oc.ChatCompletionMessageParam, "openai.types.chat.ChatCompletionMessageParam"),
        "openai.chat.request": (occ.CompletionCreateParams,
                                "openai.types.chat.completion_create_params.CompletionCreateParams"
                                " (NonStreaming | Streaming)"),
        "openai.chat.request.nonstreaming": (occ.CompletionCreateParamsNonStreaming,
                                             "openai.types.chat.completion_create_params.CompletionCreateParamsNonStreaming"),
        "openai.responses.tool": (orr.ToolParam, "openai.types.responses.ToolParam"),
        "openai.responses.input_item": (orr.ResponseInputItemParam, "openai.types.responses.ResponseInputItemParam"),
        "openai.responses.request": (orc.ResponseCreateParams,
                                     "openai.types.responses.response_create_params.ResponseCreateParams"
                                     " (NonStreaming | Streaming)"),
        "openai.responses.request.nonstreaming": (orc.ResponseCreateParamsNonStreaming,
                                                  "openai.types.responses.response_create_params.ResponseCreateParamsNonStreaming"),
        "anthropic.tool": (at.ToolUnionParam, "anthropic.types.ToolUnionParam"),
        "anthropic.message": (at.MessageParam, "anthropic.types.MessageParam"),
        "anthropic.request": (amc.MessageCreateParams,
                              "anthropic.types.message_create_params.MessageCreateParams (NonStreaming | Streaming)"),
        "anthropic.request.nonstreaming": (amc.MessageCreateParamsNonStreaming,
                                           "anthropic.types.message_create_params.MessageCreateParamsNonStreaming"),
        "anthropic.beta.tool": (ab.BetaToolUnionParam, "anthropic.types.beta.BetaToolUnionParam"),
        "anthropic.beta.message": (ab.BetaMessageParam, "anthropic.types.beta.BetaMessageParam"),
        "anthropic.beta.request": (abmc.MessageCreateParams,
                                   "anthropic.types.beta.message_create_params.MessageCreateParams"
                                   " (NonStreaming | Streaming)"),
        "gemini.tool": (g.Tool, "google.genai.types.Tool (camelCase)"),
        "gemini.content": (g.Content, "google.genai.types.Content (camelCase)"),
        "gemini.request": (_gemini_request(),
                           "REST body of generateContent: {contents: [Content], tools?: [Tool], toolConfig?:"
                           " ToolConfig, systemInstruction?: Content, generationConfig?: GenerationConfig,"
                           " safetySettings?: [SafetySetting], cachedContent?, labels?, serviceTier?, store?}"),
    }


def _strict_fixed_point(schema):
    """Kind `openai.strict_schema`: a function's `parameters` in strict
    mode, judged by the openai SDK's own strict-making
    (`openai.lib._pydantic._ensure_strict_json_schema`, what
    `pydantic_function_tool` sends): a schema already strict is left as it
    is, so anything the SDK would still change is refused, with the first
    difference."""
    import copy
    from openai.lib._pydantic import _ensure_strict_json_schema

    if not isinstance(schema, dict):
        return {"ok": False, "error": "a strict schema is an object"}
    made = _ensure_strict_json_schema(copy.deepcopy(schema), path=(), root=copy.deepcopy(schema))
    if made == schema:
        return {"ok": True}
    return {"ok": False, "error": f"the SDK would make it {json.dumps(made)[:2000]}"}


def judge_all(entries, comp=None):
    kinds = _kinds()
    comp = comp or Compiler()
    out = []
    for e in entries:
        try:
            if not isinstance(e, dict) or set(e) != {"kind", "value"}:
                raise Invalid((), 'entry must be exactly {"kind": K, "value": V}')
            if e["kind"] == "openai.strict_schema":
                out.append(_strict_fixed_point(e["value"]))
                continue
            entry = kinds.get(e["kind"])
            if entry is None:
                out.append({"ok": False, "error": f"unknown kind {e['kind']!r}; kinds: {sorted(kinds)}"})
                continue
            comp.get(entry[0])(e["value"], ())
            out.append({"ok": True})
        except Invalid as x:
            out.append({"ok": False, "error": x.text()})
        except Exception as x:  # a bug here must not hide the other answers
            out.append({"ok": False, "error": f"judge.py internal error: {type(x).__name__}: {x}"})
    return out


def main():
    if "--kinds" in sys.argv:
        for k, (_, what) in _kinds().items():
            print(f"{k}\t{what}")
        return
    if "--selftest" in sys.argv:
        comp = Compiler()
        for tp, _ in _kinds().values():
            comp.get(tp)
        print(f"{len(comp.cache)} checkers; non-JSON annotations (never accepted): "
              f"{sorted(comp.unsupported)}")
        return
    data = json.load(sys.stdin)
    if not isinstance(data, list):
        print(json.dumps([{"ok": False, "error": "stdin must be a JSON array of {kind, value}"}]))
        sys.exit(2)
    json.dump(judge_all(data), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
