"""Log-line parsers for `faultline ingest logs`: decoded text lines -> structured columns.

Formats are regexes with named groups, registered in `logformats.yml` beside this module or
built from a logparser-style template. Parsing is vectorised in Polars: one regex extraction
per line set, then strptime and a few cheap string expressions; lines never leave Rust.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from faultline.errors import FaultlineError
from faultline.ingest import logseverity as sev
from faultline.ingest.logtemplate import template_regex
from faultline.ingest.logtime import (
    COMMON_TIMESTAMP_FORMATS,
    TS_DTYPE,
    infer_timestamp,
    join_parts,
    parse_timestamps,
)

__all__ = [
    "OUTPUT_SCHEMA",
    "FormatGuess",
    "LogFormat",
    "detect_format",
    "format_from_template",
    "get_format",
    "known_formats",
    "parse_lines",
]

FORMATS_FILE = Path(__file__).with_name("logformats.yml")
RAW = "raw"
DETECT_SAMPLE_LINES = 2000
DETECT_MIN_RATIO = 0.3
_INFER_SAMPLE_ROWS = 500

OUTPUT_SCHEMA: dict[str, pl.DataType] = {
    "format": pl.Utf8(),
    "parsed": pl.Boolean(),
    "ts": TS_DTYPE,
    "host": pl.Utf8(),
    "severity": pl.Utf8(),
    "severity_raw": pl.Utf8(),
    "component": pl.Utf8(),
    "pid": pl.Utf8(),
    "message": pl.Utf8(),
}
_TEXT_FIELDS = ("host", "component", "pid")
_SEVERITY_STYLES = ("word", "pri", "cisco", "http_status", "frr_ec")
_MATCH = "__match"
_MESSAGE_TAILS = ("(?P<message>.*)$", "(?P<message>.*)")


@dataclass(frozen=True)
class LogFormat:
    """One line format: a regex with named groups plus how to read its timestamp and severity.

    `timestamp=None` means the strptime format is inferred from the data at parse time (used
    for templates); an empty tuple means the format has no usable timestamp.
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
        unknown = [s for s in self.severity or () if s not in _SEVERITY_STYLES]
        if unknown:
            raise ValueError(f"{self.name}: unknown severity style(s) {unknown}")
        bad = [k for k, _ in self.constants if k not in _TEXT_FIELDS]
        if bad:
            raise ValueError(f"{self.name}: constants may only set {_TEXT_FIELDS}, not {bad}")
        try:
            self.groups  # noqa: B018 - compiles the regex so a bad one fails at load time
        except pl.exceptions.PolarsError as exc:
            raise ValueError(f"{self.name}: invalid regex: {exc}") from exc

    @cached_property
    def match_regex(self) -> str:
        """The regex actually run: the header wrapped in a `__match` group.

        A trailing `(?P<message>.*)$` is cut off: the message is then the rest of the line
        after the match, which spares the regex engine a walk over every message byte.
        """
        body = self.regex
        for tail in _MESSAGE_TAILS:
            if body.endswith(tail) and not body.endswith("\\" + tail):
                body = body[: -len(tail)]
                break
        return f"(?P<{_MATCH}>{body})"

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
        filled.update(g for g in _TEXT_FIELDS if g in self.groups)
        filled.update(k for k, _ in self.constants)
        return len(filled)


@dataclass(frozen=True)
class FormatGuess:
    """Result of format detection. For name "raw", match_ratio is the best ratio any format got."""

    name: str
    match_ratio: float
    ratios: Mapping[str, float] = field(default_factory=dict, compare=False, repr=False)


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
def _registry() -> dict[str, LogFormat]:
    data = yaml.safe_load(FORMATS_FILE.read_text(encoding="utf-8"))
    formats: dict[str, LogFormat] = {}
    for spec in data["formats"]:
        fmt = _format_from_spec(spec)
        if fmt.name in formats or fmt.name == RAW:
            raise ValueError(f"{FORMATS_FILE.name}: duplicate or reserved format name {fmt.name!r}")
        formats[fmt.name] = fmt
    return formats


def known_formats() -> list[str]:
    """Names of the registered formats, in registration order."""
    return list(_registry())


def get_format(name: str) -> LogFormat:
    """The registered format called `name`; raises FaultlineError listing the known names."""
    try:
        return _registry()[name]
    except KeyError:
        raise FaultlineError(
            f"unknown log format {name!r}",
            fix="use one of: " + ", ".join(known_formats())
            + "; or pass a header template such as '<Date> <Time> <Level> <Component>: <Content>'",
        ) from None


def format_from_template(template: str, *, name: str | None = None) -> LogFormat:
    """Build a format from a logparser-style header template.

    Fields are `<Name>` placeholders: Level/Severity -> severity, Component/Logger/Service/
    Program/Process -> component, Pid/Thread/Tid -> pid, Host/Hostname/Node/User -> host,
    Content -> message, Date/Time/Day/Month/Year/Timestamp -> timestamp parts (their strptime
    format is inferred from the lines at parse time); other fields are matched and dropped.
    A field ends at the next space, or, when a non-space delimiter follows it, at the first
    place the rest of the template matches. Raises FaultlineError for a template without fields.
    """
    try:
        pattern = template_regex(template)
    except ValueError as exc:
        raise FaultlineError(
            str(exc), fix="write fields as <Name>, e.g. '<Date> <Time> <Level> <Content>'"
        ) from None
    return LogFormat(
        name=name or f"template:{template}",
        regex=pattern,
        description=f"built from template {template!r}",
        timestamp=None,
    )


def _resolve(fmt: str | LogFormat) -> LogFormat:
    return fmt if isinstance(fmt, LogFormat) else get_format(fmt)


def detect_format(
    sample: Sequence[str], *, formats: Iterable[str | LogFormat] | None = None
) -> FormatGuess:
    """Guess the format of a log from its first lines.

    Tries every registered format (or `formats`) on up to the first 2000 non-empty lines and
    picks the highest match ratio; ties go to the format filling more output columns, then to
    the one registered first. Returns name "raw" when no format matches 30% of the lines.
    """
    lines = [s for s in sample if s and s.strip()][:DETECT_SAMPLE_LINES]
    candidates = [_resolve(f) for f in (formats if formats is not None else known_formats())]
    if not lines or not candidates:
        return FormatGuess(RAW, 0.0)
    frame = pl.DataFrame({"raw": lines}, schema={"raw": pl.Utf8})
    counts = frame.select(
        pl.col("raw").str.contains(f.match_regex).sum().alias(str(i))
        for i, f in enumerate(candidates)
    ).row(0)
    ratios = {f.name: c / len(lines) for f, c in zip(candidates, counts, strict=True)}
    top = max(counts)
    tied = [i for i, c in enumerate(counts) if c == top]
    filled = {i: _filled_fields(frame, candidates[i]) for i in tied} if len(tied) > 1 else {}
    best = max(
        tied, key=lambda i: (filled.get(i, 0), candidates[i].specificity, -i)
    )
    ratio = counts[best] / len(lines)
    if ratio < DETECT_MIN_RATIO:
        return FormatGuess(RAW, ratio, ratios)
    return FormatGuess(candidates[best].name, ratio, ratios)


def _filled_fields(frame: pl.DataFrame, fmt: LogFormat) -> int:
    """How many host/component/pid/severity/ts values a format captures over a sample."""
    wanted = [g for g in fmt.groups if g in (*_TEXT_FIELDS, "severity", "pri", *fmt.ts_parts)]
    if not wanted:
        return 0
    fields = pl.col("raw").str.extract_groups(fmt.match_regex)
    counts = frame.select(fields.struct.field(g).is_not_null().sum().alias(g) for g in wanted)
    return int(sum(counts.row(0)))


def _null_text() -> pl.Expr:
    return pl.lit(None, dtype=pl.Utf8)


def _severity(fmt: LogFormat, grp: Any, message: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr | None]:
    """(severity, severity_raw, facility-for-component) expressions for a format."""
    found: list[tuple[pl.Expr, pl.Expr]] = []
    facility: pl.Expr | None = None
    for style in fmt.severity_styles:
        if style == "word" and "severity" in fmt.groups:
            raw = grp("severity")
            found.append((raw, sev.severity_expr(raw)))
        elif style == "pri" and "pri" in fmt.groups:
            raw = grp("pri")
            found.append((raw, sev.pri_severity_expr(raw)))
        elif style == "cisco":
            tag = message.str.extract_groups(sev.CISCO_MNEMONIC_RX)
            raw = tag.struct.field("digit")
            facility = tag.struct.field("facility")
            found.append((raw, sev.digit_severity_expr(raw.cast(pl.Int64, strict=False))))
        elif style == "http_status":
            raw = message.str.extract(sev.HTTP_STATUS_RX, 1)
            found.append((raw, sev.http_status_severity_expr(raw)))
        elif style == "frr_ec":
            flagged = message.str.contains(sev.FRR_ERROR_CODE_RX)
            found.append(
                (
                    pl.when(flagged).then(pl.lit("EC")).otherwise(_null_text()),
                    pl.when(flagged).then(pl.lit("error")).otherwise(_null_text()),
                )
            )
    if not found:
        return _null_text(), _null_text(), facility
    if len(found) == 1:
        return found[0][1], found[0][0], facility
    chain = pl.when(found[0][0].is_not_null()).then(found[0][1])
    for raw, norm in found[1:]:
        chain = chain.when(raw.is_not_null()).then(norm)
    return chain.otherwise(_null_text()), pl.coalesce([r for r, _ in found]), facility


def _timestamp(fmt: LogFormat, frame: pl.DataFrame, grp: Any, default_year: int) -> pl.Series:
    parts = list(fmt.ts_parts)
    formats = fmt.timestamp
    matched = frame.filter(grp(_MATCH).is_not_null())
    if formats is None and parts:
        sample = matched.head(_INFER_SAMPLE_ROWS).select(grp(p).alias(p) for p in parts)
        inferred = infer_timestamp(sample, _timestamp_candidates(), default_year=default_year)
        if inferred is None:
            parts, formats = [], ()
        else:
            parts, formats = list(inferred[0]), (inferred[1],)
    if not parts or not formats:
        return pl.Series("ts", [None] * frame.height, dtype=TS_DTYPE)
    text = frame.select(join_parts([grp(p) for p in parts]).alias("ts")).to_series()
    ts = parse_timestamps(text, formats, default_year=default_year)
    if "ts_msec" in fmt.groups:
        msec = frame.select(grp("ts_msec").cast(pl.Int64, strict=False)).to_series()
        ts = ts + msec.cast(pl.Duration("ms"))
    return ts


@cache
def _timestamp_candidates() -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for fmt in _registry().values():
        seen.update(dict.fromkeys(fmt.timestamp or ()))
    seen.update(dict.fromkeys(COMMON_TIMESTAMP_FORMATS))
    return tuple(seen)


def _text(fmt: LogFormat, grp: Any, name: str) -> pl.Expr:
    value = grp(name) if name in fmt.groups else _null_text()
    if fmt.nil:
        value = pl.when(value.is_in(list(fmt.nil))).then(_null_text()).otherwise(value)
    constant = dict(fmt.constants).get(name)
    if constant is not None:
        value = pl.when(grp(_MATCH).is_not_null()).then(pl.coalesce(value, pl.lit(constant)))
    return value


def _apply(lines: pl.DataFrame, fmt: LogFormat, default_year: int) -> pl.DataFrame:
    extra = "__fields"
    frame = lines.with_columns(pl.col("raw").str.extract_groups(fmt.match_regex).alias(extra))

    def grp(name: str) -> pl.Expr:
        return pl.col(extra).struct.field(name)

    matched = grp(_MATCH).is_not_null()
    if "message" in fmt.groups:
        body = grp("message")
    else:
        body = pl.col("raw").str.strip_prefix(grp(_MATCH))
    # trailing blanks are padding; leading ones are kept because some formats (HealthApp)
    # put the message right after a non-space delimiter and Loghub's ground truth keeps them
    frame = frame.with_columns(body.str.strip_chars_end().alias("__message"))
    message = pl.col("__message")

    severity, severity_raw, facility = _severity(fmt, grp, message)
    component = _text(fmt, grp, "component")
    if facility is not None:
        component = pl.coalesce(component, facility)
    frame = frame.with_columns(_timestamp(fmt, frame, grp, default_year).alias("__ts"))
    out = frame.select(
        *lines.columns,
        pl.when(matched).then(pl.lit(fmt.name)).otherwise(pl.lit(RAW)).alias("format"),
        matched.fill_null(False).alias("parsed"),
        pl.col("__ts").alias("ts"),
        _text(fmt, grp, "host").alias("host"),
        severity.alias("severity"),
        severity_raw.alias("severity_raw"),
        component.alias("component"),
        _text(fmt, grp, "pid").alias("pid"),
        pl.when(matched).then(message).otherwise(pl.col("raw")).alias("message"),
    )
    return out.cast(OUTPUT_SCHEMA)  # type: ignore[arg-type]


def _all_raw(lines: pl.DataFrame) -> pl.DataFrame:
    return lines.with_columns(
        pl.lit(RAW).alias("format"),
        pl.lit(False).alias("parsed"),
        pl.lit(None, dtype=TS_DTYPE).alias("ts"),
        *(pl.lit(None, dtype=pl.Utf8).alias(c) for c in ("host", "severity", "severity_raw")),
        *(pl.lit(None, dtype=pl.Utf8).alias(c) for c in ("component", "pid")),
        pl.col("raw").alias("message"),
    )


def parse_lines(
    lines: pl.DataFrame, *, fmt: str | LogFormat | None = None, default_year: int
) -> pl.DataFrame:
    """Parse decoded log lines into structured columns.

    `lines` has `line_no` (Int64) and `raw` (Utf8, no line terminator). The result keeps every
    row, in order, with the input columns plus format, parsed, ts (naive, as written), host,
    severity (one of the eight syslog names or null), severity_raw, component, pid and message.
    `fmt` is a registered name, a LogFormat (see format_from_template) or None to detect the
    format from the first lines; lines the format does not match come back with format "raw",
    parsed false, message = raw and null fields. Year-less timestamps take `default_year`.
    """
    missing = {"line_no", "raw"} - set(lines.columns)
    if missing:
        raise ValueError(f"parse_lines needs columns line_no and raw; missing {sorted(missing)}")
    if lines.schema["raw"] != pl.Utf8:
        raise ValueError(f"parse_lines needs raw as Utf8, got {lines.schema['raw']}")
    if fmt is None:
        sample = (
            lines.lazy()
            .select("raw")
            .filter(pl.col("raw").str.strip_chars().str.len_bytes() > 0)
            .head(DETECT_SAMPLE_LINES)
            .collect()
            .get_column("raw")
            .to_list()
        )
        guess = detect_format(sample)
        if guess.name == RAW:
            return _all_raw(lines)
        chosen = get_format(guess.name)
    else:
        chosen = _resolve(fmt)
    return _apply(lines, chosen, default_year)
