"""Everything the verdict reads about one incident, loaded from the warehouse, and each source's opinion.

`load_inputs` gathers the ticket (`Incident`), ASTRA's stored analysis (its agents' last outputs and final
report) and the network diagnosis (submission, flags, steps); `opinions` reads what each source says the fault
is. Nothing here reads ground truth or how a lab caused a fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from faultline.astra.records import (
    AgentOutput,
    AstraResult,
    Incident,
    Report,
    SimilarTicket,
)
from faultline.sade.store import StoredDiagnosis, load_diagnosis
from faultline.verdict.records import Opinion

STRONG_LOG_SCORE = 1.0  # a log label scored at least this is read as a strong opinion (taxonomy MIN is 0.5)

HAS_NETWORK_SQL = "SELECT snapshot_path FROM incidents WHERE incident_id = ?"


@dataclass
class Inputs:
    """What the verdict reads for one incident."""

    incident: Incident
    astra: AstraResult | None
    network: StoredDiagnosis | None
    without_network: str | None = None  # why there is no network answer (an imported ticket, a missing snapshot)
    outputs: dict[str, AgentOutput] = field(default_factory=dict)  # each ASTRA agent's last output

    @property
    def report(self) -> Report | None:
        """ASTRA's final report, if ASTRA ran."""
        return self.astra.rounds[-1].report if self.astra and self.astra.rounds else None

    @property
    def similar(self) -> list[SimilarTicket]:
        """The resolved tickets ASTRA's similarity agent retrieved (id and score)."""
        sim = self.outputs.get("similarity")
        tickets = (sim.data.get("tickets") or []) if sim else []
        return [SimilarTicket(ticket_id=t["ticket_id"], title=t.get("title", ""), score=float(t.get("score") or 0.0))
                for t in tickets if isinstance(t, dict) and t.get("ticket_id")]


def _why_no_network(conn: duckdb.DuckDBPyConnection, incident_id: str) -> str:
    row = conn.execute(HAS_NETWORK_SQL, [incident_id]).fetchone()
    if row is None:
        return "an imported ticket with no network behind it: nothing was probed"
    if not row[0]:
        return "the incident has no recorded network snapshot and no live network was probed"
    return "the network diagnosis has not run (or failed) for this incident"


def load_inputs(conn: duckdb.DuckDBPyConnection, incident_id: str, *, analyst: str = "deterministic",
                method: str = "sade") -> Inputs:
    """The ticket, ASTRA's analysis by `analyst` and the `method` diagnosis of one incident, as stored."""
    from faultline.astra.incident import load_incident
    from faultline.astra.store import load_result

    incident = load_incident(conn, incident_id)
    astra = load_result(conn, incident_id, analyst)
    network = load_diagnosis(conn, incident_id, method)
    outputs: dict[str, AgentOutput] = {}
    for out in astra.outputs if astra else []:
        if out.agent not in outputs or out.round >= outputs[out.agent].round:
            outputs[out.agent] = out
    return Inputs(incident=incident, astra=astra, network=network, outputs=outputs,
                  without_network=None if network else _why_no_network(conn, incident_id))


def _known(label: str | None) -> bool:
    from faultline.truth.taxonomy import taxonomy

    return bool(label) and label in taxonomy()


def network_opinion(network: StoredDiagnosis | None) -> Opinion | None:
    """What the network diagnosis says: its labels and devices, strong when a strong flag stands behind it."""
    if network is None:
        return None
    if network.status != "submitted" or network.v1 is None:
        return Opinion(source="network", note=f"probed, but the diagnosis ended {network.status}")
    if not network.v1.is_anomaly:
        return Opinion(source="network", healthy=True, strength="strong",
                       note="probed: every scan came back clean (no anomaly)")
    strong = any(f.strength == "strong" for f in network.flags)
    return Opinion(source="network", labels=list(network.v1.root_cause_name), devices=list(network.v1.faulty_devices),
                   strength="strong" if strong else "weak",
                   note=network.summary or f"named {', '.join(network.v1.root_cause_name)}")


def log_opinion(outputs: dict[str, AgentOutput]) -> Opinion | None:
    """The log agent's label over the lines in its scope (strong from `STRONG_LOG_SCORE`)."""
    out = outputs.get("log")
    if out is None:
        return None
    if not _known(out.label):
        # a scope that read nothing says why (a window years before the archive's lines): the verdict keeps it
        return Opinion(source="logs", devices=list(out.devices), note=out.missing or "the lines in scope name no label")
    score = float((out.data.get("label_scores") or {}).get(out.label, 0.0))
    how = f" ({score:.2f})" if score else ""
    return Opinion(source="logs", labels=[out.label], devices=list(out.devices),
                   strength="strong" if score >= STRONG_LOG_SCORE else "weak",
                   note=f"the lines in scope point at {out.label}{how}")


def history_opinion(outputs: dict[str, AgentOutput]) -> Opinion | None:
    """The similar resolved tickets' vote (a precedent: always weak)."""
    out = outputs.get("similarity")
    if out is None:
        return None
    vote = out.data.get("label_vote") or {}
    label = out.label or vote.get("label")
    if not _known(label):
        return Opinion(source="history", note="the similar tickets' resolutions do not agree on a label")
    share = float(vote.get("share") or 0.0)
    return Opinion(source="history", labels=[label], strength="weak",
                   note=f"{100 * share:.0f}% of the similar tickets' weighted vote reads as {label}")


def docs_opinion(outputs: dict[str, AgentOutput]) -> Opinion | None:
    """A label the documentation agent settled on (reference material: always weak)."""
    out = outputs.get("domain")
    if out is None:
        return None
    if not _known(out.label):
        return Opinion(source="docs", note="the documentation found names no label")
    return Opinion(source="docs", labels=[out.label], strength="weak",
                   note=f"the documentation found points at {out.label}")


def opinions(inputs: Inputs) -> list[Opinion]:
    """Every source's opinion that exists (network, logs, history, docs)."""
    found = [network_opinion(inputs.network), log_opinion(inputs.outputs), history_opinion(inputs.outputs),
             docs_opinion(inputs.outputs)]
    return [o for o in found if o is not None]
