"""DRAIN3 templates: mask in Polars, mine each distinct masked message once, map lines back.

`mine_templates` masks with `vocab/masks.yml`, feeds DRAIN3 every distinct masked message once in
first-occurrence order and joins each line to its cluster's final template; one `MinerConfig`, passed in, serves
every log source. Why this is exact: docs/logs.md#drain3-templates.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

import duckdb
import polars as pl
from drain3.drain import Drain, LogCluster
from drain3.template_miner_config import TemplateMinerConfig

from faultline.errors import FaultlineError
from faultline.ingest.logseverity import SEVERITY_NAMES
from faultline.logs.masking import MaskSet, load_masks, mask_expr

__all__ = ["MinedTemplates", "MinerConfig", "RoutingDrain", "adhoc_incident_id", "build_miner",
           "default_miner_config", "mine_templates", "template_stats", "write_templates"]


@dataclass(frozen=True)
class MinerConfig:
    """DRAIN3 settings and the mask file; stored as JSON with every template it mines.

    sim_th, depth, max_children, max_clusters, parametrize_numeric_tokens, extra_delimiters:
    drain3's settings of the same names (max_clusters is an LRU cap: on structureless input the
    cost per message grows with the live clusters, so it also bounds time). wildcard_routing:
    tokens holding a mask or a dotted name take the prefix tree's wildcard branch, as drain3
    does for tokens with digits (see `RoutingDrain`). masks_file: the mask rules (None: the
    bundled `vocab/masks.yml`). Defaults: one setting for every system, see bench/log_templates.py.
    """

    sim_th: float = 0.7
    depth: int = 5
    max_children: int = 100
    max_clusters: int | None = 2000
    parametrize_numeric_tokens: bool = True
    wildcard_routing: bool = True
    extra_delimiters: tuple[str, ...] = ()
    masks_file: str | None = None

    def mask_set(self) -> MaskSet:
        """The mask rules this configuration names."""
        return load_masks(Path(self.masks_file) if self.masks_file else None)

    def as_json(self) -> str:
        """Stable JSON of every setting plus the mask set's name@version and content hash."""
        masks = self.mask_set()
        data = asdict(self) | {"extra_delimiters": list(self.extra_delimiters),
                               "masks": masks.label, "masks_sha256": masks.sha256}
        return json.dumps(data, sort_keys=True)


def default_miner_config() -> MinerConfig:
    """The one configuration used for every system (bench/log_templates.py measures it)."""
    return MinerConfig()


@dataclass(frozen=True)
class MinedTemplates:
    """Template ids aligned with the input messages, and one row per template.

    `template_ids`: Int32, one per input message, null for null or blank messages.
    `templates`: template_id (1-based, dense, numbered by first occurrence), template (final
    text), line_count (input lines), distinct_lines (distinct masked messages).
    `masked`: the masked message per input line. `mined_messages`: messages fed to DRAIN3
    (= distinct masked messages). `clusters`: DRAIN3 clusters behind the templates.
    """

    template_ids: pl.Series
    templates: pl.DataFrame
    masked: pl.Series
    mined_messages: int
    clusters: int


_DOTTED = re.compile(r"[A-Za-z0-9_]\.[A-Za-z_]")


@lru_cache(maxsize=65536)
def _routes_as_value(token: str) -> bool:
    """Digits, a mask, or a dotted name (host, bundle id, class, file): likely a variable."""
    return any(ch.isdigit() or ch == "<" for ch in token) or _DOTTED.search(token) is not None


class RoutingDrain(Drain):
    """drain3's Drain with wider wildcard routing in its prefix tree.

    drain3 sends tokens with digits down the wildcard branch of the tree. After masking no
    digits are left, so a token such as `q1.cnzz.com:<NUM>` or `com.apple.xpc.launchd:` in a
    leading position would open a branch of its own and split its template. Here tokens with a
    mask or a dotted name route as wildcards too; similarity and templates are drain3's own.
    """

    @staticmethod
    def has_numbers(s: Iterable[str]) -> bool:
        return _routes_as_value(s if isinstance(s, str) else "".join(s))


def drain3_config(config: MinerConfig) -> TemplateMinerConfig:
    """drain3's configuration object for `config`, built in code: no drain3.ini is read."""
    cfg = TemplateMinerConfig()
    cfg.drain_sim_th = config.sim_th
    cfg.drain_depth = config.depth
    cfg.drain_max_children = config.max_children
    cfg.drain_max_clusters = config.max_clusters
    cfg.drain_extra_delimiters = list(config.extra_delimiters)
    cfg.parametrize_numeric_tokens = config.parametrize_numeric_tokens
    cfg.masking_instructions = []  # masking is done beforehand, in Polars
    return cfg


def build_miner(config: MinerConfig) -> Drain:
    """A fresh DRAIN3 miner for `config` (its `add_log_message` is called once per message)."""
    # drain3 warns "config file not found: drain3.ini" whenever it falls back to an ini file
    logging.getLogger("drain3").setLevel(logging.ERROR)
    cfg = drain3_config(config)
    kind = RoutingDrain if config.wildcard_routing else Drain
    return kind(
        depth=cfg.drain_depth, sim_th=cfg.drain_sim_th, max_children=cfg.drain_max_children,
        max_clusters=cfg.drain_max_clusters, extra_delimiters=cfg.drain_extra_delimiters,
        param_str=f"{cfg.mask_prefix}*{cfg.mask_suffix}",
        parametrize_numeric_tokens=cfg.parametrize_numeric_tokens,
    )


def _mine(miner: Drain, messages: Sequence[str]) -> tuple[list[int], dict[int, LogCluster]]:
    """Feed each message once; the cluster id per message and every cluster touched, by id."""
    cluster_of: list[int] = []
    clusters: dict[int, LogCluster] = {}
    for text in messages:
        cluster, _change = miner.add_log_message(text)
        cluster_of.append(cluster.cluster_id)
        # our own reference: with max_clusters drain3 may evict a cluster (LRU) that lines
        # already point at; the evicted object still holds its last, final template
        clusters[cluster.cluster_id] = cluster
    return cluster_of, clusters


def mine_templates(messages: pl.Series, config: MinerConfig, *, fmt: str | None = None) -> MinedTemplates:
    """Mine templates from `messages` of log format `fmt` (None: common masks only)."""
    rules = config.mask_set().rules_for(fmt)
    frame = pl.DataFrame({"message": messages.cast(pl.Utf8)})
    distinct_raw = (
        frame.lazy()
        .filter(pl.col("message").str.strip_chars().str.len_bytes() > 0)
        .unique("message", maintain_order=True)
        .with_columns(mask_expr(pl.col("message"), rules).str.strip_chars().alias("masked"))
        .collect()
    )
    distinct_masked = distinct_raw.get_column("masked").unique(maintain_order=True)
    cluster_of, clusters = _mine(build_miner(config), distinct_masked.to_list())
    final = {cid: cluster.get_template() for cid, cluster in clusters.items()}
    per_masked = pl.DataFrame({"masked": distinct_masked, "template": [final[c] for c in cluster_of]},
                              schema={"masked": pl.Utf8, "template": pl.Utf8})
    lines = frame.join(distinct_raw, on="message", how="left", maintain_order="left").join(
        per_masked, on="masked", how="left", maintain_order="left")
    order = (
        lines.filter(pl.col("template").is_not_null())
        .group_by("template", maintain_order=True)
        .agg(pl.len().cast(pl.Int64).alias("line_count"),
             pl.col("masked").n_unique().cast(pl.Int64).alias("distinct_lines"))
        .with_row_index("template_id", offset=1)
        .with_columns(pl.col("template_id").cast(pl.Int32))
    )
    ids = lines.join(order.select("template", "template_id"), on="template", how="left", maintain_order="left")
    return MinedTemplates(
        template_ids=ids.get_column("template_id"),
        templates=order.select("template_id", "template", "line_count", "distinct_lines"),
        masked=ids.get_column("masked"),
        mined_messages=len(cluster_of),
        clusters=len(clusters),
    )


_SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITY_NAMES)}

INSERT_TEMPLATES_SQL = """
INSERT INTO log_templates (incident_id, template_id, template, line_count, distinct_lines,
                           worst_severity, first_ts, last_ts, miner_config, created_at)
SELECT ?, template_id, template, line_count, distinct_lines, worst_severity, first_ts, last_ts,
       CAST(? AS JSON), ?
FROM staged_templates
"""
CLEAR_LINE_TEMPLATES_SQL = "UPDATE log_lines SET template_id = NULL WHERE incident_id = ? AND template_id IS NOT NULL"
SET_LINE_TEMPLATES_SQL = """
UPDATE log_lines SET template_id = s.template_id
FROM staged_line_templates s
WHERE log_lines.incident_id = ? AND log_lines.source_file = s.source_file AND log_lines.line_no = s.line_no
"""


def template_stats(lines: pl.DataFrame, mined: MinedTemplates) -> pl.DataFrame:
    """`mined.templates` plus worst_severity, first_ts and last_ts from `lines` (same row order)."""
    cols = [c for c in ("severity", "ts") if c in lines.columns]
    frame = lines.select(cols).with_columns(mined.template_ids.alias("template_id"))
    rank = (pl.col("severity").replace_strict(_SEVERITY_RANK, default=None, return_dtype=pl.Int8)
            if "severity" in cols else pl.lit(None, dtype=pl.Int8))
    ts = pl.col("ts") if "ts" in cols else pl.lit(None, dtype=pl.Datetime("us"))
    stats = frame.filter(pl.col("template_id").is_not_null()).group_by("template_id").agg(
        rank.min().alias("rank"), ts.min().alias("first_ts"), ts.max().alias("last_ts"))
    names = dict(enumerate(SEVERITY_NAMES))
    return mined.templates.join(stats, on="template_id", how="left").with_columns(
        pl.col("rank").replace_strict(names, default=None, return_dtype=pl.Utf8).alias("worst_severity")
    ).drop("rank")


def write_templates(conn: duckdb.DuckDBPyConnection, incident_id: str, lines: pl.DataFrame,
                    mined: MinedTemplates, config: MinerConfig) -> int:
    """Replace the incident's `log_templates` rows and point its warehouse lines at them.

    `lines` is row-aligned with the mined messages; severity/ts feed worst_severity, first_ts and
    last_ts. When it has source_file and line_no, `log_lines.template_id` is set for the lines
    of `incident_id` stored in the warehouse (others are skipped). One transaction; returns the
    number of templates written.
    """
    if lines.height != len(mined.template_ids):
        raise ValueError(f"lines has {lines.height} rows but {len(mined.template_ids)} were mined")
    templates = template_stats(lines, mined)
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute("DELETE FROM log_templates WHERE incident_id = ?", [incident_id])
        conn.register("staged_templates", templates.to_arrow())
        conn.execute(INSERT_TEMPLATES_SQL, [incident_id, config.as_json(), datetime.now(timezone.utc)])
        conn.execute(CLEAR_LINE_TEMPLATES_SQL, [incident_id])
        if {"source_file", "line_no"} <= set(lines.columns):
            staged = (lines.select("source_file", "line_no").with_columns(mined.template_ids.alias("template_id"))
                      .filter(pl.col("template_id").is_not_null()).unique(["source_file", "line_no"], keep="first"))
            conn.register("staged_line_templates", staged.to_arrow())
            conn.execute(SET_LINE_TEMPLATES_SQL, [incident_id])
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise
    finally:
        for view in ("staged_templates", "staged_line_templates"):
            conn.unregister(view)
    return templates.height


def adhoc_incident_id(paths: Iterable[Path]) -> str:
    """`adhoc-<12 hex>` from the sorted resolved file paths (folders: every file below them)
    and the SHA-256 of each file's contents; the same files with the same bytes give the same id."""
    files: set[Path] = set()
    for given in paths:
        path = Path(given).resolve()
        if path.is_dir():
            files.update(p for p in path.rglob("*") if p.is_file())
        else:
            files.add(path)
    digest = hashlib.sha256()
    for path in sorted(files):
        try:
            with path.open("rb") as handle:
                content = hashlib.file_digest(handle, "sha256").hexdigest()
        except OSError as exc:
            raise FaultlineError(f"cannot read {path}: {exc.strerror}", fix="check the path") from exc
        digest.update(f"{path}\0{content}\n".encode())
    return f"adhoc-{digest.hexdigest()[:12]}"
