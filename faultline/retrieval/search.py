"""Searching the ticket and doc-chunk indexes: vector, full-text, or both fused.

Filters (``where``) are Lance SQL predicates (DataFusion dialect) applied *before* the search picks candidates,
so ``k`` hits come back whenever ``k`` rows pass. Query text is data, never syntax: the full-text side gets a
``MatchQuery`` (terms through the index's tokenizer, ORed), so quotes, ``field:`` or AND/OR/NOT are just words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from faultline.damage import damaged_index
from faultline.errors import FaultlineError
from faultline.retrieval import ann
from faultline.retrieval.index import (
    EMBED_CHARS,
    TABLE_NAMES,
    Kind,
    clean_markup,
    open_lancedb,
    truncate,
)

if TYPE_CHECKING:
    from faultline.config import Settings
    from faultline.retrieval.embed import Embedder

Mode = Literal["vector", "text", "hybrid"]
Fusion = Literal["score", "rrf"]
MODES: tuple[str, ...] = ("vector", "text", "hybrid")
RRF_K = 60  # the constant of Cormack, Clarke & Buettcher (SIGIR 2009); not tuned here
FUSION_DEPTH = 50  # candidates taken from each ranking before fusing
QUERY_FTS_CHARS = 4000  # longer queries only add rare terms and slow BM25 down


@dataclass(frozen=True)
class Hit:
    """One search result. ``score`` is higher-is-better in every mode (see ``search``)."""

    rank: int
    id: str
    title: str
    score: float
    vector_score: float | None
    text_score: float | None
    snippet: str
    created_at: datetime | None


class MissingIndexError(FaultlineError):
    """The search index of a kind is absent or empty: a source an analysis can do without."""


def _open_table(settings: Settings, kind: Kind) -> Any:
    name = TABLE_NAMES[kind]
    fix = (f"run `faultline ingest {kind} FILE...` to load {kind} into the warehouse, "
           "then `faultline index` to build the search index")
    db = open_lancedb(settings) if settings.lancedb_dir.is_dir() else None
    if db is None or name not in db.list_tables().tables:
        raise MissingIndexError(f"there is no {kind} search index in {settings.lancedb_dir}", fix=fix)
    table = db.open_table(name)
    if table.count_rows() == 0:
        raise MissingIndexError(f"the {kind} search index in {settings.lancedb_dir} is empty", fix=fix)
    return table


def text_query(text: str) -> Any:
    """The full-text query for ``text`` as plain terms: no phrase, field, boolean or operator syntax."""
    from lancedb.query import MatchQuery

    return MatchQuery(text, "text")


def query_vector(embedder: Embedder, query: str) -> Any:
    """The embedding a vector search uses for ``query``: cleaned and cut like an indexed text."""
    return embedder.embed([truncate(clean_markup(query, max_frames=3), EMBED_CHARS)])[0]


def _filter_error(table: Any, where: str) -> str | None:
    """Why Lance rejects ``where`` on its own (no query around it), or None when it accepts it."""
    try:
        table.search().where(where).limit(1).select(["id"]).to_arrow()
    except ValueError as exc:
        return str(exc)
    return None


def _run(table: Any, builder: Any, where: str | None, limit: int, columns: list[str],
         mode: str) -> list[dict[str, Any]]:
    if where:
        builder = builder.where(where, prefilter=True)
    try:
        return builder.limit(limit).select(columns).to_arrow().to_pylist()
    except ValueError as exc:
        # blame the filter only when the filter alone fails: a query can fail for reasons of its own
        rejected = _filter_error(table, where) if where else None
        if rejected is not None:
            raise FaultlineError(
                f"the search filter {where!r} was rejected: {rejected}",
                fix="write a SQL predicate over the index columns, e.g. "
                "\"status = 'Closed' AND created_at < timestamp '2012-01-01 00:00:00'\"",
            ) from exc
        raise FaultlineError(
            f"the {mode} search of the index failed: {exc}",
            fix="rebuild the search index with `faultline index`; if it persists, report it with the query text",
        ) from exc
    except (OSError, RuntimeError) as exc:  # Lance reports a missing data file as a RuntimeError
        kind = next((k for k, name in TABLE_NAMES.items() if name == table.name), table.name)
        damaged = damaged_index(exc, Path(table.uri).parent, kind)
        if damaged is None:
            raise
        raise damaged from exc


def _fuse_rrf(vec: list[dict], txt: list[dict], w: float) -> dict[str, float]:
    """Weighted reciprocal-rank fusion, scaled so that first place in both lists scores 1.0."""
    fused: dict[str, float] = {}
    for weight, hits in ((w, vec), (1.0 - w, txt)):
        for rank, hit in enumerate(hits, start=1):
            fused[hit["id"]] = fused.get(hit["id"], 0.0) + weight * (RRF_K + 1) / (RRF_K + rank)
    return fused


def _fuse_scores(vec: list[dict], txt: list[dict], w: float) -> dict[str, float]:
    """Weighted sum of min-max normalised scores over each list's candidates (absent = 0)."""
    fused: dict[str, float] = {}
    for weight, hits, key in ((w, vec, "_vscore"), (1.0 - w, txt, "_score")):
        if not hits:
            continue
        values = [float(h[key]) for h in hits]
        low, span = min(values), max(values) - min(values)
        for hit, value in zip(hits, values):
            norm = (value - low) / span if span > 0 else 1.0  # one candidate (or all tied): full
            fused[hit["id"]] = fused.get(hit["id"], 0.0) + weight * norm
    return fused


def search(
    settings: Settings,
    kind: Kind,
    query: str,
    *,
    k: int,
    mode: Mode = "hybrid",
    where: str | None = None,
    embedder: Embedder | None = None,
    fusion: Fusion = "score",
) -> list[Hit]:
    """Return the ``k`` best ``kind`` rows for ``query``, best first.

    Scores (higher is better in every mode):

    * ``vector``: cosine similarity between the query and row embeddings, in [-1, 1]
      (``1 - cosine distance``; MiniLM vectors are L2-normalised). A flat scan (exact) below
      ``settings.index_ann_min_rows`` rows; above it the ANN index picks the candidates and their
      scores are still exact cosine (``faultline.retrieval.ann``), the filter still applied first.
    * ``text``: BM25 score of Lance's native full-text index on the row text (English
      stemming and stop words; query terms ORed; the query is plain terms, never syntax). Unbounded;
      comparable within one query only.
    * ``hybrid``: both rankings (``FUSION_DEPTH`` candidates each) fused. The default
      ``fusion="score"`` is a convex combination of min-max normalised scores,
      ``w * norm(vector) + (1 - w) * norm(text)``, normalised over each mode's candidates
      (a row missing from a list gets 0 for it), so the score is in [0, 1] and 1.0 means best
      in both; ``w`` is ``settings.hybrid_vector_weight``. ``fusion="rrf"`` is weighted
      reciprocal-rank fusion, ``w/(60+rank_v) + (1-w)/(60+rank_t)`` scaled by 61 (1.0 = first
      in both). Rank fusion ignores how far ahead a mode's first hit is, so a row one mode is
      confident about loses to rows both modes rank mediocre; on the ZooKeeper duplicate
      benchmark it scored below either single mode, hence the score default.
      ``vector_score`` / ``text_score`` hold the row's per-mode scores when it was among that
      mode's candidates, else None.

    ``where`` is a SQL predicate applied as a prefilter to every sub-search. Columns: ``id``,
    ``title``, ``text``; tickets also have ``status``, ``resolution``, ``components``
    (list), ``created_at`` and ``resolved_at`` (UTC timestamps); doc chunks have ``doc_id``.
    Timestamp literals need the ``timestamp`` keyword; a literal without an offset is UTC:
    ``created_at < timestamp '2012-01-01 00:00:00'`` (fractions and ``+01:00`` offsets are
    accepted); a bare string such as ``created_at < '2012-01-01'`` is rejected by Lance.
    Strings use single quotes: ``status = 'Closed' AND id != 'ZOOKEEPER-1'``.

    Raises ``MissingIndexError`` when the index is missing or empty, ``FaultlineError`` when the filter
    is invalid (only then is the filter named) or the search itself fails.
    """
    if mode not in MODES:
        raise FaultlineError(f"unknown search mode {mode!r}", fix="use vector, text or hybrid")
    if kind not in TABLE_NAMES:
        raise FaultlineError(f"unknown index {kind!r}", fix="use tickets or docs")
    if fusion not in ("score", "rrf"):
        raise FaultlineError(f"unknown fusion {fusion!r}", fix="use score or rrf")
    if k < 1:
        raise FaultlineError(f"k must be at least 1, got {k}", fix="pass --k 1 or more")
    table = _open_table(settings, kind)
    columns = ["id", "title", "snippet"] + (["created_at"] if kind == "tickets" else [])
    depth = k if mode != "hybrid" else max(FUSION_DEPTH, k)

    vec: list[dict[str, Any]] = []
    txt: list[dict[str, Any]] = []
    if mode in ("vector", "hybrid"):
        if embedder is None:
            from faultline.retrieval.embed import Embedder

            embedder = Embedder(settings)
        builder = table.search(query_vector(embedder, query), query_type="vector",
                               vector_column_name=ann.VECTOR_COLUMN).distance_type("cosine")
        builder = ann.tune(builder, settings)
        vec = _run(table, builder, where, depth, columns + ["_distance"], "vector")
        for hit in vec:
            hit["_vscore"] = 1.0 - float(hit["_distance"])
    if mode in ("text", "hybrid"):
        terms = truncate(clean_markup(query), QUERY_FTS_CHARS)
        if terms:
            builder = table.search(text_query(terms), query_type="fts")
            txt = _run(table, builder, where, depth, columns + ["_score"], "full-text")

    rows = {h["id"]: h for h in txt}
    rows.update({h["id"]: {**rows.get(h["id"], {}), **h} for h in vec})
    if mode == "vector":
        fused = {h["id"]: h["_vscore"] for h in vec}
    elif mode == "text":
        fused = {h["id"]: float(h["_score"]) for h in txt}
    else:
        fuse = _fuse_rrf if fusion == "rrf" else _fuse_scores
        fused = fuse(vec, txt, settings.hybrid_vector_weight)
    order = sorted(fused, key=lambda i: (-fused[i], i))[:k]
    hits: list[Hit] = []
    for rank, row_id in enumerate(order, start=1):
        row = rows[row_id]
        hits.append(Hit(
            rank=rank, id=row_id, title=row["title"] or "", score=float(fused[row_id]),
            vector_score=row.get("_vscore"),
            text_score=float(row["_score"]) if row.get("_score") is not None else None,
            snippet=row["snippet"] or "", created_at=row.get("created_at"),
        ))
    return hits
