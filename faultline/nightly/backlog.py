"""Tonight's backlog: open tickets (with their incident when there is one) and what each still needs.

An item needs a method unless the ledger settled it for the same input digest; a method that cannot run (SADE
without a network) is a skip with its reason. What each digest covers: docs/nightly.md#the-backlog-and-the-ledger.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

import duckdb
from pydantic import Field

from faultline.nightly.ledger import SETTLED, read
from faultline.outcome import METHODS, IncidentRef, Method

# what SADE probes tonight: recorded snapshots, the live lab, or the inventory's devices over SSH
NetworkBackend = Literal["snapshot", "lab", "ssh"]

BACKLOG_SQL = """
WITH logs AS (
    SELECT incident_id, list(DISTINCT file_sha256 ORDER BY file_sha256) AS files
    FROM log_lines WHERE incident_id IS NOT NULL GROUP BY incident_id
)
SELECT coalesce(i.incident_id, t.ticket_id), t.ticket_id, t.title, t.content_hash, i.incident_id IS NOT NULL,
       i.snapshot_path, coalesce(logs.files, [])
FROM tickets t
LEFT JOIN incidents i ON i.ticket_id = t.ticket_id
LEFT JOIN logs ON logs.incident_id = i.incident_id
WHERE t.resolved_at IS NULL AND NOT coalesce(i.is_historical, false)
ORDER BY t.created_at NULLS LAST, t.ticket_id
"""


class BacklogItem(IncidentRef):
    """One open incident and what tonight's run does with it."""

    digests: dict[Method, str]  # method -> input digest
    todo: list[Method] = Field(default_factory=list)  # methods to run tonight
    skips: dict[Method, str] = Field(default_factory=dict)  # method -> why it cannot run (recorded as a row)


def _file_digest(path: str | None) -> str:
    if not path or not Path(path).is_file():
        return "missing"
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _digest(parts: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def select_backlog(conn: duckdb.DuckDBPyConnection, *, analyst: str = "deterministic",
                   network_backend: NetworkBackend = "snapshot", incidents: list[str] | None = None,
                   limit: int | None = None) -> list[BacklogItem]:
    """Open incidents with work left tonight (``limit``: the first N of them); ``incidents``: only these ids."""
    ledger = read(conn)
    wanted = set(incidents or [])
    items: list[BacklogItem] = []
    for incident_id, ticket_id, title, content_hash, has_incident, snapshot, log_files in \
            conn.execute(BACKLOG_SQL).fetchall():
        if wanted and not ({incident_id, ticket_id} & wanted):
            continue
        common = {"ticket": content_hash, "logs": list(log_files)}
        snapshot_digest = _file_digest(snapshot) if has_incident else "none"
        digests: dict[Method, str] = {"astra": _digest({**common, "analyst": analyst}),
                   "sade": _digest({"ticket": content_hash, "snapshot": snapshot_digest, "backend": network_backend})}
        skips: dict[Method, str] = {}
        if not has_incident:
            skips["sade"] = "no network to diagnose: an imported ticket with no lab incident behind it"
        elif network_backend == "snapshot" and snapshot_digest == "missing":
            skips["sade"] = (f"no network backend: the recorded snapshot {snapshot or '(none)'} is missing; "
                             "record one or run with the live lab backend")
        digests["verdict"] = _digest({"astra": digests["astra"], "sade": skips.get("sade") or digests["sade"]})
        todo: list[Method] = []
        for method in METHODS:
            row = ledger.get((incident_id, method))
            settled = row is not None and row.status in SETTLED and row.input_digest == digests[method]
            if method == "verdict" and ({"astra", "sade"} & set(todo)):
                settled = False  # an analysis runs again tonight: so does the verdict that fuses it
            if settled:
                skips.pop(method, None)  # already recorded for these inputs
            elif method not in skips:
                todo.append(method)
        if todo or skips:
            items.append(BacklogItem(incident_id=incident_id, ticket_id=ticket_id, title=title or "",
                                     snapshot_path=snapshot, digests=digests, todo=todo, skips=skips))
    if limit is not None:
        items = items[:limit]
    return items
