"""What a unit of work is given and what it returns: one incident, analysed with one method (`astra/unit.py`,
`sade/unit.py`, `verdict/unit.py`), whoever calls it (the nightly, `eval`, the one-off commands, the benches)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    import duckdb

Method = Literal["astra", "sade", "verdict"]
METHODS: tuple[Method, ...] = ("astra", "sade", "verdict")  # the verdict reads what the other two stored


class IncidentRef(BaseModel):
    """The incident a unit analyses: its ids, its ticket's title and its recorded network, if any."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str
    ticket_id: str
    title: str = ""
    snapshot_path: str | None = None


class Outcome(BaseModel):
    """What one unit produced, in brief (the full results are in the warehouse). Scores are named by scale:
    ASTRA's and the verdict's 0-5 rubric, SADE's and the verdict's NIKA F1 and detection (0-1)."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str
    method: Method
    label: str | None = None  # the fault named (ASTRA: report label or category; SADE: v1 root cause)
    devices: list[str] = []
    scored: bool = False  # ground truth existed and evaluations were written
    rubric_accuracy: float | None = None  # 0-5, ASTRA and the verdict
    rca_f1: float | None = None  # 0-1 (-1: no submission), SADE and the verdict
    detection: float | None = None  # 0 or 1 (-1: no submission), SADE and the verdict
    probe_calls: int | None = None
    llm_calls: int = 0
    seconds: float

    def headline(self) -> float | None:
        """The one figure a run summary shows for this method: the rubric for ASTRA and the verdict, RCA F1 for SADE
        (its detection when no RCA was scored)."""
        if self.method == "sade":
            return self.rca_f1 if self.rca_f1 is not None else self.detection
        return self.rubric_accuracy


INCIDENT_REF_SQL = "SELECT ticket_id, title, snapshot_path FROM incidents WHERE incident_id = ?"


def incident_ref(conn: duckdb.DuckDBPyConnection, incident_id: str) -> IncidentRef:
    """The ingested incident as a unit sees it, its snapshot only when the file is there; an id the warehouse has no
    incident for (a ticket imported without one) is a ticket with no network."""
    row = conn.execute(INCIDENT_REF_SQL, [incident_id]).fetchone()
    if row is None:
        return IncidentRef(incident_id=incident_id, ticket_id=incident_id)
    snapshot = row[2] if row[2] and Path(row[2]).is_file() else None
    return IncidentRef(incident_id=incident_id, ticket_id=row[0] or incident_id, title=row[1] or "",
                       snapshot_path=snapshot)
