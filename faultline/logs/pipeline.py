"""The LogAgent's deterministic part: log lines in, one capped `LogExcerpt` out.

`build_excerpt` runs filter (five levels) -> suppression -> context -> templates (DRAIN3 ids, mined over all the
incident's lines in a worker thread) -> collapse/cap, each stage timed into `LogExcerpt.timings`. Why templates
are mined over every line, and what the timings mean: docs/logs.md#stages.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.logs.context import expand_context
from faultline.logs.excerpt import ExcerptLine, LogExcerpt, SuppressedComponent, collapse_and_cap
from faultline.logs.filter import INPUT_COLUMNS, LEVEL_COLUMNS, apply_levels, kept_expr, ticket_hit_counts, ticket_terms
from faultline.logs.suppress import SUPPRESSED_COLUMN, suppress_noise
from faultline.logs.templates import MinedTemplates, MinerConfig, default_miner_config, mine_templates
from faultline.logs.vocab import LEVELS, Vocab, default_vocab

LINE_COLUMNS: tuple[str, ...] = (*INPUT_COLUMNS, "format")

_LINE_SELECT = """
SELECT source_file, CAST(line_no AS BIGINT) AS line_no, ts, host, severity, severity_raw, component, pid,
       message, raw, format
FROM log_lines
"""
_LINES_SQL = _LINE_SELECT + "WHERE incident_id = ? ORDER BY source_file, line_no"


def template_format(lines: pl.DataFrame) -> str | None:
    """The log format whose extra masks apply: the only parsed format present, else None."""
    if "format" not in lines.columns:
        return None
    formats = [f for f in lines.get_column("format").unique().to_list() if f and f != "raw"]
    return formats[0] if len(formats) == 1 else None


def mine_incident_templates(lines: pl.DataFrame, config: MinerConfig | None = None) -> MinedTemplates:
    """DRAIN3 templates over all of `lines` (their message, else the raw line), in row order."""
    messages = lines.select(pl.coalesce("message", "raw")).to_series()
    return mine_templates(messages, config or default_miner_config(), fmt=template_format(lines))


def _top_templates(levelled: pl.DataFrame, mined: MinedTemplates,
                   components: Sequence[SuppressedComponent]) -> tuple[SuppressedComponent, ...]:
    if not components:
        return ()
    top = (
        levelled.filter(pl.col(SUPPRESSED_COLUMN) & kept_expr() & pl.col("template_id").is_not_null())
        .group_by("component", "template_id").len()
        .sort(["len", "template_id"], descending=[True, False])
        .unique("component", keep="first")
        .join(mined.templates.select("template_id", "template"), on="template_id", how="left")
    )
    found = {r["component"]: r for r in top.iter_rows(named=True)}
    return tuple(
        c.model_copy(update={"top_template_id": found[c.component]["template_id"],
                             "top_template": found[c.component]["template"]})
        if c.component in found else c
        for c in components
    )


def _line_records(rows: pl.DataFrame, suppressed: Sequence[SuppressedComponent],
                  truncated_lines: int) -> list[ExcerptLine]:
    keyed: list[tuple[tuple[str, int, int], ExcerptLine]] = []
    for row in rows.iter_rows(named=True):
        levels = tuple(level for level, col in zip(LEVELS, LEVEL_COLUMNS, strict=True) if row[col])
        keyed.append(((row["source_file"], row["line_no"], 1), ExcerptLine(
            source_file=row["source_file"], line_no=row["line_no"], ts=row["ts"], host=row["host"],
            severity=row["severity"], component=row["component"], text=row["raw"] or row["message"] or "",
            levels=levels, is_context=row["is_context"], template_id=row["template_id"],
            collapsed_count=row["collapsed_count"], last_ts=row["last_ts"],
        )))
    for comp in suppressed:  # each note sits where the component's first diagnostic line was
        keyed.append(((comp.source_file, comp.line_no, 0), ExcerptLine(
            source_file=comp.source_file, line_no=comp.line_no, ts=comp.first_ts, component=comp.component,
            text=comp.describe(), annotation="suppressed", template_id=comp.top_template_id,
            collapsed_count=comp.lines, last_ts=comp.last_ts,
        )))
    keyed.sort(key=lambda item: item[0])
    records = [line for _key, line in keyed]
    if truncated_lines:
        note = (f"truncated: {truncated_lines} lower-priority lines cut to respect the line cap "
                "(context first, then ticket-keyword-only lines, then state transitions)")
        records.insert(0, ExcerptLine(source_file="", line_no=0, text=note, annotation="truncated",
                                      collapsed_count=truncated_lines))
    return records


def build_excerpt(lines: pl.DataFrame, *, settings: Settings, ticket_text: str = "",
                  similar_texts: Sequence[str] = (), incident_id: str, round: int = 0,
                  miner_config: MinerConfig | None = None, mined: MinedTemplates | None = None,
                  vocab: Vocab | None = None) -> LogExcerpt:
    """Filter, suppress, expand, template and cap `lines` (log_lines columns) into an excerpt.

    `mined` may hold templates already mined over exactly these lines in this order (the CLI
    mines once, stores the templates and passes them in); otherwise they are mined here with
    `miner_config` (default: `default_miner_config()`). Storing templates and the excerpt is
    the caller's job (`write_templates`, `store.write_excerpt`).
    """
    vocab = vocab or default_vocab()
    config = miner_config or default_miner_config()
    if mined is not None and mined.template_ids.len() != lines.height:
        raise ValueError(f"mined templates cover {mined.template_ids.len()} lines, not {lines.height}")
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="faultline-templates") if mined is None else None
    try:
        future = pool.submit(_timed, mine_incident_templates, lines, config) if pool else None
        return _stages(lines, settings=settings, ticket_text=ticket_text, similar_texts=similar_texts,
                       incident_id=incident_id, round=round, config=config, vocab=vocab, mined=mined,
                       pending=future.result if future else None)
    finally:
        if pool:
            pool.shutdown(wait=True)


def _timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    began = time.perf_counter()
    return fn(*args), time.perf_counter() - began


def _ordered(lines: pl.DataFrame) -> bool:
    """True when `lines` already runs by source_file, then line_no (the usual case)."""
    file, prev_file = pl.col("source_file"), pl.col("source_file").shift(1)
    step = (file > prev_file) | ((file == prev_file) & (pl.col("line_no") > pl.col("line_no").shift(1)))
    return bool(lines.select(step.fill_null(True).all()).item())


def _stages(lines: pl.DataFrame, *, settings: Settings, ticket_text: str, similar_texts: Sequence[str],
            incident_id: str, round: int, config: MinerConfig, vocab: Vocab, mined: MinedTemplates | None,
            pending: Callable[[], tuple[MinedTemplates, float]] | None) -> LogExcerpt:
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[stage] = round_seconds(now - clock)
        clock = now

    terms = ticket_terms(ticket_text, list(similar_texts), vocab)
    frame = lines.with_row_index("__row")
    if not _ordered(frame):
        frame = frame.sort(["source_file", "line_no"], maintain_order=True)
    levelled = apply_levels(frame, vocab, terms)
    counts = levelled.select(*(pl.col(c).sum().alias(level) for level, c in zip(LEVELS, LEVEL_COLUMNS, strict=True)),
                             kept_expr().sum().alias("diagnostic")).row(0, named=True)
    lap("filter")
    suppression = suppress_noise(levelled, noise_share=settings.noise_share, vocab=vocab, ticket_terms=terms,
                                 min_lines=settings.noise_share * settings.excerpt_max_lines)
    lap("suppression")
    hits = suppression.lines.with_columns((kept_expr() & ~pl.col(SUPPRESSED_COLUMN)).alias("hit"))
    expanded = expand_context(hits, hit="hit", lines_around=settings.context_lines, exclude=SUPPRESSED_COLUMN)
    lap("context")
    if pending is not None:
        mined, mining_seconds = pending()
        timings["templates_mining"] = round_seconds(mining_seconds)
    assert mined is not None
    ids = mined.template_ids.cast(pl.Int32)
    expanded = expanded.with_columns(ids.gather(expanded.get_column("__row")).alias("template_id"))
    noisy = suppression.lines.filter(pl.col(SUPPRESSED_COLUMN))
    noisy = noisy.with_columns(ids.gather(noisy.get_column("__row")).alias("template_id"))
    noise = _top_templates(noisy, mined, suppression.components)
    lap("templates")
    over_cap = expanded.height + len(noise) > settings.excerpt_max_lines
    # ticket hits only order lines for folding and cutting, which happen over the cap only
    hits_per_line = ticket_hit_counts(expanded, terms if over_cap else [])
    expanded = expanded.with_columns(hits_per_line)
    capped = collapse_and_cap(expanded, max_lines=settings.excerpt_max_lines, annotations=len(noise), vocab=vocab)
    records = _line_records(capped.rows, noise, capped.truncated_lines)[: settings.excerpt_max_lines]
    lap("collapse_cap")
    level_counts = {**{k: int(v or 0) for k, v in counts.items()},
                    "context": int(expanded.get_column("is_context").sum())}
    return LogExcerpt(
        incident_id=incident_id, round=round, lines=tuple(records), level_counts=level_counts,
        suppressed=noise, collapsed_lines=capped.collapsed_lines, truncated=capped.truncated_lines > 0,
        truncated_lines=capped.truncated_lines, input_lines=lines.height, max_lines=settings.excerpt_max_lines,
        vocab_version=vocab.label, miner_config=_config_dict(config), ticket_terms=tuple(terms),
        timings=timings,
    )


def round_seconds(seconds: float) -> float:
    """Stage timings are kept to the microsecond."""
    return float(f"{seconds:.6f}")


def _config_dict(config: MinerConfig) -> dict[str, Any]:
    import json

    return json.loads(config.as_json())


def _expand(paths: Sequence[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.is_file()))
        elif path.exists():
            found.append(path)
        else:
            raise FaultlineError(f"log file {path} does not exist", fix="check the path given to --log")
    return found


def lines_from_files(paths: Sequence[Path], settings: Settings, log_format: str | None = None) -> pl.DataFrame:
    """Read and parse log files (folders: every file below them) without touching the warehouse.

    Returns the log_lines columns plus `format`, ordered by file then line; `source_file` is the
    resolved path, as `faultline ingest logs` stores it. Binary files raise FaultlineError.
    """
    from faultline.ingest.log_ingest import default_year, resolve_log_format
    from faultline.ingest.logformats import parse_lines
    from faultline.ingest.reading import binary_reason, read_file, text_lines

    fmt: Any = resolve_log_format(log_format)
    frames = []
    for path in _expand(paths):
        raw = read_file(path)
        why = binary_reason(raw.data)
        if why:
            raise FaultlineError(f"{path} is not a text log: it {why}", fix="pass text logs (gzip is read directly)")
        parsed = parse_lines(text_lines(raw.data).select("line_no", "raw"), fmt=fmt,
                             default_year=default_year(path, settings))
        frames.append(parsed.with_columns(pl.lit(str(path.resolve())).alias("source_file")))
    if not frames:
        raise FaultlineError("no log files found", fix="pass log files or folders with --log")
    return pl.concat(frames, how="vertical_relaxed").select(*LINE_COLUMNS)


def lines_for_incident(conn: duckdb.DuckDBPyConnection, incident_id: str) -> pl.DataFrame:
    """The incident's rows of log_lines (log_lines columns plus `format`), by file and line."""
    return conn.sql(_LINES_SQL, params=[incident_id]).pl()
