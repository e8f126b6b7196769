"""Missing optional sources degrade an analysis and are said in its report; a command whose every unit
failed (or that had none) exits non-zero with the count.

Real DuckDB, LanceDB and docs MCP server; the only model is the scripted fake's absence (a model string no
provider answers), never a real LLM.
"""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from tests.conftest import REPO

SAMPLE = REPO / "data" / "sample"


@pytest.fixture
def bare_warehouse(settings, conn):
    """One sample incident with its logs in the warehouse; neither the ticket nor the docs index built."""
    from faultline.ingest.incidents import ingest_incidents
    from tests.astra_cases import INCIDENT_DIR

    ingest_incidents(conn, settings, [INCIDENT_DIR])
    return conn


def test_analysis_without_docs_or_ticket_index_is_degraded_not_failed(settings, bare_warehouse) -> None:
    from faultline.astra.engine import analyse
    from faultline.astra.incident import load_incident

    incident = load_incident(bare_warehouse, "sample-backlog-003")
    result = analyse(incident, settings=settings, conn=bare_warehouse, max_rounds=2)
    report = result.rounds[-1].report
    sources = [line.partition(": ")[0] for line in report.missing]
    assert sources == ["documentation", "ticket history"]  # the logs are there: not missing
    assert all("faultline index" in line for line in report.missing)  # each says how to get the source
    assert "## Sources missing" in report.text and "there is no docs search index" in report.text
    outputs = {o.agent: o for o in result.outputs}
    assert outputs["domain"].text.startswith("No documentation was consulted")
    assert outputs["similarity"].missing.startswith("ticket history: there is no tickets search index")
    assert not [c for c in result.claims if c.agent in ("domain", "similarity")]  # "nothing" is never a claim
    assert report.label == "bgp_acl_block"  # the logs still carry the analysis


def test_prefetch_without_a_ticket_index_is_empty_and_says_why(settings, bare_warehouse) -> None:
    from faultline.astra.incident import load_incident
    from faultline.astra.prefetch import prefetch

    result = prefetch(settings, bare_warehouse, load_incident(bare_warehouse, "sample-backlog-003"))
    assert result.similar == [] and result.hybrid_ids == []
    assert "no tickets search index" in (result.missing or "") and "faultline index" in (result.missing or "")


def _corpus(tmp_path, *names: str):
    corpus = tmp_path / "corpus"
    for name in ("archive", "inventory", *names):
        shutil.copytree(SAMPLE / "backlog" / name, corpus / name)
    return corpus


def test_eval_astra_without_docs_exits_0_and_names_the_missing_source(run_cli, tmp_path, capsys) -> None:
    corpus = _corpus(tmp_path, "sample-backlog-003")
    run_cli("eval", "astra", "--corpus", str(corpus), "--rounds", "1", "--json")
    batch = json.loads(capsys.readouterr().out)
    assert batch["failures"] == {} and batch["summary"]["incidents"] == 1
    assert batch["degraded"]["sample-backlog-003"][0].startswith("documentation: ")


def test_eval_astra_whose_every_incident_fails_exits_1_with_the_count(run_cli, tmp_path, capsys) -> None:
    corpus = _corpus(tmp_path, "sample-backlog-003", "sample-backlog-005")
    # a model no provider answers: every analysis fails at its first LLM step
    run_cli("eval", "astra", "--corpus", str(corpus), "--rounds", "1", "--llm", "faultline-fake/nobody",
            expect_exit=1)
    out = capsys.readouterr()
    assert f"all 2 incidents in {corpus} failed" in out.err
    assert "failed sample-backlog-003" in out.out and "0 incidents scored" in out.out


def test_eval_astra_on_a_folder_without_incidents_is_an_error(run_cli, tmp_path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    run_cli("eval", "astra", "--corpus", str(tmp_path / "empty"), expect_exit=2)
    assert "no incidents" in capsys.readouterr().err


def test_eval_sade_keeps_going_past_a_damaged_snapshot_and_fails_when_all_did(run_cli, tmp_path, capsys) -> None:
    corpus = tmp_path / "sade"
    for name in ("sample-backlog-001", "sample-backlog-005"):
        shutil.copytree(SAMPLE / "backlog" / name, corpus / name)
    damaged = corpus / "sample-backlog-005" / "snapshot.json.gz"
    damaged.write_bytes(damaged.read_bytes()[:4000])  # a half-copied file
    run_cli("eval", "sade", "--corpus", str(corpus), "--json")
    report = json.loads(capsys.readouterr().out)
    assert [i["score"]["incident_id"] for i in report["incidents"]] == ["sample-backlog-001"]
    assert report["failures"][0]["incident_id"] == "sample-backlog-005"
    assert "snapshot.json.gz" in report["failures"][0]["error"]  # names the damaged file

    shutil.rmtree(corpus / "sample-backlog-001")
    run_cli("eval", "sade", "--corpus", str(corpus), expect_exit=1)
    out = capsys.readouterr()
    assert "failed sade sample-backlog-005" in out.out and "all 1 incident evaluations" in out.err
    with gzip.open(SAMPLE / "backlog" / "sample-backlog-005" / "snapshot.json.gz") as whole:
        assert whole.read(1)  # the sample itself is intact: only the copy was damaged


def _night(outcomes: list[tuple[str, str]], failures: list[tuple[str, str]]) -> dict:
    return {"run_id": "r1", "backlog": 2,
            "outcomes": [{"incident_id": i, "method": m, "seconds": 1.0} for i, m in outcomes],
            "failures": [{"incident_id": i, "method": m, "error_type": "FaultlineError", "message": "x"}
                         for i, m in failures]}


def test_nightly_exits_1_naming_a_method_that_failed_on_every_incident(capsys) -> None:
    import typer

    from faultline.cli.nightly import exit_if_a_method_always_failed

    exit_if_a_method_always_failed(_night([("a", "astra"), ("a", "sade")], [("b", "astra")]))  # one of two: 0
    exit_if_a_method_always_failed(_night([], []))  # an empty backlog is a quiet night, not a failure
    with pytest.raises(typer.Exit) as stopped:
        exit_if_a_method_always_failed(_night([("a", "sade"), ("b", "sade")],
                                              [("a", "astra"), ("b", "astra"), ("a", "verdict")]))
    assert stopped.value.exit_code == 1
    err = capsys.readouterr().err
    assert "all 2 astra analyses failed" in err and "all 1 verdict analyses failed" in err and "sade" not in err
