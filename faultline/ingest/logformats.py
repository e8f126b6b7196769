"""Log-line parsers for `faultline ingest logs`: decoded text lines -> structured columns.

Formats are regexes with named groups, registered in `logformats.yml` beside this module or
built from a logparser-style template. Parsing is vectorised in Polars: one regex extraction
per line set, then strptime and a few cheap string expressions; lines never leave Rust.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

import polars as pl

from faultline.errors import FaultlineError
from faultline.ingest.logseverity import severity_columns
from faultline.ingest.logspec import MATCH_GROUP, RAW, TEXT_FIELDS, LogFormat, registry
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

# reads one named group of the current line's regex match
_Field = Callable[[str], pl.Expr]


@dataclass(frozen=True)
class FormatGuess:
    """Result of format detection. For name "raw", match_ratio is the best ratio any format got."""

    name: str
    match_ratio: float
    ratios: Mapping[str, float] = field(default_factory=dict, compare=False, repr=False)


def known_formats() -> list[str]:
    """Names of the registered formats, in registration order."""
    return list(registry())


def get_format(name: str) -> LogFormat:
    """The registered format called `name`; raises FaultlineError listing the known names."""
    try:
        return registry()[name]
    except KeyError:
        raise FaultlineError(
            f"unknown log format {name!r}",
            fix="use one of: " + ", ".join(known_formats())
            + "; or pass a header template such as '<Date> <Time> <Level> <Component>: <Content>'",
        ) from None


def format_from_template(template: str, *, name: str = "template") -> LogFormat:
    """Build a format from a logparser-style header template (`name` goes to `format`).

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
        name=name,
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
    best = max(tied, key=lambda i: (filled.get(i, 0), candidates[i].specificity, -i))
    ratio = counts[best] / len(lines)
    if ratio < DETECT_MIN_RATIO:
        return FormatGuess(RAW, ratio, ratios)
    return FormatGuess(candidates[best].name, ratio, ratios)


def _filled_fields(frame: pl.DataFrame, fmt: LogFormat) -> int:
    """How many host/component/pid/severity/ts values a format captures over a sample."""
    wanted = [g for g in fmt.groups if g in (*TEXT_FIELDS, "severity", "pri", *fmt.ts_parts)]
    if not wanted:
        return 0
    fields = pl.col("raw").str.extract_groups(fmt.match_regex)
    counts = frame.select(fields.struct.field(g).is_not_null().sum().alias(g) for g in wanted)
    return int(sum(counts.row(0)))


def _null_text() -> pl.Expr:
    return pl.lit(None, dtype=pl.Utf8)


def _timestamp(fmt: LogFormat, frame: pl.DataFrame, grp: _Field, default_year: int) -> pl.Series:
    parts = list(fmt.ts_parts)
    formats = fmt.timestamp
    if formats is None and parts:
        matched = frame.filter(grp(MATCH_GROUP).is_not_null()).head(_INFER_SAMPLE_ROWS)
        sample = matched.select(grp(p).alias(p) for p in parts)
        inferred = infer_timestamp(sample, _timestamp_candidates(), default_year=default_year)
        if inferred is None:
            parts, formats = [], ()
        else:
            parts, formats = list(inferred[0]), (inferred[1],)
    if not parts or not formats:
        return pl.Series("ts", dtype=TS_DTYPE).extend_constant(None, frame.height)
    text = frame.select(join_parts([grp(p) for p in parts]).alias("ts")).to_series()
    ts = parse_timestamps(text, formats, default_year=default_year)
    if "ts_msec" in fmt.groups:
        msec = frame.select(grp("ts_msec").cast(pl.Int64, strict=False)).to_series()
        ts = ts + msec.cast(pl.Duration("ms"))
    return ts


@cache
def _timestamp_candidates() -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for fmt in registry().values():
        seen.update(dict.fromkeys(fmt.timestamp or ()))
    seen.update(dict.fromkeys(COMMON_TIMESTAMP_FORMATS))
    return tuple(seen)


def _text(fmt: LogFormat, grp: _Field, name: str) -> pl.Expr:
    value = grp(name) if name in fmt.groups else _null_text()
    if fmt.nil:
        value = pl.when(value.is_in(list(fmt.nil))).then(_null_text()).otherwise(value)
    constant = dict(fmt.constants).get(name)
    if constant is not None:
        value = pl.when(grp(MATCH_GROUP).is_not_null()).then(pl.coalesce(value, pl.lit(constant)))
    return value


def _apply(lines: pl.DataFrame, fmt: LogFormat, default_year: int) -> pl.DataFrame:
    extra = "__fields"
    frame = lines.with_columns(pl.col("raw").str.extract_groups(fmt.match_regex).alias(extra))

    def grp(name: str) -> pl.Expr:
        return pl.col(extra).struct.field(name)

    matched = grp(MATCH_GROUP).is_not_null()
    body = grp("message") if "message" in fmt.groups else pl.col("raw").str.strip_prefix(grp(MATCH_GROUP))
    # trailing blanks are padding; leading ones are kept because some formats (HealthApp)
    # put the message right after a non-space delimiter and Loghub's ground truth keeps them
    frame = frame.with_columns(body.str.strip_chars_end().alias("__message"))
    message = pl.col("__message")

    severity, severity_raw, facility = severity_columns(
        fmt.severity_styles, fmt.groups, grp, message
    )
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
    `fmt` is a registered name, a LogFormat (see format_from_template), "raw" (parse nothing) or
    None to detect the format from the first lines; lines the format does not match come back with format "raw",
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
    elif fmt == RAW:
        return _all_raw(lines)
    else:
        chosen = _resolve(fmt)
    return _apply(lines, chosen, default_year)
