"""The filter vocabularies: `vocab/levels.yml` (levels L1-L4) and `vocab/stopwords.yml` (L5).

Each excerpt records `Vocab.version` and `Vocab.digest` (a hash of both files' bytes), so an
excerpt can always be traced to the exact words that selected its lines.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from faultline.errors import FaultlineError

VOCAB_DIR = Path(__file__).with_name("vocab")
LEVELS_FILE = VOCAB_DIR / "levels.yml"
STOPWORDS_FILE = VOCAB_DIR / "stopwords.yml"
LEVELS: tuple[str, ...] = ("L1", "L2", "L3", "L4", "L5")
VOCAB_LEVELS: tuple[str, ...] = ("L1", "L2", "L3", "L4")

_WORD = re.compile(r"\w")


def term_regex(term: str) -> str:
    """One vocabulary term as a regex fragment (see the matching rules in levels.yml).

    Word boundaries are only put on sides that are word characters: the Rust regex engine has
    no look-around, and `\\b` before a `[` or after a `.` would never match.
    """
    prefix = term.endswith("*")
    core = term[:-1] if prefix else term
    body = r"[\s_-]+".join(re.escape(part) for part in core.split())
    start = r"\b" if _WORD.match(core[:1] or " ") else ""
    end = r"\w*" if prefix else (r"\b" if _WORD.match(core[-1:] or " ") else "")
    return f"{start}{body}{end}"


def terms_pattern(terms: tuple[str, ...] | list[str]) -> str | None:
    """A case-insensitive regex matching any of `terms`, or None for no terms."""
    if not terms:
        return None
    return "(?i)(?:" + "|".join(term_regex(t) for t in terms) + ")"


def _either(parts: list[str | None]) -> str | None:
    kept = [p for p in parts if p]
    if not kept:
        return None
    return "|".join(f"(?:{p})" for p in kept)


@dataclass(frozen=True)
class LevelVocab:
    """One filter level's words and patterns. The severity fields are used by L1 only."""

    name: str
    version: int
    description: str
    terms: tuple[str, ...] = ()
    regexes: tuple[str, ...] = ()
    severities: tuple[str, ...] = ()
    fault_severities: tuple[str, ...] = ()
    raw_severity_terms: tuple[str, ...] = ()
    pri_severities: tuple[int, ...] = ()

    @property
    def pattern(self) -> str | None:
        """The level's text regex: its terms (case-insensitive) or any of its regexes."""
        return _either([terms_pattern(self.terms), *self.regexes])

    @property
    def pri_pattern(self) -> str | None:
        """L1: a syslog PRI at the start of the raw line whose severity is in `pri_severities`."""
        if not self.pri_severities:
            return None
        values = sorted(f * 8 + s for f in range(24) for s in self.pri_severities)
        return "^<(?:" + "|".join(str(v) for v in values) + ")>"

    @property
    def marker_pattern(self) -> str | None:
        """L1: severity markers written in the line (IOS tags, level fields, FRR [EC n])."""
        return _either(list(self.regexes))

    @property
    def severity_raw_pattern(self) -> str | None:
        """L1: a severity_raw word that names error/warning but was not normalised."""
        if not self.raw_severity_terms:
            return None
        return "(?i)^\\s*(?:" + "|".join(term_regex(t) for t in self.raw_severity_terms) + ")\\s*$"


@dataclass(frozen=True)
class Vocab:
    """Both vocabulary files, parsed; `digest` is the sha256 of their bytes."""

    version: str
    digest: str
    levels: dict[str, LevelVocab]
    stopwords: frozenset[str]
    stopwords_version: int

    @property
    def label(self) -> str:
        """Short provenance label, e.g. `2025.11-1+sw1@3f2a9c1d04e5`."""
        return f"{self.version}+sw{self.stopwords_version}@{self.digest[:12]}"


def _check_regex(source: Path, name: str, pattern: str | None) -> None:
    if pattern is None:
        return
    try:
        pl.Series([""], dtype=pl.Utf8).str.contains(pattern)
    except pl.exceptions.PolarsError as exc:
        raise FaultlineError(f"{source}: level {name} has an invalid regex: {exc}",
                             fix="regexes use Rust syntax (no look-around, no back-references)") from None


def _level(source: Path, name: str, spec: Any) -> LevelVocab:
    if not isinstance(spec, dict) or "version" not in spec or "description" not in spec:
        raise FaultlineError(f"{source}: level {name} needs a mapping with version and description",
                             fix="see the header of faultline/logs/vocab/levels.yml")
    level = LevelVocab(
        name=name,
        version=int(spec["version"]),
        description=str(spec["description"]).strip(),
        terms=tuple(str(t) for t in spec.get("terms") or ()),
        regexes=tuple(str(r) for r in spec.get("regexes") or ()),
        severities=tuple(spec.get("severities") or ()),
        fault_severities=tuple(spec.get("fault_severities") or ()),
        raw_severity_terms=tuple(str(t) for t in spec.get("raw_severity_terms") or ()),
        pri_severities=tuple(int(s) for s in spec.get("pri_severities") or ()),
    )
    for pattern in (level.pattern, level.pri_pattern, level.marker_pattern, level.severity_raw_pattern):
        _check_regex(source, name, pattern)
    return level


def _read_yaml(path: Path) -> tuple[bytes, dict[str, Any]]:
    try:
        blob = path.read_bytes()
        data = yaml.safe_load(blob)
    except (OSError, yaml.YAMLError) as exc:
        raise FaultlineError(f"cannot read vocabulary {path}: {exc}",
                             fix="restore the file from the repository") from None
    if not isinstance(data, dict):
        raise FaultlineError(f"vocabulary {path} is not a YAML mapping", fix="restore the file")
    return blob, data


def load_vocab(levels_path: Path = LEVELS_FILE, stopwords_path: Path = STOPWORDS_FILE) -> Vocab:
    """Parse and validate the two vocabulary files (every regex is compiled once here)."""
    levels_blob, levels = _read_yaml(levels_path)
    stop_blob, stop = _read_yaml(stopwords_path)
    specs = levels.get("levels") or {}
    missing = [n for n in VOCAB_LEVELS if n not in specs]
    if missing or "version" not in levels:
        raise FaultlineError(f"{levels_path} lacks version or levels {missing}",
                             fix="levels.yml needs `version:` and levels L1, L2, L3 and L4")
    parsed = {name: _level(levels_path, name, specs[name]) for name in VOCAB_LEVELS}
    words = {str(w).lower() for key in ("stopwords", "generic") for w in stop.get(key) or ()}
    digest = hashlib.sha256(levels_blob + b"\0" + stop_blob).hexdigest()
    return Vocab(version=str(levels["version"]), digest=digest, levels=parsed,
                 stopwords=frozenset(words), stopwords_version=int(stop.get("version", 0)))


@cache
def default_vocab() -> Vocab:
    """The vocabulary shipped with Faultline (read once per process)."""
    return load_vocab()
