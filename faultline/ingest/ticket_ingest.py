"""Preparing a ticket file for the ingest pipeline."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from faultline.config import Settings
from faultline.ingest import store
from faultline.ingest.prepared import Prepared
from faultline.ingest.reading import RawFile
from faultline.ingest.ticket_mapping import FieldMapping, detect_mapping, load_mapping
from faultline.ingest.ticket_sources import read_ticket_records
from faultline.ingest.tickets import normalise_records


def prepare_tickets(raw: RawFile, source_file: str, settings: Settings, mapping_file: Path | None) -> Prepared:
    """Read, map and normalise a ticket export; the mapping is detected unless given."""
    records = read_ticket_records(raw, settings.max_record_bytes)
    parsed = [r.data for r in records if r.data is not None]
    mapping: FieldMapping | None = None
    if mapping_file is not None:
        mapping = load_mapping(mapping_file)
    elif parsed:
        mapping = detect_mapping(parsed[:200])
    name = mapping.name if mapping else "none"
    if mapping is None:
        rows, rejects = [], [r.reject for r in records if r.reject is not None]
    else:
        result = normalise_records(records, mapping)
        rows, rejects = result.rows, result.rejects
    table = store.ticket_table(rows, source=name, source_file=source_file)
    table = table.append_column("_raw", pa.array([r["_raw"] for r in rows], pa.string()))

    def write(conn: duckdb.DuckDBPyConnection, accepted: pa.Table, _source_file: str, _first: bool) -> dict[str, int]:
        return store.upsert_tickets(conn, accepted)

    messages = [f"mapping: {name}" + (f" ({mapping.description})" if mapping and mapping.description else "")]
    return Prepared(
        table="tickets", records_in=len(records), candidates=table, rejects=rejects,
        record_no_column="source_record", raw_column="_raw", writer=write, drop_columns=["_raw"],
        messages=messages, stats={"mapping": name},
    )
