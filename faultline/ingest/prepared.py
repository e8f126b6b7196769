"""The shape every ingest kind hands to the common pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import duckdb
import pyarrow as pa

from faultline.ingest.reading import Reject

Writer = Callable[[duckdb.DuckDBPyConnection, pa.Table, str], dict[str, int]]


@dataclass
class Prepared:
    """Candidate rows for one file, the records already rejected, and how to write the rest.

    ``records_in`` counts every record read (candidates + rejects): the pipeline checks that
    accepted + quarantined equals it.
    """

    table: str
    records_in: int
    candidates: pa.Table
    rejects: list[Reject]
    record_no_column: str
    raw_column: str
    writer: Writer
    drop_columns: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
