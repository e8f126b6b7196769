"""Schema-guided decoding for an in-process model: the reply is JSON of the schema by construction.

The decoder writes the schema's fixed text itself (braces, keys, commas) and lets the model choose only what the
schema leaves open: which enum member or boolean (a token trie of the allowed spellings), whether an optional
value is null, whether an array goes on, the digits of a number, the characters of a string. Strings and arrays
are bounded (`bounded` gives every unbounded one a limit), and near the output-token limit strings end and
arrays close early enough that the shortest valid end of what is open (`minimal`) still fits, so a small model
that repeats itself still ends its JSON. The supported JSON-schema subset: object, array, string, integer,
number, boolean, null, enum, const, ``prefixItems``, ``$ref`` into ``$defs`` and ``anyOf`` with null.
docs/llm.md#a-local-model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

DEFAULT_MAX_ITEMS = 8
DEFAULT_MAX_CHARS = 400


class OutOfBudget(RuntimeError):
    """The output-token limit or the deadline ended the reply before the JSON was complete."""


class TokenModel(Protocol):
    """What the decoder drives: a tokenizer's two directions and a model that takes tokens and scores the next."""

    def encode(self, text: str) -> list[int]: ...

    def feed(self, ids: list[int]) -> Any: ...  # appends the tokens; returns next-token scores (1-D numpy array)

    @property
    def vocabulary(self) -> Vocabulary: ...


@dataclass
class Vocabulary:
    """Each token's text, and the sets of tokens the decoder treats alike."""

    texts: list[str]
    end_ids: frozenset[int]  # end of turn / end of text
    special_ids: frozenset[int]
    digits: list[int] = field(init=False)
    plain: list[int] = field(init=False)  # may stand inside a JSON string as the model wrote it

    def __post_init__(self) -> None:
        self.digits = [i for i, t in enumerate(self.texts) if t.isdigit() and t.isascii()]
        self.plain = [i for i, t in enumerate(self.texts)
                      if i not in self.special_ids and t and not any(c in t for c in '\\\n\r\t\x00')]


def bounded(schema: dict[str, Any], *, max_items: int = DEFAULT_MAX_ITEMS,
            max_chars: int = DEFAULT_MAX_CHARS) -> dict[str, Any]:
    """A copy of ``schema`` in which every array has ``maxItems`` and every free string ``maxLength``."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items()}
        if out.get("type") == "array":
            out.setdefault("maxItems", max(max_items, out.get("minItems", 0)))
        if out.get("type") == "string" and "enum" not in out:
            out.setdefault("maxLength", max_chars)
        return out

    return walk(schema)


class Decoder:
    """One reply: drives a `TokenModel` through a schema, within a token limit and a deadline."""

    def __init__(self, model: TokenModel, *, max_tokens: int, deadline: float | None = None,
                 pick: Callable[[Any, list[int]], int] | None = None) -> None:
        self.model = model
        self.vocab = model.vocabulary
        self.max_tokens = max_tokens
        self.deadline = deadline
        self.pick = pick
        self.tokens = 0
        self.scores: Any = None
        self.out: list[str] = []
        self._first: dict[str, list[int]] = {}
        self._arrays: dict[int, Any] = {}
        self._costs: dict[str, int] = {}
        self.after = 0  # tokens the shortest valid end of what is open will take once the current value ends

    def left(self) -> int:
        """Output tokens still allowed, less those the shortest close of everything open needs."""
        return self.max_tokens - self.tokens - self.after

    def _cost(self, text: str) -> int:
        if text not in self._costs:
            self._costs[text] = len(self.model.encode(text)) if text else 0
        return self._costs[text]

    # --- the model's side
    def start(self, prompt_ids: list[int], chunk: int = 512) -> None:
        """Read the prompt (its tokens do not count against the output limit), a chunk at a time so that the
        deadline is checked while a long prompt is read."""
        for at in range(0, len(prompt_ids), chunk):
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise OutOfBudget(f"reading the {len(prompt_ids)}-token prompt ran past the call's timeout")
            self.scores = self.model.feed(prompt_ids[at:at + chunk])

    def _feed(self, ids: list[int]) -> None:
        self.tokens += len(ids)
        if self.tokens > self.max_tokens:
            raise OutOfBudget(f"the reply reached the output-token limit ({self.max_tokens})")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise OutOfBudget("the reply ran past the call's timeout")
        self.scores = self.model.feed(ids)

    def force(self, text: str) -> None:
        """Write ``text`` as it stands."""
        self.out.append(text)
        self._feed(self.model.encode(text))

    def _openers(self, text: str) -> list[int]:
        # a value may open glued to the colon or after a space: score both spellings' first tokens
        if text not in self._first:
            ids = {self.model.encode(text)[0], self.model.encode(" " + text)[0]}
            self._first[text] = sorted(ids)
        return self._first[text]

    def _ids(self, ids: list[int]) -> Any:
        import numpy as np

        if len(ids) < 64:
            return np.asarray(ids, dtype=np.int64)
        held = self._arrays.get(id(ids))  # the vocabulary's long lists are asked for at every step
        if held is None or len(held[0]) != len(ids):
            held = self._arrays[id(ids)] = (ids, np.asarray(ids, dtype=np.int64))
        return held[1]

    def _best(self, ids: list[int]) -> float:
        return float(self.scores[self._ids(ids)].max())

    def _pick(self, ids: list[int]) -> int:
        if self.pick is not None:
            return self.pick(self.scores, ids)
        index = self._ids(ids)
        return int(index[int(self.scores[index].argmax())])

    def prefer(self, openings: list[list[str]]) -> int:
        """Which of several ways on the model likes best, judged by their first tokens (nothing is written)."""
        ranked = [max(self._best(self._openers(t)) for t in way) for way in openings]
        return ranked.index(max(ranked))

    def choose(self, options: list[str]) -> int:
        """Write one of ``options`` token by token, each step only among tokens some option still allows."""
        spelled = [self.model.encode(o) for o in options]
        alive = list(range(len(options)))
        depth = 0
        while True:
            done = [i for i in alive if len(spelled[i]) == depth]
            going = [i for i in alive if len(spelled[i]) > depth]
            if not going:
                break
            if done:  # one option is a prefix of others: stop here unless the model's best going token wins
                nxt = {spelled[i][depth] for i in going}
                if self._best(sorted(nxt)) <= self._best(sorted(self.vocab.end_ids) or sorted(nxt)):
                    break
            token = self._pick(sorted({spelled[i][depth] for i in going}))
            alive = [i for i in going if spelled[i][depth] == token]
            self._feed([token])
            depth += 1
        chosen = min(alive, key=lambda i: len(spelled[i]))
        self.out.append(options[chosen])
        return chosen

    # --- the schema's side
    def value(self, schema: dict[str, Any], defs: dict[str, Any]) -> None:
        """Write one value of ``schema``."""
        schema = _resolve(schema, defs)
        if "const" in schema:
            self.force(json.dumps(schema["const"]))
            return
        if "enum" in schema:
            self._enum(schema["enum"])
            return
        if "anyOf" in schema or "oneOf" in schema:
            self._either(schema.get("anyOf") or schema["oneOf"], defs)
            return
        kind = schema.get("type")
        if isinstance(kind, list):
            self._either([{**schema, "type": k} for k in kind], defs)
            return
        writer = {"object": self._object, "array": self._array, "string": self._string,
                  "integer": self._number, "number": self._number, "boolean": self._boolean,
                  "null": lambda s, d: self.force("null")}.get(kind or "string")
        if writer is None:
            raise ValueError(f"schema type {kind!r} is not supported by guided decoding")
        writer(schema, defs)

    def _enum(self, members: list[Any]) -> None:
        if all(isinstance(m, str) for m in members):
            self.force('"')
            self.choose([json.dumps(m)[1:] for m in members])  # each member with its closing quote
        else:
            self.choose([json.dumps(m) for m in members])

    def _either(self, ways: list[dict[str, Any]], defs: dict[str, Any]) -> None:
        resolved = [_resolve(w, defs) for w in ways]
        if len(resolved) == 1:
            self.value(resolved[0], defs)
            return
        fits = [w for w in resolved if self._cost(minimal(w, defs)) + 2 <= self.left()]
        if not fits:  # no room to choose: the shortest way closes in time
            fits = [min(resolved, key=lambda w: self._cost(minimal(w, defs)))]
        self.value(fits[self.prefer([_openings(w) for w in fits])], defs)

    def _object(self, schema: dict[str, Any], defs: dict[str, Any]) -> None:
        self.force("{")
        outer = self.after
        fields = list(schema.get("properties", {}).items())
        for n, (key, sub) in enumerate(fields):
            self.force(("," if n else "") + json.dumps(key) + ":")
            # priced piece by piece, as they would be written: tokens do not merge across what is forced
            rest = sum(self._cost(f",{json.dumps(k)}:") + self._cost(minimal(v, defs)) for k, v in fields[n + 1:])
            self.after = outer + rest + self._cost("}")
            self.value(sub, defs)
        self.after = outer
        self.force("}")

    def _array(self, schema: dict[str, Any], defs: dict[str, Any]) -> None:
        if schema.get("prefixItems"):
            self._fixed(schema["prefixItems"], defs)
            return
        items = schema.get("items", {})
        low, high = schema.get("minItems", 0), schema.get("maxItems", DEFAULT_MAX_ITEMS)
        self.force("[")
        count = 0
        outer = self.after
        self.after = outer + self._cost("]")
        room = self._cost("," + minimal(_resolve(items, defs), defs)) + 8  # an item worth starting
        while count < high and (count < low or self.left() > room):
            if count >= low:
                going = [","] if count else _openings(_resolve(items, defs))
                if self.prefer([going, ["]"]]) == 1:
                    break
            if count:
                self.force(",")
            self.value(items, defs)
            count += 1
        self.after = outer
        self.force("]")

    def _fixed(self, parts: list[dict[str, Any]], defs: dict[str, Any]) -> None:
        """An array of exactly these items, in this order (``prefixItems``)."""
        self.force("[")
        outer = self.after
        for n, sub in enumerate(parts):
            if n:
                self.force(",")
            rest = sum(self._cost(",") + self._cost(minimal(p, defs)) for p in parts[n + 1:])
            self.after = outer + rest + self._cost("]")
            self.value(sub, defs)
        self.after = outer
        self.force("]")

    def _string(self, schema: dict[str, Any], defs: dict[str, Any]) -> None:
        limit = schema.get("maxLength", DEFAULT_MAX_CHARS)
        low = schema.get("minLength", 0)
        self.force('"')
        text, tail = "", ""
        while len(text) < limit and (len(text) < low or self.left() > 3):
            allowed = self.vocab.plain if len(text) >= low else [i for i in self.vocab.plain if '"' not in
                                                                 self.vocab.texts[i]]
            if len(text) >= low and self._best(sorted(self.vocab.end_ids)) > self._best(allowed):
                break
            token = self._pick(allowed)
            piece = self.vocab.texts[token]
            if '"' in piece:
                tail = piece.split('"', 1)[0]
                text += tail
                break
            text += piece
            self._feed([token])
        text = text[:limit]
        self.out.append(json.dumps(text)[1:-1])
        self._feed(self.model.encode(tail + '"'))
        self.out.append('"')

    def _number(self, schema: dict[str, Any], defs: dict[str, Any]) -> None:
        low, high = schema.get("minimum"), schema.get("maximum")
        if schema.get("type") == "integer" and low is not None and high is not None and high - low <= 100:
            self.choose([str(v) for v in range(int(low), int(high) + 1)])
            return
        digits = ""
        for _ in range(6):
            if digits and self.left() <= 1:
                break
            if digits and self._best(self._openers(",") + self._openers("}") + self._openers("]")) \
                    > self._best(self.vocab.digits):
                break
            token = self._pick(self.vocab.digits)
            digits += self.vocab.texts[token]
            self._feed([token])
        value = int(digits[:9])
        if low is not None:
            value = max(value, int(low))
        if high is not None:
            value = min(value, int(high))
        self.out.append(str(value))

    def _boolean(self, schema: dict[str, Any], defs: dict[str, Any]) -> None:
        self.choose(["true", "false"])

    def free_text(self) -> None:
        """Write what the model says until it ends its turn or the limit comes."""
        allowed = [i for i in range(len(self.vocab.texts)) if i not in self.vocab.special_ids] + \
            sorted(self.vocab.end_ids)
        while True:
            token = self._pick(allowed)
            if token in self.vocab.end_ids:
                return
            self.out.append(self.vocab.texts[token])
            try:
                self._feed([token])
            except OutOfBudget:
                return  # free text cut at the limit is still an answer; the caller sees the finish reason
            if self.tokens >= self.max_tokens:
                return

    @property
    def text(self) -> str:
        """What has been written so far."""
        return "".join(self.out)


def write_json(decoder: Decoder, schema: dict[str, Any]) -> str:
    """Write one JSON value of ``schema`` with ``decoder`` (already started on the prompt); returns the text."""
    decoder.value(schema, schema.get("$defs", {}) | schema.get("definitions", {}))
    return decoder.text


def minimal(schema: dict[str, Any], defs: dict[str, Any]) -> str:
    """The shortest JSON text of ``schema`` (what closing a value in a hurry writes)."""
    schema = _resolve(schema, defs)
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return min((json.dumps(m) for m in schema["enum"]), key=len)
    ways = schema.get("anyOf") or schema.get("oneOf")
    if ways:
        return min((minimal(w, defs) for w in ways), key=len)
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        return min((minimal({**schema, "type": k}, defs) for k in kind), key=len)
    if kind == "object":
        inner = ",".join(f"{json.dumps(k)}:{minimal(v, defs)}" for k, v in schema.get("properties", {}).items())
        return "{" + inner + "}"
    if kind == "array" and schema.get("prefixItems"):
        return "[" + ",".join(minimal(p, defs) for p in schema["prefixItems"]) + "]"
    if kind == "array":
        return "[" + ",".join([minimal(schema.get("items", {}), defs)] * schema.get("minItems", 0)) + "]"
    return {"string": '"' + "x" * schema.get("minLength", 0) + '"', "null": "null", "boolean": "true",
            "integer": str(int(schema.get("minimum", 0))), "number": str(schema.get("minimum", 0))}.get(kind, '""')


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in defs:
            raise ValueError(f"schema reference {schema['$ref']} is not in $defs")
        schema = {**defs[name], **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _openings(schema: dict[str, Any]) -> list[str]:
    """How a value of ``schema`` can begin (its first characters)."""
    if "const" in schema:
        return [json.dumps(schema["const"])[:1]]
    if "enum" in schema:
        return sorted({json.dumps(m)[:1] for m in schema["enum"]})
    kind = schema.get("type", "string")
    return {"object": ["{"], "array": ["["], "string": ['"'], "null": ["null"], "boolean": ["true", "false"],
            "integer": list("0123456789"), "number": list("0123456789")}.get(kind, ['"'])
