"""The shape every ingest kind hands to the common pipeline."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from faultline.ingest.reading import Reject

# (connection, accepted rows, source file, first batch of the file?) -> counts
Writer = Callable[[duckdb.DuckDBPyConnection, pa.Table, str, bool], dict[str, int]]


@dataclass
class Prepared:
    """Candidate rows for one file, the records already rejected, and how to write the rest.

    ``records_in`` counts every record read (candidates + rejects): the pipeline checks that
    accepted + quarantined equals it. Candidates come either whole (``candidates``) or, for large
    files, as ``batches`` that grow ``records_in`` and ``messages`` while they are consumed.
    """

    table: str
    records_in: int
    candidates: pa.Table | None
    rejects: list[Reject]
    record_no_column: str
    raw_column: str
    writer: Writer
    drop_columns: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    batches: Iterator[pa.Table] | None = None

    def candidate_batches(self) -> Iterator[pa.Table]:
        """Every batch of candidate rows (one batch when given whole)."""
        if self.batches is not None:
            yield from self.batches
        elif self.candidates is not None:
            yield self.candidates
