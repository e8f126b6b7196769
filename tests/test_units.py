"""The units every entry point runs (`astra/unit.py`, `sade/unit.py`, `verdict/unit.py`): what they return, and
that what a unit opens for itself (a docs server, a network) ends with it, however it ends."""

from __future__ import annotations

import pytest

from tests.conftest import REPO

INCIDENT = REPO / "data" / "sample" / "backlog" / "sample-backlog-003"


@pytest.fixture
def warehouse(run_cli, settings, conn):
    """One sample incident (logs, ticket, truth, snapshot) and the sample docs, indexed."""
    from faultline.ingest.incidents import ingest_incidents

    ingest_incidents(conn, settings, [INCIDENT])
    run_cli("ingest", "docs", str(REPO / "data" / "sample" / "docs"))
    run_cli("index")
    return settings, conn


def _docs_servers() -> list:
    """This process's `faultline mcp docs` children still alive."""
    import psutil

    return [p for p in psutil.Process().children(recursive=True)
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE and "docs" in p.cmdline()
            and "mcp" in p.cmdline()]


def test_an_astra_unit_reads_the_docs_through_its_own_server_and_stops_it(warehouse):
    from faultline.astra.unit import run_astra

    settings, conn = warehouse
    before = _docs_servers()
    done = run_astra(settings, conn, "sample-backlog-003", max_rounds=1, run_id="u1")
    domain = next(o for o in done.result.outputs if o.agent == "domain")
    assert domain.data["hits"] and not domain.missing  # the documentation was read, through an MCP server
    assert _docs_servers() == before  # ... which the unit started and stopped
    assert done.outcome.method == "astra" and done.outcome.scored and done.score is not None
    assert done.outcome.rubric_accuracy == done.score.accuracy and done.outcome.rca_f1 is None
    rows = conn.execute("SELECT count(*) FROM evaluations WHERE incident_id = 'sample-backlog-003' "
                        "AND method = 'astra' AND run_id = 'u1'").fetchone()[0]
    assert rows > 0  # stored, and scored against the truth


def test_a_unit_that_fails_still_stops_the_docs_server_it_started(warehouse):
    from faultline.astra.unit import run_astra
    from faultline.llm.gateway import LLMError

    settings, conn = warehouse
    before = _docs_servers()
    fast = settings.model_copy(update={"llm_retries": 0, "llm_backoff_s": 0.0})
    with pytest.raises(LLMError):  # a model no provider answers: the analysis fails at its first LLM step
        run_astra(fast, conn, "sample-backlog-003", analyst="llm:faultline-fake/nobody", max_rounds=1)
    assert _docs_servers() == before


def test_a_lent_docs_session_is_left_open_for_the_next_unit(warehouse):
    from faultline.astra.unit import docs_session, run_astra

    settings, conn = warehouse
    before = _docs_servers()
    with docs_session(settings) as docs:
        run_astra(settings, conn, "sample-backlog-003", max_rounds=1, docs=docs)
        assert docs.search("BGP hold timer", 1)  # still open: the caller closes what it lends
        assert len(_docs_servers()) == len(before) + 1  # one server for the batch, none of the unit's own
    assert _docs_servers() == before


def test_the_sade_unit_opens_the_incidents_network_by_name_and_scores_it(warehouse):
    from faultline.outcome import incident_ref
    from faultline.sade.unit import run_sade

    settings, conn = warehouse
    ref = incident_ref(conn, "sample-backlog-003")
    done = run_sade(settings, ref, conn=conn, run_id="u2")
    assert done.diagnosis.backend == "snapshot" and done.diagnosis.status == "submitted"
    assert done.outcome.method == "sade" and done.outcome.rca_f1 == done.score.rca.f1 == 1.0
    assert done.outcome.rubric_accuracy is None and done.outcome.headline() == 1.0
    stored = conn.execute("SELECT count(*) FROM submissions WHERE incident_id = ? AND run_id = 'u2'",
                          [ref.incident_id]).fetchone()[0]
    assert stored == 1


def test_the_sade_unit_names_a_missing_recording_and_a_missing_backend(warehouse):
    from faultline.errors import FaultlineError
    from faultline.outcome import IncidentRef
    from faultline.sade.unit import run_sade

    settings, _ = warehouse
    with pytest.raises(FaultlineError, match="has no recorded snapshot"):
        run_sade(settings, IncidentRef(incident_id="i1", ticket_id="i1"), ticket="")
    with pytest.raises(FaultlineError, match="unknown network backend 'telnet'") as info:
        run_sade(settings, IncidentRef(incident_id="i1", ticket_id="i1"), network_backend="telnet", ticket="")
    assert "lab" in info.value.fix and "snapshot" in info.value.fix and "ssh" in info.value.fix


def test_the_verdict_unit_closes_the_network_it_opened_for_its_follow_ups(warehouse, monkeypatch):
    from faultline.network.backend import Backend
    from faultline.outcome import incident_ref
    from faultline.sade.unit import run_sade
    from faultline.verdict.unit import run_verdict

    settings, conn = warehouse
    ref = incident_ref(conn, "sample-backlog-003")
    run_sade(settings, ref, conn=conn)
    from faultline.astra.unit import run_astra

    run_astra(settings, conn, ref.incident_id, max_rounds=1)
    opened, closed = [], []
    real_close = Backend.close

    def counting_close(self):
        closed.append(self)
        real_close(self)

    monkeypatch.setattr(Backend, "close", counting_close)
    monkeypatch.setattr("faultline.verdict.refine.leads", lambda first, inputs: [("dns_service_down", ["router1"])])
    from faultline.network import backends

    real_open = backends.open_backend

    def counting_open(*args, **kwargs):
        opened.append(real_open(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(backends, "open_backend", counting_open)
    done = run_verdict(settings, conn, ref)
    assert [c.label for c in done.verdict.checks] == ["dns_service_down"]  # the network was asked
    assert len(opened) == 1 and closed == opened  # ... through one backend, closed when the unit ended
    assert done.outcome.method == "verdict" and done.score is not None and done.first_score is not None


def test_an_install_without_the_backends_entry_points_says_to_install_again(settings, monkeypatch):
    from faultline.errors import FaultlineError
    from faultline.network import backends

    monkeypatch.setattr(backends, "entry_points", lambda **selection: [])
    monkeypatch.setattr(backends, "_OPENERS", {})
    with pytest.raises(FaultlineError, match="no network backend is installed") as info:
        backends.open_backend("snapshot", settings)
    assert "scripts/install.sh" in info.value.fix
