"""The five-level filter (ASTRA §4.1): which log lines are diagnostic, and why.

`apply_levels` adds l1..l5 (severity, fault keywords, state transitions, component anomalies, the ticket's own
keywords), each one Polars regex over a whole column. A ticket term naming a host or a log file marks that device
(`named_stream_expr`) instead of firing L5. The levels: docs/logs.md#the-five-level-filter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import polars as pl

from faultline.logs.vocab import LEVELS, Vocab, terms_pattern

LEVEL_COLUMNS: tuple[str, ...] = tuple(level.lower() for level in LEVELS)
INPUT_COLUMNS: tuple[str, ...] = (
    "source_file", "line_no", "ts", "host", "severity", "severity_raw", "component", "pid", "message", "raw",
)

# candidate tokens: start and end on a letter or digit, may hold . : / @ _ - inside
# (device names, FQDNs, IPv4/IPv6 addresses, interface names such as HundredGigE0/0/0/1)
_TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.:/@-]*[A-Za-z0-9])?")
_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?$")
_NUMERIC = re.compile(r"^[0-9][0-9:./-]*$")
_WORDS_ONLY = re.compile(r"^[A-Za-z]+(?:/[A-Za-z]+)+$")


def kept_expr() -> pl.Expr:
    """True for lines that fired at least one level (the union of L1..L5)."""
    return pl.any_horizontal(*(pl.col(c) for c in LEVEL_COLUMNS))


def _contains(column: str, pattern: str | None) -> pl.Expr:
    if pattern is None:
        return pl.lit(False)
    return pl.col(column).str.contains(pattern).fill_null(False)


def _basename() -> pl.Expr:
    return pl.col("source_file").str.replace(r"^.*[/\\]", "")


def _values_matching(lines: pl.DataFrame, expr: pl.Expr, pattern: str) -> pl.Series:
    """Distinct values of a low-cardinality column that the pattern matches (checked once each)."""
    values = lines.select(expr.alias("v")).get_column("v").unique().drop_nulls()
    return values.filter(values.str.contains(pattern))


def _any_value_matching(lines: pl.DataFrame, exprs: Sequence[pl.Expr], pattern: str) -> pl.Expr:
    hit = pl.lit(False)
    for expr in exprs:
        matched = _values_matching(lines, expr, pattern)
        if matched.len():
            hit = hit | expr.is_in(matched.implode()).fill_null(False)
    return hit


def _ticket_expr(lines: pl.DataFrame, pattern: str | None) -> pl.Expr:
    if pattern is None:
        return pl.lit(False)
    return _contains("message", pattern) | _any_value_matching(lines, [pl.col("component")], pattern)


def named_stream_expr(lines: pl.DataFrame, ticket_terms: Sequence[str]) -> pl.Expr:
    """True on lines whose host or log file name matches a ticket term: the device the ticket names."""
    pattern = terms_pattern(list(ticket_terms))
    if pattern is None:
        return pl.lit(False)
    return _any_value_matching(lines, [pl.col("host"), _basename()], pattern)


def apply_levels(lines: pl.DataFrame, vocab: Vocab, ticket_terms: Sequence[str]) -> pl.DataFrame:
    """Add boolean columns l1..l5 (which levels fired on each line) to `lines`.

    `lines` has the log_lines columns (source_file, line_no, ts, host, severity, severity_raw,
    component, pid, message, raw). `ticket_terms` are plain words (see `ticket_terms`); they
    are regex-escaped here. Rows and their order are unchanged.
    """
    missing = [c for c in INPUT_COLUMNS if c not in lines.columns]
    if missing:
        raise ValueError(f"apply_levels needs the log_lines columns; missing {missing}")
    l1 = vocab.levels["L1"]
    severity = pl.col("severity").is_in(list(l1.severities)).fill_null(False)
    # markers are searched in the message (unparsed lines keep the whole line there); only the
    # syslog PRI, which parsers strip, is looked for on the raw line, anchored, so it costs little
    text = pl.col("message") if lines.get_column("message").null_count() == 0 else pl.coalesce("message", "raw")
    frame = lines.with_columns(text.alias("__text"))
    frame = frame.with_columns(
        (severity | _contains("severity_raw", l1.severity_raw_pattern) | _contains("raw", l1.pri_pattern)
         | _contains("__text", l1.marker_pattern)).alias("l1"),
        *(_contains("__text", vocab.levels[name].pattern).alias(name.lower()) for name in ("L2", "L3", "L4")),
        _ticket_expr(lines, terms_pattern(list(ticket_terms))).alias("l5"),
    )
    return frame.drop("__text")


def fault_expr(vocab: Vocab) -> pl.Expr:
    """A fault-severity line: severity error or worse, or an L2 (fault) or L4 (anomaly) keyword.

    Warnings alone are not fault severity: a component repeating one warning all day is exactly
    the background chatter the noise suppressor is for.
    """
    fault = pl.col("severity").is_in(list(vocab.levels["L1"].fault_severities)).fill_null(False)
    return fault | pl.col("l2") | pl.col("l4")


def ticket_hit_counts(lines: pl.DataFrame, ticket_terms: Sequence[str]) -> pl.Series:
    """Ticket-term matches per line: distinct terms in the message, plus those in the component,
    the host and the log file name (a term found in two fields counts twice).

    The collapse step keeps lines that match more of the ticket longest. Messages are only
    searched on L5 lines when `lines` has an `l5` column (no other message can match).
    """
    pattern = terms_pattern(list(ticket_terms))
    counts = pl.zeros(lines.height, dtype=pl.UInt32, eager=True).alias("ticket_hits")
    if pattern is None or lines.height == 0:
        return counts

    def distinct(expr: pl.Expr) -> pl.Expr:
        found = expr.str.extract_all(pattern).list.eval(pl.element().str.to_lowercase()).list.n_unique()
        return found.fill_null(0).cast(pl.UInt32)

    rows = lines.select(pl.arg_where(pl.col("l5"))).to_series() if "l5" in lines.columns else None
    subset = lines if rows is None else lines[rows]
    in_message = subset.select(distinct(pl.col("message"))).to_series()
    counts = in_message if rows is None else counts.scatter(rows, in_message)
    for expr in (pl.col("component"), pl.col("host"), _basename()):
        values = lines.select(expr.alias("v")).get_column("v").unique().drop_nulls()
        hits = pl.DataFrame({"v": values}).select("v", distinct(pl.col("v")).alias("n")).filter(pl.col("n") > 0)
        if hits.height:
            mapping = dict(hits.iter_rows())
            extra = lines.select(expr.replace_strict(mapping, default=0, return_dtype=pl.UInt32)).to_series()
            counts = counts + extra
    return counts.alias("ticket_hits")


def _tokens(text: str) -> Iterable[str]:
    for token in _TOKEN.findall(text):
        if _WORDS_ONLY.match(token):  # "up/down" is two words, "Gi0/1" is one interface
            yield from token.split("/")
            continue
        yield token
        if _IPV4.match(token):
            if "/" in token:
                yield token.split("/")[0]  # 10.0.0.1/24 is logged as 10.0.0.1 as often
        elif "." in token:
            yield token.split(".")[0]  # web99.local is often logged as just web99


def _keep(token: str, vocab: Vocab) -> bool:
    lower = token.lower()
    if lower in vocab.stopwords:
        return False
    if _IPV4.match(token):
        return True
    if _NUMERIC.match(token):  # counts, times, dates: they match arbitrary numbers in logs
        return False
    has_digit = any(ch.isdigit() for ch in token)
    return has_digit or sum(ch.isalpha() for ch in token) >= 3


def ticket_terms(ticket_text: str, similar_texts: Sequence[str], vocab: Vocab) -> list[str]:
    """L5 keywords: tokens of the ticket, then of its similar tickets, lower-cased, deduplicated.

    Stop-words and generic ticket words (vocab/stopwords.yml), bare numbers, times and dates and
    letter-only tokens shorter than three characters are dropped; device names (leaf2, r1,
    web99.local), IP addresses and interface names are kept. Terms are plain text: callers that
    build a regex escape them (`apply_levels` does).
    """
    seen: dict[str, None] = {}
    for text in (ticket_text, *similar_texts):
        for token in _tokens(text or ""):
            if _keep(token, vocab):
                seen.setdefault(token.lower(), None)
    return list(seen)
