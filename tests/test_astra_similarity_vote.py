"""The TicketSimilarityAgent names a taxonomy label from its similar tickets' resolution notes (weighted vote)."""

from __future__ import annotations

import pytest

ARP_NOTE = ("Found: An ARP filter table on router2 dropped all ARP, and its neighbour cache had been flushed, so it "
            "could not resolve its gateway or peers.\nFix: Deleted the ARP filter table; address resolution works.")
UNRELATED_NOTE = "Found: The office printer queue was stuck after a driver update.\nFix: Reinstalled the driver."
BGP_NOTE = ("Found: A firewall table on leaf_0_1 dropped TCP port 179 in both directions, so all its BGP sessions "
            "went down.\nFix: Deleted the firewall table; sessions re-established.")


@pytest.fixture
def deps(tmp_path):
    from faultline import db
    from faultline.astra.agents import AgentDeps
    from faultline.config import Settings

    settings = Settings(duckdb_path=tmp_path / "fl.duckdb", lancedb_dir=tmp_path / "lancedb", progress=False)
    conn = db.connect(settings.duckdb_path)
    for n, (tid, note) in enumerate([("NET-1", ARP_NOTE), ("NET-2", UNRELATED_NOTE), ("NET-3", BGP_NOTE)]):
        conn.execute("INSERT INTO tickets (ticket_id, source, title, description, resolution_note, content_hash, "
                     "source_file, source_record, first_ingested_at, ingested_at) VALUES (?, 'test', ?, "
                     "'Site 2 cannot reach the PC.', ?, ?, 't', ?, now(), now())",
                     [tid, f"ticket {tid}", note, f"h{n}", n])
    yield AgentDeps(settings=settings, conn=conn)
    conn.close()


def _run(deps, *scored: tuple[str, float]):
    from faultline.astra.agents import make_agent
    from faultline.astra.records import AgentTask, Incident, SimilarTicket

    incident = Incident(incident_id="inc-1", title="Site 2: the PC at 10.1.0.10 not responding on router2")
    task = AgentTask(incident=incident, query=incident.title,
                     prefetched=[SimilarTicket(ticket_id=t, title=f"ticket {t}", score=s) for t, s in scored])
    return make_agent("similarity", deps).run(task)


def test_an_arp_filter_resolution_names_arp_acl_block_and_quotes_it(deps):
    out = _run(deps, ("NET-1", 0.8))
    assert (out.label, out.category) == ("arp_acl_block", "misconfiguration")
    assert "router2" in out.devices
    sentence = ARP_NOTE.splitlines()[0]
    assert sentence in out.text  # the supporting resolution sentence is quoted in the agent's own text
    assert out.findings[0].quotes == [sentence]


def test_an_unrelated_resolution_names_no_label(deps):
    out = _run(deps, ("NET-2", 0.9))
    assert out.label is None and out.category is None and out.devices == []
    assert "arp_acl_block" not in out.text


def test_the_vote_is_weighted_by_rerank_score_and_needs_a_clear_winner(deps):
    assert _run(deps, ("NET-3", 0.9), ("NET-1", 0.2)).label == "bgp_acl_block"
    assert _run(deps, ("NET-3", 0.2), ("NET-1", 0.9)).label == "arp_acl_block"
    split = _run(deps, ("NET-3", 0.5), ("NET-1", 0.5))  # equal weight: no label, but both are misconfigurations
    assert split.label is None and split.category == "misconfiguration"


def test_a_no_fault_resolution_votes_against_naming_a_label():
    from faultline.astra.agents.similarity import vote_label
    from faultline.astra.records import SimilarTicket

    tickets = [SimilarTicket(ticket_id="A", title="a", score=0.9), SimilarTicket(ticket_id="B", title="b", score=0.3)]
    vote = vote_label(tickets, {"A": "Found: No fault. Reachability was normal.", "B": ARP_NOTE})
    assert vote.label is None and vote.category is None and vote.weights["no_fault"] > vote.weights["arp_acl_block"]
