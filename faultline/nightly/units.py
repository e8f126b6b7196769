"""Running one unit of the night: a method's unit (`astra/unit.py`, `sade/unit.py`, `verdict/unit.py`) on a copy
of the warehouse, in a space of its own (`faultline.nightly.workspace`), with what the night lends it
(`faultline.nightly.lent`). What it wrote comes back as a `UnitResult` for the flow to store; a raise goes up (to
be retried, then recorded as a failure)."""

from __future__ import annotations

from pathlib import Path

from faultline.config import Settings
from faultline.nightly import lent
from faultline.nightly.backlog import BacklogItem, NetworkBackend
from faultline.nightly.workspace import UnitResult, unit_space
from faultline.outcome import Method


def run_unit(settings: Settings, run_id: str, item: BacklogItem, method: Method, warehouse_copy: Path, *,
             analyst: str = "deterministic", max_rounds: int = 5, network_backend: NetworkBackend = "snapshot",
             llm_model: str | None = None) -> UnitResult:
    """Run `method` on `item` over the warehouse copy; its outcome and rows. Opens nothing for writing."""
    with unit_space(warehouse_copy, method, settings.duckdb_memory_limit) as space:
        if method == "astra":
            from faultline.astra.unit import run_astra

            outcome = run_astra(settings, space.conn, item, analyst=analyst, max_rounds=max_rounds, run_id=run_id,
                                docs=lent.docs_session(settings)).outcome
        elif method == "sade":
            from faultline.sade.unit import run_sade

            outcome = run_sade(settings, item, conn=space.conn, network=lent.network(settings, network_backend),
                               network_backend=network_backend, llm_model=llm_model, run_id=run_id).outcome
        else:
            from faultline.verdict.unit import run_verdict

            outcome = run_verdict(settings, space.conn, item, analyst=analyst, network_backend=network_backend,
                                  network=lent.network(settings, network_backend), run_id=run_id).outcome
        return space.collect(outcome)


def unit_settings(settings: Settings) -> Settings:
    """The settings the night's units (and the docs server they share) run with: one torch thread each unless
    `embedding_threads` says otherwise. Units embed one short text at a time, `nightly_workers` of them beside
    the docs server, so torch's default of a thread per core only has them contend for the same cores."""
    return settings if settings.embedding_threads else settings.model_copy(update={"embedding_threads": 1})
