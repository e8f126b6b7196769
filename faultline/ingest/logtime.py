"""Timestamp parsing for log lines: strptime formats, missing years, epochs, inference."""

from __future__ import annotations

from collections.abc import Sequence

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
