"""Timestamp parsing for log lines: strptime formats, missing years, epochs, inference."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

TS_DTYPE = pl.Datetime("us")

# Pseudo-formats for numeric timestamps.
EPOCH_SECONDS = "epoch"
EPOCH_MILLIS = "epoch_ms"

_YEAR_DIRECTIVES = ("%Y", "%y", "%G", "%C", "%s", "%+", "%c", "%D", "%x", "%F")

# Extra shapes tried when a format's timestamp layout must be guessed (templates). The
# registered formats' own strptime formats are tried as well.
COMMON_TIMESTAMP_FORMATS: tuple[str, ...] = (
    "%Y-%m-%dT%H:%M:%S%.f",
    "%Y-%m-%d %H:%M:%S%.f",
    "%Y-%m-%d %H:%M:%S,%3f",
    "%Y/%m/%d %H:%M:%S%.f",
    "%d/%m/%Y %H:%M:%S%.f",
    "%d.%m.%Y %H:%M:%S%.f",
    "%b %d %H:%M:%S%.f",
    "%b %d %Y %H:%M:%S%.f",
    "%a %b %d %H:%M:%S%.f %Y",
    "%d/%b/%Y:%H:%M:%S",
    "%Y%m%d-%H:%M:%S:%3f",
    EPOCH_SECONDS,
)


def has_year(fmt: str) -> bool:
    """Whether a strptime format pins the year itself."""
    return fmt in (EPOCH_SECONDS, EPOCH_MILLIS) or any(d in fmt for d in _YEAR_DIRECTIVES)


def parse_timestamp(text: pl.Expr, formats: Sequence[str], *, default_year: int) -> pl.Expr:
    """Parse `text` with the first of `formats` that fits each value; null if none does.

    A format without a year directive gets `default_year` prepended, since chrono cannot
    build a date without one (classic syslog, IOS-XR and Android timestamps carry none).
    """
    parsed: list[pl.Expr] = []
    for fmt in formats:
        if fmt == EPOCH_SECONDS:
            seconds = text.cast(pl.Float64, strict=False)
            parsed.append((seconds * 1_000_000).cast(pl.Int64).cast(TS_DTYPE))
        elif fmt == EPOCH_MILLIS:
            millis = text.cast(pl.Int64, strict=False)
            parsed.append((millis * 1_000).cast(TS_DTYPE))
        elif has_year(fmt):
            parsed.append(text.str.strptime(TS_DTYPE, fmt, strict=False))
        else:
            with_year = pl.concat_str([pl.lit(f"{default_year} "), text])
            parsed.append(with_year.str.strptime(TS_DTYPE, f"%Y {fmt}", strict=False))
    if not parsed:
        return pl.lit(None, dtype=TS_DTYPE)
    return parsed[0] if len(parsed) == 1 else pl.coalesce(parsed)


def parse_timestamps(text: pl.Series, formats: Sequence[str], *, default_year: int) -> pl.Series:
    """Eager `parse_timestamp` that runs each later format only on the rows still unparsed.

    Most files need only their first format, so the fallbacks (e.g. with fractional seconds)
    cost nothing there; strptime with `%.f` is markedly slower than without.
    """
    name = text.name
    if not formats:
        return pl.Series(name, dtype=TS_DTYPE).extend_constant(None, len(text))
    frame = text.to_frame("text")
    first = parse_timestamp(pl.col("text"), formats[:1], default_year=default_year)
    result = frame.select(first.alias(name)).to_series()
    for fmt in formats[1:]:
        todo = (result.is_null() & text.is_not_null()).arg_true()
        if todo.len() == 0:
            break
        retry = parse_timestamp(pl.col("text"), [fmt], default_year=default_year)
        fixed = frame[todo].select(retry.alias(name)).to_series()
        result = result.scatter(todo, fixed)
    return result


@dataclass(frozen=True)
class YearCarry:
    """Where a file's New Year rollover stands after a batch: the last year-less line's month, years added."""

    month: int | None = None
    years: int = 0


NEW_YEAR_JUMP = 6  # months a line's month must fall below the previous one's to be read as a new year


def roll_over_new_years(ts: pl.Series, default_year: int,
                        carry: YearCarry | None = None) -> tuple[pl.Series, YearCarry]:
    """`ts` with the year-less stamps of a file that crosses New Year moved into the following years.

    Year-less stamps are those dated `default_year` (how `parse_timestamp` fills them). A line whose month
    is `NEW_YEAR_JUMP` or more below the previous such line's (Dec then Jan) starts the next year; one that
    many above it (a late Dec line after Jan ones, as merged streams write) goes back a year, never before
    the first. Pass the returned carry with the next batch of the same file.
    """
    carry = carry or YearCarry()
    year_less = (ts.dt.year() == default_year).fill_null(False)
    frame = pl.DataFrame({"ts": ts, "year_less": year_less})
    month = pl.when(pl.col("year_less")).then(pl.col("ts").dt.month().cast(pl.Int32))
    previous = month.shift(1).forward_fill().fill_null(pl.lit(carry.month, dtype=pl.Int32))
    step = (pl.when(previous - month >= NEW_YEAR_JUMP).then(1)
            .when(month - previous >= NEW_YEAR_JUMP).then(-1).otherwise(0).fill_null(0))
    total = carry.years + step.cum_sum()
    # a running sum held at zero from below: total minus its lowest dip under zero so far
    years = total - pl.min_horizontal(total.cum_min(), pl.lit(0))
    frame = frame.with_columns(month.alias("month"), years.alias("years"))
    rolled = frame.select(
        pl.when(pl.col("year_less") & (pl.col("years") > 0))
        .then(pl.col("ts").dt.offset_by(pl.format("{}y", pl.col("years"))))
        .otherwise(pl.col("ts")).alias(ts.name)).to_series()
    if frame.height == 0:
        return rolled, carry
    months = frame["month"].drop_nulls()
    last_month = int(months[-1]) if months.len() else carry.month
    return rolled, YearCarry(last_month, int(frame["years"][-1]))


def join_parts(parts: Sequence[pl.Expr]) -> pl.Expr:
    """Timestamp text from one or more captured parts, joined by single spaces."""
    if len(parts) == 1:
        return parts[0]
    return pl.concat_str(list(parts), separator=" ")


def _plausible(ts: pl.Expr) -> pl.Expr:
    # `%Y` happily reads "17" as the year 17, so a wrong layout can still "parse"
    return ts.dt.year().is_between(1970, 2100).fill_null(False)


def infer_timestamp(
    parts: pl.DataFrame, candidates: Sequence[str], *, default_year: int
) -> tuple[tuple[str, ...], str] | None:
    """Pick the contiguous run of timestamp columns and the format that parse best.

    `parts` holds one column per captured timestamp part, in line order (e.g. Month, Date,
    Time). Returns (column names, format) with the highest parse rate; ties prefer the longer
    run, then the earlier format. None when nothing parses at least half of the rows.
    """
    names = parts.columns
    if parts.height == 0 or not names:
        return None
    best: tuple[float, int, int] | None = None
    choice: tuple[tuple[str, ...], str] | None = None
    for start in range(len(names)):
        for stop in range(start + 1, len(names) + 1):
            run = tuple(names[start:stop])
            text = join_parts([pl.col(n) for n in run])
            exprs = [
                _plausible(parse_timestamp(text, [fmt], default_year=default_year))
                .mean()
                .alias(f"rate{rank}")
                for rank, fmt in enumerate(candidates)
            ]
            rates = parts.select(exprs).row(0)
            for rank, rate in enumerate(rates):
                key = (float(rate or 0.0), len(run), -rank)
                if best is None or key > best:
                    best, choice = key, (run, candidates[rank])
    if best is None or best[0] < 0.5:
        return None
    return choice
