"""Masking variable parts of log messages (addresses, ids, interfaces, times, numbers) in Polars.

The rules live in `vocab/masks.yml` (versioned data, not code). Every rule is one vectorised
`str.replace_all` over the whole column, in file order, so masking never loops over lines in
Python. Patterns are Rust regexes: no look-around, boundaries come from `\\b` or from a captured
neighbour written back with `${1}`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import polars as pl
import yaml

from faultline.errors import FaultlineError

MASKS_FILE = Path(__file__).resolve().parent / "vocab" / "masks.yml"

__all__ = ["MASKS_FILE", "MaskRule", "MaskSet", "load_masks", "mask_messages"]


@dataclass(frozen=True)
class MaskRule:
    """One masking step: every match of `regex` becomes `replacement` (`${n}` = a capture)."""

    name: str
    regex: str
    replacement: str


@dataclass(frozen=True)
class MaskSet:
    """A versioned list of rules, plus extra rules for single log formats (applied first)."""

    name: str
    version: int
    rules: tuple[MaskRule, ...]
    per_format: Mapping[str, tuple[MaskRule, ...]] = field(default_factory=dict)
    sha256: str = ""

    def rules_for(self, fmt: str | None) -> tuple[MaskRule, ...]:
        """The rules for messages of format `fmt`: its own extra rules, then the common ones."""
        return (*self.per_format.get(fmt or "", ()), *self.rules)

    @property
    def label(self) -> str:
        """`name@version`, as stored in the miner configuration."""
        return f"{self.name}@{self.version}"


def _rule(entry: object, where: str) -> MaskRule:
    if not isinstance(entry, dict) or not {"name", "regex", "replacement"} <= set(entry):
        raise FaultlineError(f"mask rule {where} needs name, regex and replacement: {entry!r}",
                             fix="edit the mask file so each rule has the three keys")
    rule = MaskRule(str(entry["name"]), str(entry["regex"]), str(entry["replacement"]))
    try:  # compile now: a bad pattern should fail when the file is read, not mid-run
        pl.Series([""], dtype=pl.Utf8).str.replace_all(rule.regex, rule.replacement)
    except pl.exceptions.PolarsError as exc:  # polars raises ComputeError for an invalid regex
        raise FaultlineError(f"mask rule {rule.name!r} ({where}) has an invalid regex: {exc}",
                             fix="Polars uses Rust regex syntax: no look-behind or look-ahead") from None
    return rule


def load_masks(path: Path | None = None) -> MaskSet:
    """Read a mask file (default: the bundled `vocab/masks.yml`); bad files raise FaultlineError."""
    return _load(path or MASKS_FILE)


@cache
def _load(path: Path) -> MaskSet:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FaultlineError(f"cannot read mask file {path}: {exc.strerror}", fix="check the path") from exc
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict) or "version" not in data or not isinstance(data.get("rules"), list):
        raise FaultlineError(f"mask file {path} needs a `version` and a `rules` list",
                             fix="see the comments at the top of faultline/logs/vocab/masks.yml")
    rules = tuple(_rule(e, f"rules[{i}]") for i, e in enumerate(data["rules"]))
    formats = data.get("formats") or {}
    per_format = {
        str(fmt): tuple(_rule(e, f"formats.{fmt}[{i}]") for i, e in enumerate(entries or []))
        for fmt, entries in formats.items()
    }
    return MaskSet(
        name=str(data.get("name", path.stem)),
        version=int(data["version"]),
        rules=rules,
        per_format=per_format,
        sha256=hashlib.sha256(text.encode()).hexdigest(),
    )


def mask_expr(expr: pl.Expr, rules: Sequence[MaskRule]) -> pl.Expr:
    """`expr` with every rule applied in order (a lazy expression, for use inside a query)."""
    for rule in rules:
        expr = expr.str.replace_all(rule.regex, rule.replacement)
    return expr


def mask_messages(messages: pl.Series, rules: Sequence[MaskRule]) -> pl.Series:
    """Mask a column of messages; nulls stay null and the result keeps the input's name and order."""
    name = messages.name
    frame = pl.DataFrame({"m": messages.cast(pl.Utf8)})
    return frame.select(mask_expr(pl.col("m"), rules)).to_series().alias(name)
