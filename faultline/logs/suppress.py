"""The noise suppressor (ASTRA §4.1): background components give way to one annotation line.

`suppress_noise` marks a component whose lines are more than `noise_share` of the diagnostic lines, and more
than `min_lines`, with no fault-severity line among them, except what the ticket is about; the pipeline adds one
`SuppressedComponent` annotation per component. The rules and why: docs/logs.md#noise-suppression.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from faultline.logs.excerpt import SuppressedComponent
from faultline.logs.filter import fault_expr, kept_expr, named_stream_expr
from faultline.logs.vocab import Vocab

SUPPRESSED_COLUMN = "suppressed"


@dataclass(frozen=True)
class Suppression:
    """The lines with a `suppressed` column added, and what was suppressed (largest first)."""

    lines: pl.DataFrame
    components: tuple[SuppressedComponent, ...]
    diagnostic_lines: int


def suppress_noise(levelled: pl.DataFrame, *, noise_share: float, vocab: Vocab,
                   ticket_terms: Sequence[str] = (), min_lines: float = 0) -> Suppression:
    """Find noise components among the lines of `levelled` (the output of `apply_levels`).

    `min_lines` is the volume a component must exceed besides the share. Adds the boolean
    column `suppressed`, true on every line (diagnostic or not) of a suppressed component
    except on the device the ticket names. Rows are unchanged; `SuppressedComponent.top_template_id` is left
    empty here (templates come later in the pipeline).
    """
    levelled = levelled.with_columns(named_stream_expr(levelled, ticket_terms).alias("__named"))
    diagnostic = levelled.filter(kept_expr())
    total = diagnostic.height
    named = {t.lower() for t in ticket_terms}
    away = pl.when(~pl.col("__named"))  # lines off the device the ticket names
    components: list[SuppressedComponent] = []
    if total:
        stats = (
            diagnostic.filter(pl.col("component").is_not_null())
            .group_by("component")
            .agg(
                pl.len().alias("n"),
                fault_expr(vocab).any().alias("has_fault"),
                (~pl.col("__named")).sum().alias("removed"),
                away.then(pl.col("ts")).min().alias("first_ts"),
                away.then(pl.col("ts")).max().alias("last_ts"),
                away.then(pl.col("source_file")).drop_nulls().n_unique().alias("files"),
                away.then(pl.col("source_file")).drop_nulls().first().alias("source_file"),
                away.then(pl.col("line_no")).drop_nulls().first().alias("line_no"),
                away.then(pl.coalesce("message", "raw")).drop_nulls().first().alias("sample"),
            )
            .filter((pl.col("n") / total > noise_share) & (pl.col("n") > min_lines) & ~pl.col("has_fault")
                    & (pl.col("removed") > 0))
            .sort(["n", "component"], descending=[True, False])
        )
        for row in stats.iter_rows(named=True):
            if row["component"].lower() in named:
                continue
            components.append(SuppressedComponent(
                component=row["component"], lines=row["removed"], share=row["n"] / total,
                files=row["files"], first_ts=row["first_ts"], last_ts=row["last_ts"],
                source_file=row["source_file"], line_no=row["line_no"], sample=row["sample"] or "",
            ))
    names = [c.component for c in components]
    flagged = levelled.with_columns(
        (pl.col("component").is_in(names).fill_null(False) & ~pl.col("__named")).alias(SUPPRESSED_COLUMN)
    ).drop("__named")
    return Suppression(lines=flagged, components=tuple(components), diagnostic_lines=total)
