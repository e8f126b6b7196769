"""Reading inventory YAML entry by entry, with duplicate keys found instead of silently dropped.

`yaml.safe_load` keeps the last of two equal keys; an inventory with a host listed twice would
lose one without a word. Here the top-level mapping is composed, not constructed, so each entry
keeps its own line and a repeated name is one more entry the loader can quarantine. Inside an
entry a repeated key is that entry's error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, SequenceNode

from faultline.errors import FaultlineError

# keys whose values are credentials: dropped from what is stored, redacted from what is shown
_CREDENTIAL = re.compile(r"^(password|passwd|secret|enable_password|enable_secret|.*_password|.*_secret)$",
                         re.IGNORECASE)
_CREDENTIAL_TEXT = re.compile(
    r"(\b(?:password|passwd|secret|enable_password|enable_secret|\w*_password|\w*_secret)[\"']?\s*:)[^,}\n]*",
    re.IGNORECASE)
REDACTED = "<redacted>"


def is_credential(key: object) -> bool:
    """Whether a mapping key names a credential (password, secret, enable_secret, ...)."""
    return isinstance(key, str) and bool(_CREDENTIAL.match(key))


def redacted(value: Any) -> Any:
    """`value` with every credential's value replaced, at any depth."""
    if isinstance(value, dict):
        return {k: (REDACTED if is_credential(k) else redacted(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v) for v in value]
    return value


def raw_json(value: Any) -> str:
    """The record as JSON for the quarantine, credentials redacted."""
    return json.dumps(redacted(value), default=str, sort_keys=False)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key written twice in one mapping (merge keys may still be overridden)."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:  # an unhashable key: the base class reports it
                continue
            if first != key_node.start_mark.line + 1:
                raise ConstructorError(None, None, f"key {key!r} is written twice (lines {first} and "
                                       f"{key_node.start_mark.line + 1})", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


@dataclass(frozen=True)
class Entry:
    """One top-level entry of an inventory file: its key, line, value (or why it could not be read)."""

    key: Any
    line: int
    value: Any
    error: str | None
    raw: str
    link_lines: tuple[int, ...] = ()  # 1-based line of each item of data.links, when it is a list


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise FaultlineError(f"{path} is not UTF-8 text: {exc}", fix="save the inventory file as UTF-8") from exc
    except OSError as exc:
        raise FaultlineError(f"cannot read {path}: {exc.strerror}", fix="check the path and its permissions") from exc


def _compose(path: Path, text: str) -> tuple[_StrictLoader, Any]:
    loader = _StrictLoader(text)
    try:
        return loader, loader.get_single_node()
    except yaml.YAMLError as exc:
        loader.dispose()
        raise FaultlineError(f"{path} is not valid YAML: {exc}",
                             fix="fix the YAML syntax; nothing was loaded from this inventory") from exc


def read_entries(path: Path) -> list[Entry]:
    """The top-level entries of a mapping file, in file order, duplicates included; an empty file has none.

    Unreadable YAML, or a top level that is not a mapping, raises FaultlineError (the file fails whole).
    """
    text = _text(path)
    loader, node = _compose(path, text)
    try:
        if node is None:
            return []
        if not isinstance(node, MappingNode):
            raise FaultlineError(f"{path} must be a mapping of names to entries, not a {node.id}",
                                 fix="write one `name:` entry per line at the top level")
        entries = []
        for key_node, value_node in node.value:
            source = text[key_node.start_mark.index:value_node.end_mark.index]
            raw = _CREDENTIAL_TEXT.sub(lambda m: f"{m.group(1)} {REDACTED}", source)
            line = key_node.start_mark.line + 1
            key: Any = getattr(key_node, "value", None)
            try:
                key = loader.construct_object(key_node, deep=True)
                value = loader.construct_object(value_node, deep=True)
            except ConstructorError as exc:
                entries.append(Entry(key, line, None, str(exc.problem), raw))
                continue
            entries.append(Entry(key, line, value, None, raw, _item_lines(value_node, ("data", "links"))))
        return entries
    finally:
        loader.dispose()


def _item_lines(node: Node, path: tuple[str, ...]) -> tuple[int, ...]:
    """Lines of the items of the sequence at `path` (mapping keys) under `node`; () when there is none."""
    for step in path:
        if not isinstance(node, MappingNode):
            return ()
        node = next((v for k, v in node.value if getattr(k, "value", None) == step), None)
        if node is None:
            return ()
    if not isinstance(node, SequenceNode):
        return ()
    return tuple(item.start_mark.line + 1 for item in node.value)


def read_document(path: Path) -> Any:
    """A whole file's value (defaults.yaml), with repeated keys refused; empty → None."""
    text = _text(path)
    loader, node = _compose(path, text)
    try:
        if node is None:
            return None
        try:
            return loader.construct_document(node)
        except ConstructorError as exc:
            raise FaultlineError(f"{path}: {exc.problem}", fix="write each key once") from exc
    finally:
        loader.dispose()
