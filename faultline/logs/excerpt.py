"""The log excerpt as typed records, and the collapse/cap step that keeps it under the line cap.

`collapse_and_cap` folds same-template lower-severity lines, then repeats of one severe message, then cuts the
lowest-priority lines (by `tier_expr`: severe, state transition, ticket keyword, context) and sets `truncated`.
The steps and tiers: docs/logs.md#collapse-and-cap.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict

from faultline.logs.vocab import LEVELS, Vocab

AnnotationKind = Literal["suppressed", "truncated"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SuppressedComponent(_Record):
    """A noise component replaced by one annotation line.

    `lines` counts the diagnostic lines removed; `share` is the component's share of all
    diagnostic lines (its lines on the device the ticket names stay and are not counted in `lines`).
    """

    component: str
    lines: int
    share: float
    files: int
    first_ts: datetime | None
    last_ts: datetime | None
    source_file: str
    line_no: int
    sample: str
    top_template_id: int | None = None
    top_template: str | None = None

    def describe(self) -> str:
        """The annotation text: what was suppressed, how much, when, and what it looked like."""
        span = f" from {self.first_ts} to {self.last_ts}" if self.first_ts else ""
        what = (f"top template #{self.top_template_id}: {self.top_template}" if self.top_template
                else f"sample: {self.sample}")
        return (f"suppressed noise: component {self.component!r}, {self.lines} diagnostic lines in "
                f"{self.files} file(s){span} (the component has {self.share:.0%} of all diagnostic lines, "
                f"none at fault severity); {what}")


class ExcerptLine(_Record):
    """One line of the excerpt: a log line, a folded group's representative, or an annotation."""

    source_file: str
    line_no: int
    ts: datetime | None = None
    host: str | None = None
    severity: str | None = None
    component: str | None = None
    text: str
    levels: tuple[str, ...] = ()
    is_context: bool = False
    template_id: int | None = None
    collapsed_count: int = 0
    last_ts: datetime | None = None
    annotation: AnnotationKind | None = None


class LogExcerpt(_Record):
    """The capped excerpt for one incident and round, with how it was built."""

    incident_id: str
    round: int
    lines: tuple[ExcerptLine, ...]
    level_counts: dict[str, int]
    suppressed: tuple[SuppressedComponent, ...] = ()
    collapsed_lines: int = 0
    truncated: bool = False
    truncated_lines: int = 0
    input_lines: int
    max_lines: int
    vocab_version: str
    miner_config: dict[str, Any]
    ticket_terms: tuple[str, ...] = ()
    timings: dict[str, float] = {}

    def excerpt_level_counts(self) -> dict[str, int]:
        """Lines of the excerpt itself per level, plus context and annotation lines."""
        counts = {level: sum(level in line.levels for line in self.lines) for level in LEVELS}
        counts["context"] = sum(line.is_context for line in self.lines)
        counts["annotations"] = sum(line.annotation is not None for line in self.lines)
        return counts

    def to_json(self) -> str:
        """The whole record as JSON (`LogExcerpt.model_validate_json` reads it back)."""
        return self.model_dump_json()

    def to_text(self) -> str:
        """One header block, then one line per excerpt line with its levels and counts."""
        shown = self.excerpt_level_counts()
        levels = "  ".join(f"{k} {v}" for k, v in self.level_counts.items())
        out = [
            f"# log excerpt: incident {self.incident_id}, round {self.round}: {len(self.lines)} lines "
            f"(cap {self.max_lines}) from {self.input_lines} input lines",
            f"# filter: {levels}",
            "# in excerpt: " + "  ".join(f"{k} {v}" for k, v in shown.items())
            + f"  | folded {self.collapsed_lines}  "
            f"| truncated {'yes, ' + str(self.truncated_lines) if self.truncated else 'no'}",
            f"# ticket terms: {', '.join(self.ticket_terms) or '-'}  | vocab {self.vocab_version}",
        ]
        names = _display_names({line.source_file for line in self.lines if line.source_file})
        current, previous = None, -1
        for line in self.lines:
            if line.source_file != current and line.source_file:
                current, previous = line.source_file, -1
                out.append(f"== {names[current]}")
            if line.annotation:
                out.append(f"  ---- [{line.annotation}] {line.text}")
                continue
            if previous >= 0 and line.line_no > previous + 1:
                out.append("   ...")
            previous = line.line_no
            tag = "ctx" if line.is_context else " ".join(line.levels)
            if line.collapsed_count:
                tag += f" x{line.collapsed_count}"
            tail = ""
            if line.collapsed_count:
                tail = f"  (x{line.collapsed_count} similar lines until {line.last_ts}, template #{line.template_id})"
            out.append(f"{line.line_no:>7} [{tag:<14}] {line.text.rstrip()}{tail}")
        return "\n".join(out)


def _display_names(files: set[str]) -> dict[str, str]:
    base = {f: f.replace("\\", "/").rsplit("/", 1)[-1] for f in files}
    unique = len(set(base.values())) == len(base)
    return base if unique else {f: f for f in files}


def tier_expr(vocab: Vocab) -> pl.Expr:
    """The collapse/cut tier of each line (docs/logs.md#collapse-and-cap)."""
    severe = (pl.col("l1") | pl.col("l2") | pl.col("l4")
              | pl.col("severity").is_in(list(vocab.levels["L1"].severities)).fill_null(False))
    return (pl.when(severe).then(3).when(pl.col("l3")).then(2).when(pl.col("l5")).then(1)
            .otherwise(0).cast(pl.Int8).alias("tier"))


@dataclass(frozen=True)
class Capped:
    """Rows left after collapse/cap, with collapsed_count and last_ts columns."""

    rows: pl.DataFrame
    collapsed_lines: int
    truncated_lines: int


def _fold(rows: pl.DataFrame, eligible: pl.Expr, keys: list[str], excess: int) -> tuple[pl.DataFrame, int]:
    """Fold the least important groups of `keys` among `eligible` rows until `excess` is gone."""
    groups = (
        rows.filter(eligible)
        .group_by(keys)
        .agg(pl.len().alias("__n"), pl.col("__i").min().alias("__rep"), pl.col("ts").max().alias("__last"))
        .filter(pl.col("__n") > 1)
        .sort(["tier", "ticket_hits", "__n", "__rep"], descending=[False, False, True, False])
    )
    saved = (pl.col("__n") - 1).cum_sum()
    chosen = groups.filter(saved - (pl.col("__n") - 1) < excess)
    if chosen.height == 0:
        return rows, 0
    joined = rows.join(chosen.select(*keys, "__n", "__rep", "__last"), on=keys, how="left")
    member = pl.col("__n").is_not_null() & eligible
    kept = joined.filter(~member | (pl.col("__i") == pl.col("__rep"))).with_columns(
        pl.when(member).then(pl.col("__n")).otherwise(pl.col("collapsed_count")).alias("collapsed_count"),
        pl.when(member).then(pl.col("__last")).otherwise(pl.col("last_ts")).alias("last_ts"),
    )
    folded = int((chosen.get_column("__n") - 1).sum())
    return kept.drop("__n", "__rep", "__last").sort("__i"), folded


def collapse_and_cap(rows: pl.DataFrame, *, max_lines: int, annotations: int, vocab: Vocab) -> Capped:
    """Apply the three steps of docs/logs.md#collapse-and-cap to the excerpt rows.

    `rows` holds the kept and context lines in excerpt order with columns source_file,
    stream_host, line_no, ts, severity, message, l1..l5, template_id and ticket_hits;
    `annotations` lines are reserved for suppression notes. The result never holds more than
    `max_lines - annotations` rows, one fewer when it had to cut (for the truncation note).
    """
    budget = max(max_lines - annotations, 0)
    frame = rows.with_row_index("__i").with_columns(
        tier_expr(vocab), pl.lit(0, dtype=pl.Int64).alias("collapsed_count"),
        pl.lit(None, dtype=rows.schema["ts"]).alias("last_ts"),
    )
    collapsed = 0
    stream = ["source_file", "stream_host"]
    steps = [
        ((pl.col("tier") < 3) & pl.col("template_id").is_not_null(), [*stream, "template_id", "tier", "ticket_hits"]),
        ((pl.col("tier") == 3) & pl.col("message").is_not_null(), [*stream, "message", "tier", "ticket_hits"]),
    ]
    for eligible, keys in steps:
        if frame.height <= budget:
            break
        frame, folded = _fold(frame, eligible, keys, frame.height - budget)
        collapsed += folded
    cut = 0
    if frame.height > budget:
        keep = max(budget - 1, 0)  # one line goes to the truncation note
        cut = frame.height - keep
        order = frame.sort(["tier", "ticket_hits", "ts", "__i"], descending=[False, False, True, True],
                           nulls_last=False)
        dropped = order.head(cut).get_column("__i")
        frame = frame.filter(~pl.col("__i").is_in(dropped.implode()))
    return Capped(rows=frame.drop("__i"), collapsed_lines=collapsed, truncated_lines=cut)

