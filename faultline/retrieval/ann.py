"""The approximate (ANN) vector index of a Lance table: when it exists, how it is built, how it is searched.

Below ``settings.index_ann_min_rows`` rows (or with the setting at 0) a table has none and a vector search is an
exact flat scan; from that size on ``sync_vector_index`` keeps an IVF_HNSW_SQ index (cosine) and ``tune`` sets
the search side (partitions probed, re-ranking). Its life cycle, and why IVF_HNSW_SQ: docs/dependencies.md#lancedb.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faultline.config import Settings

VECTOR_COLUMN = "vector"
INDEX_PREFIX = "vector_ann_trained_on_"  # + the row count it was trained on
INDEX_TYPE = "IVF_HNSW_SQ"
FLAT = "flat"
RETRAIN_GROWTH = 2.0


def _vector_indexes(table: Any) -> list[Any]:
    return [ix for ix in table.list_indices() if list(ix.columns) == [VECTOR_COLUMN]]


def trained_rows(name: str) -> int:
    """Rows an index named by ``sync_vector_index`` was trained on; 0 for any other name."""
    tail = name[len(INDEX_PREFIX):] if name.startswith(INDEX_PREFIX) else ""
    return int(tail) if tail.isdigit() else 0


def sync_vector_index(table: Any, settings: Settings) -> str:
    """Build, retrain or drop ``table``'s ANN index as docs/dependencies.md#lancedb says; returns its type.

    Call after the rows were written and ``optimize`` ran (that refreshes an existing index).
    """
    from lancedb.index import IvfHnswSq

    rows = table.count_rows()
    wanted = settings.index_ann_min_rows > 0 and rows >= settings.index_ann_min_rows
    current = _vector_indexes(table)
    if not wanted:
        for ix in current:
            table.drop_index(ix.name)
        return FLAT
    if current and rows < RETRAIN_GROWTH * max(trained_rows(ix.name) for ix in current):
        return INDEX_TYPE
    for ix in current:
        table.drop_index(ix.name)
    table.create_index(VECTOR_COLUMN, config=IvfHnswSq(distance_type="cosine"), name=f"{INDEX_PREFIX}{rows}")
    return INDEX_TYPE


def tune(builder: Any, settings: Settings) -> Any:
    """A vector query ``builder`` with the ANN search settings (no effect on a flat scan)."""
    return (builder.minimum_nprobes(settings.index_ann_nprobes).maximum_nprobes(0)
            .refine_factor(settings.index_ann_refine_factor))
