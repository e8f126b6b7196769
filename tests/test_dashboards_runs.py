"""The overview's "Latest runs" on a real warehouse: top-level runs, newest first, each nightly's sub-runs grouped
under it by kind (runs.parent_run_id), a failed sub-run shown on its parent, runs started on their own still listed.

The runs are written with `faultline.runs` as the nightly and the ingests write them, their start times set so the
order is known; the marts are refreshed and the site built, and the index is read in headless Chromium.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests import test_dashboards as dashboards

NOW = datetime(2026, 3, 2, 2, 0, tzinfo=UTC)
INVENTORIES = 20
browser = dashboards.browser  # the headless Chromium fixture of the dashboards' own tests


def _run(conn, kind: str, minutes: float, *, status: str = "completed", parent: str | None = None,
         error: str | None = None) -> str:
    """A finished run started `minutes` after NOW (before it when negative)."""
    from faultline.runs import finish_run, start_run

    run_id = start_run(conn, kind, settings={"test": True}, parent_run_id=parent)
    finish_run(conn, run_id, status=status, stats={"files": 1}, error=error)
    started = NOW + timedelta(minutes=minutes)
    conn.execute("UPDATE runs SET started_at = ?, finished_at = ? WHERE run_id = ?",
                 [started, started + timedelta(seconds=30), run_id])
    return run_id


def _night(conn, *, failed: int = 0) -> dict[str, object]:
    """A nightly whose history ingest found 20 inventories (the first `failed` of them failed) and a logs ingest;
    and three runs started on their own earlier that day."""
    standalone = [_run(conn, kind, minutes) for kind, minutes in
                  (("ingest_logs", -180), ("ingest_tickets", -120), ("eval_astra", -60))]
    night = _run(conn, "nightly", 0)
    history = _run(conn, "ingest_incidents", 1, parent=night)
    inventories = [_run(conn, "ingest_inventory", 2 + n / 100, parent=history,
                        status="failed" if n < failed else "completed",
                        error="ValueError: hosts.yaml is not a mapping" if n < failed else None)
                   for n in range(INVENTORIES)]
    logs = _run(conn, "ingest_logs", 5, parent=night)
    return {"standalone": standalone, "night": night, "history": history, "inventories": inventories, "logs": logs}


def _site(conn, tmp_path):
    from dashboards import build_dashboards
    from faultline.marts import refresh_marts

    marts = {m.name: m for m in refresh_marts(conn)}
    assert marts["mart_runs"].ok, marts["mart_runs"].failed_tests
    return build_dashboards(conn, tmp_path / "site")


def _top_rows(page) -> list[dict[str, str]]:
    headers = page.locator("table.runs > thead > tr > th").all_inner_texts()
    rows = page.locator("table.runs > tbody > tr")
    return [dict(zip(headers, rows.nth(n).locator(":scope > td").all_inner_texts(), strict=True))
            for n in range(rows.count())]


def test_a_nightly_is_one_row_with_its_sub_runs_grouped_under_it_and_standalone_runs_stay(conn, browser, tmp_path):
    runs = _night(conn)
    assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 4 + 1 + INVENTORIES + 1  # > RUNS_SHOWN flat
    site = _site(conn, tmp_path)
    page = dashboards._open(browser, site.out_dir, site.index, tmp_path)

    top = _top_rows(page)
    assert [r["run id"] for r in top] == [runs["night"], *reversed(runs["standalone"])]  # newest first
    assert [r["kind"] for r in top] == ["nightly", "eval_astra", "ingest_tickets", "ingest_logs"]
    assert top[0]["status"] == "completed" and all(r["sub-runs"] == "-" for r in top[1:])
    night = page.locator("table.runs > tbody > tr").first
    groups = night.locator("details.sub-runs")
    assert groups.locator("summary").all_inner_texts() == [
        "ingest_incidents ×1, all ok", f"ingest_inventory ×{INVENTORIES}, all ok", "ingest_logs ×1, all ok"]

    inventories = night.locator("details.sub-runs[data-kind='ingest_inventory']")
    assert inventories.get_attribute("open") is None  # folded until opened
    listed = inventories.locator("table.sub-runs tbody tr")
    assert listed.count() == INVENTORIES and not listed.first.is_visible()
    inventories.locator("summary").click()
    assert listed.first.is_visible() and inventories.get_attribute("open") is not None
    assert [listed.nth(n).locator("td").last.inner_text() for n in range(INVENTORIES)] == runs["inventories"]
    text = page.locator("main").inner_text()
    assert "Showing the 4 most recent run(s) started on their own" in text


def test_a_failed_sub_run_shows_on_its_parent(conn, browser, tmp_path):
    runs = _night(conn, failed=2)
    site = _site(conn, tmp_path)
    page = dashboards._open(browser, site.out_dir, site.index, tmp_path)

    night = page.locator("table.runs > tbody > tr").first
    assert night.get_attribute("class") == "sub-run-failed"
    assert _top_rows(page)[0]["status"] == "completed; 2 sub-run(s) failed"
    inventories = night.locator("details.sub-runs[data-kind='ingest_inventory']")
    assert inventories.locator("summary").inner_text() == f"ingest_inventory ×{INVENTORIES}, 2 failed, 18 ok"
    assert "has-failed" in inventories.get_attribute("class")  # stands out, folded
    inventories.locator("summary").click()
    failed = inventories.locator("table.sub-runs tbody tr.sub-run-failed")
    assert failed.count() == 2 and failed.first.is_visible()
    first = failed.first.inner_text()
    assert runs["inventories"][0] in first and "hosts.yaml is not a mapping" in first
    assert "has-failed" not in night.locator("details.sub-runs[data-kind='ingest_logs']").get_attribute("class")
    assert page.locator("table.runs > tbody > tr.sub-run-failed").count() == 1  # the standalone runs are fine


def test_latest_runs_shows_a_bounded_number_of_top_level_runs(conn, tmp_path, monkeypatch):
    from dashboards import pages_overview

    monkeypatch.setattr(pages_overview, "RUNS_SHOWN", 3)
    runs = _night(conn)
    html = _site(conn, tmp_path).index.read_text()
    assert runs["night"] in html and runs["standalone"][2] in html and runs["standalone"][1] in html
    assert runs["standalone"][0] not in html  # the oldest is the fourth top-level run
    assert "Showing the 3 most recent run(s)" in html


def test_a_runs_mart_from_before_sub_runs_says_to_refresh(conn, tmp_path):
    from dashboards import build_dashboards

    conn.execute("CREATE TABLE mart_runs AS SELECT 'r1' AS run_id, 'ingest_logs' AS kind")
    html = build_dashboards(conn, tmp_path / "site").index.read_text()
    assert "No data yet" in html and "predates sub-runs" in html


@pytest.mark.parametrize(("statuses", "expected"), [
    (["completed"] * 3, "ingest_logs ×3, all ok"),
    (["failed", "completed_with_failures", "running", "completed"],
     "ingest_logs ×4, 1 failed, 1 with failures, 1 open, 1 ok"),
])
def test_a_group_of_sub_runs_is_summed_up_in_a_line(statuses, expected):
    from dashboards.pages_overview import sub_run_summary

    runs = [{"status": s, "is_open": s == "running"} for s in statuses]
    assert sub_run_summary("ingest_logs", runs) == expected
