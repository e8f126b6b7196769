"""The approximate (ANN) vector index of a Lance table: when it exists, how it is built, how it is searched.

Below ``settings.index_ann_min_rows`` rows (or with the setting at 0) a table has no vector index and a
vector search is a flat scan: the exact cosine distance to every row that passes the filter. From that
size on, ``sync_vector_index`` (called by every ``sync_index``) keeps an IVF_HNSW_SQ index on ``vector``
(IVF partitions, each an HNSW graph over 8-bit scalar-quantised vectors; cosine):

* built when the table reaches the threshold, trained on all its rows, with LanceDB's partition count
  for that many rows;
* refreshed on every sync that changed rows (``Table.optimize``, called by ``sync_index``, adds the new
  and rewritten rows to the trained partitions; rows not yet added are flat-scanned and merged);
* trained afresh once the table has twice the rows it was trained on (the index name records them);
* dropped when the table falls below the threshold again.

``tune`` sets the search side: ``index_ann_nprobes`` partitions always probed, more (up to all) when
a narrow prefilter leaves fewer than the requested rows in them, so a filtered search still returns
``k`` hits whenever ``k`` rows pass the filter; and ``index_ann_refine_factor`` times the requested
rows re-ranked by exact cosine distance, so scores stay exact. Neither changes a flat scan.

IVF_HNSW_SQ over IVF_PQ: on 100k MiniLM ticket vectors with replica structure like
``bench/retrieval_scale.py``'s (200 queries, created_at prefilter, 2 busy cores) IVF_PQ (316
partitions, 48 or 24 sub-vectors) took 70-194 s to build and 23-30 ms a query for recall@10 0.999
(nprobes 20, refine x10; 0.51-0.59 unrefined); IVF_HNSW_SQ took 54 s and 10-13 ms for recall@10 1.000
(refine x5; 0.96 unrefined). The flat scan took 300-340 ms.
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
    """Build, retrain or drop ``table``'s ANN index as the module docstring says; returns its type.

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
