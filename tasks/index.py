"""Prefect tasks keeping the LanceDB search indexes in step with the warehouse."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import duckdb
from prefect import task
from prefect.cache_policies import NO_CACHE

from faultline.config import Settings


@task(name="sync-index", cache_policy=NO_CACHE, task_run_name="sync index: {kind}")
def sync_index_task(conn: duckdb.DuckDBPyConnection, settings: Settings, kind: str) -> dict[str, Any]:
    """Embed new or changed rows of `kind` (tickets or docs) into LanceDB; return the stats."""
    from faultline.retrieval.embed import Embedder
    from faultline.retrieval.index import sync_index

    return asdict(sync_index(conn, settings, kind, Embedder(settings)))
