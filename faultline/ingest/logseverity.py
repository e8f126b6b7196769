"""Severity normalisation for parsed log lines.

Every parser maps whatever a log writes (a syslog digit or PRI, a level word in any case, an
Android letter, an HTTP status) onto the eight syslog severity names, most severe first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

SEVERITY_NAMES: tuple[str, ...] = (
    "emergency",
    "alert",
    "critical",
    "error",
    "warning",
    "notice",
    "info",
    "debug",
)

_ALIASES: dict[str, tuple[str, ...]] = {
    "emergency": ("emerg", "emergency", "emergencies", "panic", "0"),
    "alert": ("alert", "alerts", "1"),
    "critical": ("crit", "critical", "fatal", "severe", "f", "assert", "a", "2"),
    "error": ("err", "error", "errors", "e", "3"),
    "warning": ("warn", "warning", "warnings", "w", "4"),
    "notice": ("notice", "notices", "notification", "notifications", "5"),
    "info": ("info", "informational", "information", "i", "6"),
    "debug": ("debug", "debugging", "trace", "verbose", "v", "d", "fine", "finer", "finest", "7"),
}

# lower-cased raw value -> normalised name
SEVERITY_ALIASES: dict[str, str] = {
    alias: name for name, aliases in _ALIASES.items() for alias in aliases
}

_DIGIT_NAMES: dict[int, str] = dict(enumerate(SEVERITY_NAMES))

# `%FACILITY[-SUB...]-<digit>-MNEMONIC` as Cisco IOS, IOS-XE and IOS-XR write it.
CISCO_MNEMONIC_RX = (
    r"^%(?P<facility>[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*)-(?P<digit>[0-7])-[A-Za-z0-9_]"
)
# The status code that follows the quoted request line of a combined/common access log.
HTTP_STATUS_RX = r'^"(?:[^"\\]|\\.)*" (\d{3})\b'
FRR_ERROR_CODE_RX = r"\[EC \d+\]"

# How a format finds its severity (the `severity:` list in logformats.yml):
#   word         the `severity` group, normalised;
#   pri          the `pri` group, a syslog PRI: PRI % 8;
#   cisco        `%FAC-<0..7>-MNEMONIC` at the start of the message;
#   http_status  the status after the quoted request line: 5xx error, 4xx warning, else info;
#   frr_ec       an FRR `[EC <n>]` error-category tag in the message: error.
SEVERITY_STYLES = ("word", "pri", "cisco", "http_status", "frr_ec")


def normalize_severity(value: str | int | None) -> str | None:
    """Map one raw severity (word in any case, digit 0-7, Android letter) to its canonical name.

    Returns None when the value is missing or not a known severity.
    """
    if value is None:
        return None
    return SEVERITY_ALIASES.get(str(value).strip().lower())


def severity_expr(raw: pl.Expr) -> pl.Expr:
    """Vectorised `normalize_severity` over a Utf8 expression."""
    return (
        raw.str.strip_chars()
        .str.to_lowercase()
        .replace_strict(SEVERITY_ALIASES, default=None, return_dtype=pl.Utf8)
    )


def digit_severity_expr(digits: pl.Expr) -> pl.Expr:
    """Severity name for an integer syslog level 0-7 (anything else gives null)."""
    return digits.replace_strict(_DIGIT_NAMES, default=None, return_dtype=pl.Utf8)


def pri_severity_expr(pri: pl.Expr) -> pl.Expr:
    """Severity name from a syslog PRI value (facility * 8 + severity) written as text."""
    value = pri.cast(pl.Int64, strict=False)
    valid = value.is_between(0, 191)
    return digit_severity_expr(pl.when(valid).then(value % 8))


def http_status_severity_expr(status: pl.Expr) -> pl.Expr:
    """Severity derived from an HTTP status code: 5xx error, 4xx warning, anything else info."""
    code = status.cast(pl.Int64, strict=False)
    return (
        pl.when(code.is_null())
        .then(pl.lit(None, dtype=pl.Utf8))
        .when(code >= 500)
        .then(pl.lit("error"))
        .when(code >= 400)
        .then(pl.lit("warning"))
        .otherwise(pl.lit("info"))
    )


def _null_text() -> pl.Expr:
    return pl.lit(None, dtype=pl.Utf8)


def severity_columns(
    styles: Sequence[str],
    groups: Sequence[str],
    field: Callable[[str], pl.Expr],
    message: pl.Expr,
) -> tuple[pl.Expr, pl.Expr, pl.Expr | None]:
    """(severity, severity_raw, facility) expressions for a format's severity styles.

    Styles are tried in order; the first that finds a raw value on a line decides. `field`
    reads a named regex group; `facility` is the Cisco facility (for an empty component), or
    None when the format has no `cisco` style.
    """
    found: list[tuple[pl.Expr, pl.Expr]] = []
    facility: pl.Expr | None = None
    for style in styles:
        if style == "word" and "severity" in groups:
            raw = field("severity")
            found.append((raw, severity_expr(raw)))
        elif style == "pri" and "pri" in groups:
            raw = field("pri")
            found.append((raw, pri_severity_expr(raw)))
        elif style == "cisco":
            tag = message.str.extract_groups(CISCO_MNEMONIC_RX)
            raw = tag.struct.field("digit")
            facility = tag.struct.field("facility")
            found.append((raw, digit_severity_expr(raw.cast(pl.Int64, strict=False))))
        elif style == "http_status":
            raw = message.str.extract(HTTP_STATUS_RX, 1)
            found.append((raw, http_status_severity_expr(raw)))
        elif style == "frr_ec":
            flagged = message.str.contains(FRR_ERROR_CODE_RX)
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
