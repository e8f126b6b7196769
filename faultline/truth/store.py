"""Reading ground truth: from the warehouse's `ground_truth` table, or from a corpus folder's ground_truth.json."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from faultline.nika.answers import RootCause
from faultline.truth.records import Truth

if TYPE_CHECKING:
    import duckdb

TRUTH_SQL = """
SELECT g.incident_id, g.is_faulty, coalesce(g.labels, []), coalesce(g.devices, []), coalesce(g.v2_resource_ids, []),
       coalesce(g.v2_fault_types, []), i.scenario, i.size
FROM ground_truth g LEFT JOIN incidents i USING (incident_id)
"""
ONE_TRUTH_SQL = TRUTH_SQL + "WHERE g.incident_id = ?"
ALL_TRUTHS_SQL = TRUTH_SQL + "ORDER BY g.incident_id"


def _truth(row: tuple) -> Truth:
    incident_id, faulty, labels, devices, resources, types, scenario, size = row
    pairs = [RootCause(resource_id=r, fault_type=t) for r, t in zip(resources, types)]
    return Truth(incident_id=incident_id, is_faulty=bool(faulty), labels=list(labels), devices=list(devices),
                 root_causes=pairs, scenario=scenario, size=size)


def load_truth(conn: duckdb.DuckDBPyConnection, incident_id: str) -> Truth | None:
    """The incident's ground truth, or None when it has none (an open ticket from a real tracker)."""
    row = conn.execute(ONE_TRUTH_SQL, [incident_id]).fetchone()
    return _truth(row) if row is not None else None


def load_truths(conn: duckdb.DuckDBPyConnection) -> dict[str, Truth]:
    """Every incident's ground truth, by incident id."""
    return {row[0]: _truth(row) for row in conn.execute(ALL_TRUTHS_SQL).fetchall()}


def truth_from_json(incident_id: str, data: dict[str, Any], *, scenario: str | None = None,
                    size: str | None = None) -> Truth:
    """A `Truth` from a corpus folder's `ground_truth.json` (v1 `root_cause_names` win over `multiple_faults`)."""
    v1 = data.get("v1") or {}
    names = v1.get("root_cause_names")
    if names is None:
        name = v1.get("root_cause_name")
        names = name if isinstance(name, list) else ([name] if name else [])
    return Truth(incident_id=incident_id, is_faulty=bool(v1.get("is_anomaly")),
                 devices=list(v1.get("faulty_devices") or []), labels=list(names),
                 root_causes=[RootCause(**rc) for rc in data.get("v2") or []], scenario=scenario, size=size)
