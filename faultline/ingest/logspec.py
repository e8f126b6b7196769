"""What a log format is (`LogFormat`) and the registry of formats read from `logformats.yml`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from faultline.ingest.logseverity import SEVERITY_STYLES

FORMATS_FILE = Path(__file__).with_name("logformats.yml")
RAW = "raw"
MATCH_GROUP = "__match"
TEXT_FIELDS = ("host", "component", "pid")
_MESSAGE_TAILS = ("(?P<message>.*)$", "(?P<message>.*)")


def ascii_digits(pattern: str) -> str:
    r"""Rewrite `\d` as `[0-9]`.

    Unicode `\d` (60-odd digit ranges) makes the capture engine about a quarter slower, and
    log headers write ASCII digits. Nested classes are valid Rust regex: `[ \d]` -> `[ [0-9]]`.
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\" and i + 1 < len(pattern):
            out.append("[0-9]" if pattern[i + 1] == "d" else pattern[i : i + 2])
            i += 2
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class LogFormat:
    """One line format: a regex with named groups plus how to read its timestamp and severity.

    Groups: ts or ts_<part> (timestamp text), ts_msec (milliseconds to add), host, component,
    pid, message, severity, pri; any other group is matched and dropped. `timestamp` lists
    strptime formats; None means infer one from the lines at parse time (templates), an empty
    tuple means no timestamp. `severity` lists severity styles (see logseverity); None means
    "word" when there is a severity group. `constants` fill host/component/pid when the line
    has none; `nil` values (RFC 5424 `-`) become null.
    """

    name: str
    regex: str
    description: str = ""
    timestamp: tuple[str, ...] | None = ()
    severity: tuple[str, ...] | None = None
    constants: tuple[tuple[str, str], ...] = ()
    nil: tuple[str, ...] = ()
    example: str | None = None

    def __post_init__(self) -> None:
        unknown = [s for s in self.severity or () if s not in SEVERITY_STYLES]
        if unknown:
            raise ValueError(f"{self.name}: unknown severity style(s) {unknown}")
        bad = [k for k, _ in self.constants if k not in TEXT_FIELDS]
        if bad:
            raise ValueError(f"{self.name}: constants may only set {TEXT_FIELDS}, not {bad}")
        try:
            self.groups  # noqa: B018 - compiles the regex so a bad one fails at load time
        except pl.exceptions.PolarsError as exc:
            raise ValueError(f"{self.name}: invalid regex: {exc}") from exc

    @cached_property
    def match_regex(self) -> str:
        """The regex actually run: the header, anchored at the line start, in a `__match` group.

        A trailing `(?P<message>.*)$` is cut off: the message is then the rest of the line
        after the match, which spares the regex engine a walk over every message byte.
        """
        body = self.regex
        for tail in _MESSAGE_TAILS:
            if body.endswith(tail) and not body.endswith("\\" + tail):
                body = body[: -len(tail)]
                break
        # anchored twice over on purpose: the message is sliced off the line's start
        return f"^(?P<{MATCH_GROUP}>{ascii_digits(body)})"

    @cached_property
    def groups(self) -> tuple[str, ...]:
        """Named groups of `match_regex`, in pattern order."""
        probe = pl.Series([""], dtype=pl.Utf8).str.extract_groups(self.match_regex)
        return tuple(name for name in probe.struct.fields if not name.isdigit())

    @cached_property
    def ts_parts(self) -> tuple[str, ...]:
        """Groups holding timestamp text, in pattern order."""
        return tuple(
            g for g in self.groups if (g == "ts" or g.startswith("ts_")) and g != "ts_msec"
        )

    @cached_property
    def severity_styles(self) -> tuple[str, ...]:
        """Severity sources to try, in order."""
        if self.severity is not None:
            return self.severity
        return ("word",) if "severity" in self.groups else ()

    @cached_property
    def specificity(self) -> int:
        """How many output columns this format can fill (used to break detection ties)."""
        filled = {"message"}
        if self.ts_parts and self.timestamp != ():
            filled.add("ts")
        if self.severity_styles:
            filled.add("severity")
        filled.update(g for g in TEXT_FIELDS if g in self.groups)
        filled.update(k for k, _ in self.constants)
        return len(filled)


def _format_from_spec(spec: Mapping[str, Any]) -> LogFormat:
    timestamp = spec.get("timestamp", ())
    severity = spec.get("severity")
    return LogFormat(
        name=str(spec["name"]),
        regex=str(spec["regex"]),
        description=str(spec.get("description", "")),
        timestamp=None if timestamp is None else tuple(str(t) for t in timestamp),
        severity=None if severity is None else tuple(str(s) for s in severity),
        constants=tuple((str(k), str(v)) for k, v in (spec.get("constants") or {}).items()),
        nil=tuple(str(v) for v in spec.get("nil") or ()),
        example=spec.get("example"),
    )


@cache
def registry() -> dict[str, LogFormat]:
    """The registered formats by name, in file order (read once)."""
    data = yaml.safe_load(FORMATS_FILE.read_text(encoding="utf-8"))
    formats: dict[str, LogFormat] = {}
    for spec in data["formats"]:
        fmt = _format_from_spec(spec)
        if fmt.name in formats or fmt.name == RAW:
            raise ValueError(f"{FORMATS_FILE.name}: duplicate or reserved name {fmt.name!r}")
        formats[fmt.name] = fmt
    return formats
