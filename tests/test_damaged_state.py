"""Damaged state on disk: a truncated warehouse, an index missing a data file, a baseline of another incident.

Real DuckDB and LanceDB in tmp_path; the index uses a small hashing embedder (what is tested is the damage,
not the embeddings), so no model is loaded.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from faultline import db
from faultline.damage import DamagedState
from faultline.errors import FaultlineError
from faultline.network.snapshot_backend import snapshot_backend
from faultline.retrieval.index import sync_index
from faultline.retrieval.search import search

BACKLOG = Path(__file__).resolve().parents[1] / "data" / "sample" / "backlog"
# 003 and 006 record the same network (simple_bgp, size s); 002 another one (dc_clos_service)
INCIDENT, SAME_NETWORK, OTHER_NETWORK = "sample-backlog-003", "sample-backlog-006", "sample-backlog-002"


class HashEmbedder:
    """Eight-dimensional unit vectors from a text's hash: enough for an index, no model to load."""

    model_name, dim = "test/hash-8", 8

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(np.float32) + 1
                for t in texts]
        return np.array([r / np.linalg.norm(r) for r in rows], dtype=np.float32)


def _tickets(conn, count: int = 3) -> None:
    for n in range(count):
        conn.execute(
            "INSERT INTO tickets (ticket_id, source, title, description, status, components, created_at, "
            "content_hash, source_file, source_record, first_ingested_at, ingested_at) VALUES "
            "(?, 'test', ?, 'the bgp session to the upstream router went down', 'Open', ['network'], now(), ?, "
            "'fixture', 1, now(), now())", [f"NET-{n}", f"BGP down on router{n}", f"h{n}"])


@pytest.mark.parametrize("keep", [0, 100, 1_000_000])
def test_a_truncated_warehouse_names_the_file_and_how_to_recover(settings, conn, run_cli, capsys, keep):
    _tickets(conn)
    conn.execute("CHECKPOINT")
    conn.close()
    path = settings.duckdb_path
    with path.open("r+b") as handle:
        handle.truncate(min(keep, path.stat().st_size // 2))
    with pytest.raises(DamagedState) as err:
        db.connect(path)
    assert str(path) in err.value.message and "damaged" in err.value.message
    assert "faultline index --rebuild" in err.value.fix and "faultline ingest" in err.value.fix
    run_cli("db", "sql", "SELECT count(*) FROM tickets", expect_exit=2)
    printed = capsys.readouterr().err
    assert f"the warehouse file {path} is damaged" in printed and "Traceback" not in printed


def test_an_index_missing_a_data_file_says_rebuild_and_rebuild_mends_it(settings, conn, run_cli, capsys):
    _tickets(conn)
    embedder = HashEmbedder()
    sync_index(conn, settings, "tickets", embedder)
    fragments = list((settings.lancedb_dir / "tickets.lance" / "data").glob("*.lance"))
    assert fragments
    fragments[0].unlink()
    for mode in ("vector", "hybrid"):
        with pytest.raises(DamagedState) as err:
            search(settings, "tickets", "bgp down", k=3, mode=mode, embedder=embedder)
        assert fragments[0].name in err.value.message and "--rebuild --kind tickets" in err.value.fix
    with pytest.raises(DamagedState, match=fragments[0].name):
        sync_index(conn, settings, "tickets", embedder)  # an incremental sync cannot mend it: it says so
    stats = sync_index(conn, settings, "tickets", embedder, rebuild=True)
    assert stats.embedded == stats.rows_total == 3
    hits = search(settings, "tickets", "bgp down", k=3, mode="hybrid", embedder=embedder)
    assert sorted(h.id for h in hits) == ["NET-0", "NET-1", "NET-2"]


def test_cli_index_rebuild_reembeds_every_row(settings, conn, run_cli, capsys, monkeypatch):
    _tickets(conn, 2)
    conn.close()
    monkeypatch.setattr("faultline.retrieval.embed.Embedder", lambda settings: HashEmbedder())
    run_cli("index", "--kind", "tickets", "--json")
    capsys.readouterr()
    shutil.rmtree(settings.lancedb_dir / "tickets.lance" / "data")
    run_cli("search", "tickets", "bgp", "--mode", "vector", expect_exit=2)
    assert "faultline index --rebuild --kind tickets" in capsys.readouterr().err
    run_cli("index", "--kind", "tickets", "--rebuild", "--json")
    assert '"embedded": 2' in capsys.readouterr().out
    run_cli("search", "tickets", "bgp", "--mode", "vector", "--json")
    assert "NET-1" in capsys.readouterr().out


def _incident_with_baseline_of(tmp_path: Path, donor: str) -> Path:
    folder = tmp_path / "corpus" / INCIDENT
    shutil.copytree(BACKLOG / INCIDENT, folder)
    shutil.copy(BACKLOG / donor / "baseline.json.gz", folder / "baseline.json.gz")
    return folder


def test_a_baseline_of_another_network_is_refused_naming_both_files(tmp_path):
    folder = _incident_with_baseline_of(tmp_path, OTHER_NETWORK)
    with pytest.raises(FaultlineError) as err:
        snapshot_backend(folder / "snapshot.json.gz")
    assert f"{folder / 'baseline.json.gz'} is not the baseline of {folder / 'snapshot.json.gz'}" in err.value.message
    assert "scenario dc_clos_service size s, the snapshot simple_bgp size s" in err.value.message
    assert "remove" in err.value.fix
    assert snapshot_backend(folder / "snapshot.json.gz", use_baseline=False).baseline_ctx is None


def test_a_baseline_of_the_same_network_from_another_incident_is_used(tmp_path):
    folder = _incident_with_baseline_of(tmp_path, SAME_NETWORK)
    assert snapshot_backend(folder / "snapshot.json.gz").baseline_ctx is not None


def test_eval_sade_lists_the_wrong_baseline_as_failed_and_scores_the_rest(tmp_path, run_cli, capsys):
    _incident_with_baseline_of(tmp_path, OTHER_NETWORK)
    shutil.copytree(BACKLOG / SAME_NETWORK, tmp_path / "corpus" / SAME_NETWORK)
    run_cli("eval", "sade", "--corpus", str(tmp_path / "corpus"), "--json")
    batch = json.loads(capsys.readouterr().out)
    assert [(f["incident_id"], "is not the baseline of" in f["error"]) for f in batch["failures"]] == [(INCIDENT, True)]
    assert [i["score"]["incident_id"] for i in batch["incidents"]] == [SAME_NETWORK]


def test_a_truncated_snapshot_names_the_file(tmp_path):
    folder = tmp_path / INCIDENT
    shutil.copytree(BACKLOG / INCIDENT, folder)
    snapshot = folder / "snapshot.json.gz"
    snapshot.write_bytes(snapshot.read_bytes()[:4000])
    with pytest.raises(FaultlineError, match=f"{snapshot}: not a Faultline snapshot \\(EOFError"):
        snapshot_backend(snapshot)
