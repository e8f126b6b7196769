"""Severity normalisation for parsed log lines.

Every parser maps whatever a log writes (a syslog digit or PRI, a level word in any case, an
Android letter, an HTTP status) onto the eight syslog severity names, most severe first.
"""

from __future__ import annotations

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
    "critical": ("crit", "critical", "fatal", "severe", "f", "2"),
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
CISCO_MNEMONIC_RX = r"^%(?P<facility>[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*)-(?P<digit>[0-7])-[A-Za-z0-9_]"
# The status code that follows the quoted request line of a combined/common access log.
HTTP_STATUS_RX = r'^"(?:[^"\\]|\\.)*" (\d{3})\b'
FRR_ERROR_CODE_RX = r"\[EC \d+\]"


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
