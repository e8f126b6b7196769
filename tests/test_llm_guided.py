"""Schema-guided decoding on a toy model whose wishes are known: the reply is JSON of the schema whatever the
model would rather write, it follows the model where the schema leaves a choice, and it stays within its limits.
"""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

from faultline.llm.guided import Decoder, OutOfBudget, Vocabulary, bounded, minimal, write_json

PIECES = ['"', "{", "}", "[", "]", ",", ":", " ", "_", "!", *"abcdefghijklmnopqrstuvwxyz", *"0123456789", "12",
          "true", "false", "null", "link", "_down", "_up", "down", "up", "Sure", "Here", "<end>"]
END = PIECES.index("<end>")


class Toy:
    """A model that scores every token by a fixed wish list, whatever it has read."""

    def __init__(self, wishes: dict[str, float]) -> None:
        self.vocabulary = Vocabulary(PIECES, frozenset({END}), frozenset({END}))
        self.scores = np.array([wishes.get(p, 0.0) for p in PIECES], dtype=np.float32)
        self.read: list[int] = []

    def encode(self, text: str) -> list[int]:
        ids, i = [], 0
        while i < len(text):  # longest piece first
            piece = max((p for p in PIECES if p != "<end>" and text.startswith(p, i)), key=len)
            ids.append(PIECES.index(piece))
            i += len(piece)
        return ids

    def feed(self, ids: list[int]) -> np.ndarray:
        self.read.extend(ids)
        return self.scores


SCHEMA = {"type": "object", "required": ["label"], "properties": {
    "label": {"enum": ["link_down", "link_up"]},
    "score": {"type": "integer", "minimum": 1, "maximum": 5},
    "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "quotes": {"type": "array", "items": {"type": "string"}},
    "ok": {"type": "boolean"}}}


def decode(wishes: dict[str, float], schema=SCHEMA, max_tokens: int = 400) -> tuple[str, Toy]:
    toy = Toy(wishes)
    decoder = Decoder(toy, max_tokens=max_tokens)
    decoder.start([0])
    return write_json(decoder, bounded(schema, max_items=3, max_chars=12)), toy


def test_a_model_that_would_rather_chat_still_answers_json_of_the_schema():
    text, _ = decode({"Sure": 9, "!": 8, "Here": 7, "a": 5})
    value = json.loads(text)
    jsonschema.validate(value, SCHEMA)
    assert set(value) == set(SCHEMA["properties"])


def test_where_the_schema_leaves_a_choice_the_model_makes_it():
    up, _ = decode({"_up": 3, "2": 2, "false": 1, "null": 4, "]": 5})
    down, _ = decode({"_down": 3, "7": 1, "true": 1, '"': 6, ",": 5, "b": 4})
    up, down = json.loads(up), json.loads(down)
    assert (up["label"], up["score"], up["ok"], up["note"], up["quotes"]) == ("link_up", 2, False, None, [])
    assert down["label"] == "link_down" and down["ok"] is True and down["score"] == 1  # 7 is out of range
    assert down["note"] is not None and len(down["quotes"]) >= 1


def test_a_model_that_repeats_itself_stops_at_the_bounds():
    text, _ = decode({"a": 9, ",": 8})  # never closes a string, always wants another item
    value = json.loads(text)
    assert len(value["quotes"]) == 3 and all(len(q) <= 12 for q in value["quotes"])
    assert len(value["note"]) <= 12


def test_the_output_limit_ends_a_reply_that_would_run_on():
    with pytest.raises(OutOfBudget, match="output-token limit"):
        decode({"a": 9, ",": 8}, max_tokens=20)


def test_a_reply_near_its_limit_closes_what_is_open_in_time():
    toy = Toy({})
    floor = len(toy.encode(minimal(bounded(SCHEMA), {})))
    for spare in (0, 3, 10, 40):
        text, _ = decode({"a": 9, ",": 8}, max_tokens=floor + spare)
        jsonschema.validate(json.loads(text), SCHEMA)


def test_strings_are_escaped_and_the_model_reads_what_was_written():
    schema = {"type": "object", "properties": {"x": {"type": "string", "maxLength": 6}}}
    text, toy = decode({"a": 2, '"': 1}, schema=schema)
    assert json.loads(text) == {"x": "aaaaaa"}
    assert "".join(PIECES[i] for i in toy.read[1:]) == text  # the model's context is the reply as written


def test_bounded_adds_limits_only_where_none_are_set():
    shape = bounded({"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 2},
        "b": {"type": "array", "items": {"enum": ["x"]}, "minItems": 10}}}, max_items=4, max_chars=50)
    assert shape["properties"]["a"]["maxItems"] == 2 and shape["properties"]["a"]["items"]["maxLength"] == 5
    assert shape["properties"]["b"]["maxItems"] == 10 and "maxLength" not in shape["properties"]["b"]["items"]


def test_fixed_items_are_written_once_each_in_order():
    schema = {"type": "object", "properties": {"scores": {"type": "array", "prefixItems": [
        {"type": "object", "properties": {"name": {"const": n}, "ok": {"type": "boolean"}}} for n in ("ab", "cd")]}}}
    text, _ = decode({"a": 9, ",": 8, "true": 1}, schema=schema)
    assert [item["name"] for item in json.loads(text)["scores"]] == ["ab", "cd"]
