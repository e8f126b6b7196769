"""Context expansion (ASTRA §4.1): ±N lines around every diagnostic line, from its own stream.

A stream is one log file, split by host when it interleaves several machines (never for formats whose host names
a card of one device); suppressed lines are taken out before windows are counted, and overlapping windows merge.
Details: docs/logs.md#context.
"""

from __future__ import annotations

import polars as pl

# formats whose `host` is a node inside one device, not a separate machine
NODE_HOST_FORMATS: tuple[str, ...] = ("cisco_iosxr",)
STREAM_HOST = "stream_host"


def split_files(frame: pl.DataFrame) -> list[str]:
    """The files that hold more than one stream (several hosts, not a node-host format)."""
    aggs = [pl.col("host").drop_nulls().n_unique().alias("hosts")]
    if "format" in frame.columns:
        aggs.append(pl.col("format").is_in(list(NODE_HOST_FORMATS)).any().alias("nodes"))
    per_file = frame.group_by("source_file").agg(aggs)
    mixed = pl.col("hosts") > 1
    if "format" in frame.columns:
        mixed = mixed & ~pl.col("nodes")
    return per_file.filter(mixed).get_column("source_file").to_list()


def stream_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """stream_host ("" for one-stream files) and __sid, an integer id per stream, for `frame`
    ordered by source_file, line_no. Integer ids keep the per-stream windows cheap."""
    split = split_files(frame)
    file_id = pl.col("source_file").cast(pl.Categorical).to_physical().cast(pl.UInt64)
    if not split:
        return frame.with_columns(pl.lit("").alias(STREAM_HOST), file_id.alias("__sid"))
    host = pl.col("host").forward_fill().over("source_file").fill_null("")
    stream_host = pl.when(pl.col("source_file").is_in(split)).then(host).otherwise(pl.lit(""))
    frame = frame.with_columns(stream_host.alias(STREAM_HOST))
    host_id = pl.col(STREAM_HOST).cast(pl.Categorical).to_physical().cast(pl.UInt64)
    return frame.with_columns((file_id * (1 << 32) + host_id).alias("__sid"))


def expand_context(lines: pl.DataFrame, *, hit: str, lines_around: int,
                   exclude: str | None = None) -> pl.DataFrame:
    """The hit lines plus up to `lines_around` lines before and after each, per stream.

    `lines` is every line of the incident ordered by source_file, line_no; `hit` names its
    boolean column of diagnostic lines; rows where the boolean column `exclude` is true are
    dropped before windows are counted. Returns the selected rows, in order, with columns
    stream_host, is_context (true for lines selected only as context) and segment (the line_no
    of the first line of its merged window; with source_file and stream_host it names the window).
    """
    frame = lines if exclude is None else lines.filter(~pl.col(exclude))
    # windows are worked out on a narrow copy (no message text to move around), then the
    # chosen rows are taken from the full frame by position
    keys = ["source_file", "line_no", "host", hit, *(["format"] if "format" in frame.columns else [])]
    narrow = stream_columns(frame.select(keys).with_row_index("__row"))
    pos = pl.col("__pos")
    narrow = narrow.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over("__sid").alias("__pos"))
    hit_pos = pl.when(pl.col(hit)).then(pos)
    before = pos - hit_pos.forward_fill().over("__sid")
    after = hit_pos.backward_fill().over("__sid") - pos
    near = (before <= lines_around).fill_null(False) | (after <= lines_around).fill_null(False)
    chosen = narrow.filter(near)
    starts = (pos - pos.shift(1).over("__sid")).fill_null(2) != 1
    chosen = chosen.with_columns(starts.alias("__start")).select(
        "__row", STREAM_HOST, (~pl.col(hit)).alias("is_context"),
        pl.when("__start").then(pl.col("line_no")).forward_fill().over("__sid").cast(pl.Int64).alias("segment"),
    )
    picked = frame[chosen.get_column("__row")]
    return picked.hstack(chosen.drop("__row").get_columns())
