"""Dashboards: a real warehouse from sample incidents -> marts -> static site -> every page in headless Chromium.

The module builds one warehouse (five sample backlog incidents - one healthy control, all with device logs - and
a little history; ASTRA's deterministic analyst with max_rounds=2, SADE and the flat baseline on the recorded
snapshots, a fused and scored verdict per backlog incident (one of them doctored so that a source disagrees),
plus one incident whose analysis fails), refreshes the marts, builds the site and loads every page from disk with
Playwright driving the apt Chromium: screenshot, expected elements, no console or page error, and no request
outside the site folder. History incidents have no verdict, as in a warehouse from before verdicts.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from faultline.errors import FaultlineError
from tests.conftest import REPO

SAMPLE = REPO / "data" / "sample"
BACKLOG = ["sample-backlog-003", "sample-backlog-005", "sample-backlog-020", "sample-backlog-030",
           "sample-backlog-047"]  # bgp_acl_block (read in bgpd's logs), route leak, host IP, link down, healthy
DISAGREES = "sample-backlog-030"  # its verdict gets a disagreeing source (no sample verdict here has one)
DISAGREEING_QUOTE = "ospfd[212]: neighbor 10.0.0.2 Dead timer expired"
HISTORY = ["sample-history-001", "sample-history-003", "sample-history-005", "sample-history-010"]
SUMMARY_PAGES = ["index.html", "incidents.html", "stratification.html", "rounds.html", "sade.html", "cost.html"]
CHROMIUM = os.environ.get("FAULTLINE_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-quic",
         "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost, EXCLUDE 127.0.0.1"]  # closed network


def _link(source: Path, target: Path) -> None:
    target.mkdir(parents=True)
    for entry in source.iterdir():
        (target / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())


def _fuse_verdicts(conn, settings, ids: list[str]) -> None:
    """Fuse, store and score the verdict of each incident from the stored analyses (its network not asked again)."""
    from faultline.outcome import IncidentRef
    from faultline.verdict.unit import run_verdict

    for incident_id in ids:
        run_verdict(settings, conn, IncidentRef(incident_id=incident_id, ticket_id=incident_id), network_backend=None)


def _make_disagree(conn, incident_id: str) -> None:
    """Store a copy of the incident's real verdict in which the logs named another fault."""
    from faultline.verdict.records import Citation, VerdictClaim
    from faultline.verdict.report import render
    from faultline.verdict.store import load_verdict, save_verdict

    real = load_verdict(conn, incident_id)
    if real.disagreeing:
        return
    claim = VerdictClaim(seq=len(real.claims) + 1, section="disagreement", text="The logs named an OSPF timer instead",
                         quote=DISAGREEING_QUOTE, status="VERIFIED",
                         citation=Citation(source="logs", ref="router2/ospfd.log:42", device="router2"))
    doctored = real.model_copy(update={
        "agreeing": [s for s in real.agreeing if s != "logs"], "disagreeing": ["logs"], "claims": [*real.claims, claim],
        "disagreement": f"The sources disagreed. logs: ospf_timer (a log line). The verdict is "
                        f"{', '.join(real.labels)} by rule {real.rule}."})
    save_verdict(conn, doctored.model_copy(update={"text": render(doctored)}))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(conn, site BuildResult, mart results) after ASTRA, SADE, flat, a failed incident and a refresh."""
    from dashboards import build_dashboards
    from faultline import db
    from faultline.astra.batch import evaluate_incidents, load_corpus
    from faultline.config import Settings
    from faultline.marts import refresh_marts
    from faultline.outcome import incident_ref
    from faultline.sade.unit import run_sade

    work = tmp_path_factory.mktemp("dash")
    for part, names in (("backlog", BACKLOG), ("history", HISTORY)):
        for name in names:
            _link(SAMPLE / part / name, work / "corpus" / part / name)
    _link(SAMPLE / "docs", work / "corpus" / "docs")
    for part in ("backlog", "history"):  # the suite's syslog archive and inventories: the logs ASTRA reads
        for shared in ("archive", "inventory"):
            (work / "corpus" / part / shared).symlink_to(SAMPLE / part / shared)
    settings = Settings(duckdb_path=work / "fl.duckdb", lancedb_dir=work / "lancedb", progress=False)
    conn = db.connect(settings.duckdb_path)
    ids = load_corpus(conn, settings, work / "corpus")
    assert sorted(ids) == BACKLOG
    conn.execute("INSERT INTO ground_truth VALUES ('ghost-1', true, ['link_down'], ['r1'], [], [], 'link_failure', "
                 "'', 'test', now())")  # truth but no incident: the batch records a failure row and goes on
    batch = evaluate_incidents(conn, settings, [*ids, "ghost-1"], max_rounds=2)
    assert list(batch.failures) == ["ghost-1"]
    for method in ("sade", "flat"):
        for name in BACKLOG:
            run_sade(settings, incident_ref(conn, name), conn=conn, method=method, on_error="score")
    _fuse_verdicts(conn, settings, BACKLOG)
    _make_disagree(conn, DISAGREES)
    marts = refresh_marts(conn, settings)
    site = build_dashboards(conn, work / "site")
    yield conn, site, marts, batch
    conn.close()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.fail(f"no Chromium at {CHROMIUM}: apt install chromium (scripts/install.sh --dev does, as root)")
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
    yield chromium
    chromium.close()
    pw.stop()


def _open(browser, site_dir: Path, page_path: Path, shots: Path):
    """Load one page from disk; assert no console/page error, only requests inside the site, a real screenshot."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page: {e}"))
    page.on("requestfailed", lambda r: errors.append(f"failed request: {r.url}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page_path.as_uri(), wait_until="load")
    page.wait_for_selector("main#page", state="attached")
    shot = shots / (str(page_path.relative_to(site_dir)).replace("/", "__") + ".png")
    page.screenshot(path=str(shot), full_page=True)
    assert errors == [], (page_path.name, errors)
    root = site_dir.resolve()
    for url in requests:
        parsed = urlparse(url)
        assert parsed.scheme == "file", (page_path.name, url)
        assert Path(unquote(parsed.path)).resolve().is_relative_to(root), (page_path.name, url)
    assert any(u.endswith("/style.css") for u in requests), "the shared stylesheet was loaded"
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, shot
    return page


def _links_resolve(page, site_dir: Path) -> int:
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    for href in hrefs:
        parsed = urlparse(href)
        assert parsed.scheme == "file", href
        target = Path(unquote(parsed.path))
        assert target.is_file() and target.resolve().is_relative_to(site_dir.resolve()), href
    return len(hrefs)


def test_every_page_loads_in_chromium_clean_offline_with_working_links(built, browser, tmp_path) -> None:
    _conn, site, marts, _ = built
    assert all(m.ok for m in marts), [(m.name, m.failed_tests) for m in marts]
    pages = sorted(site.out_dir.rglob("*.html"))
    expected = {site.out_dir / p for p in SUMMARY_PAGES} | {site.out_dir / "incidents" / f"{i}.html"
                                                            for i in [*BACKLOG, *HISTORY]}
    assert set(pages) == expected == set(site.pages) and site.index == site.out_dir / "index.html"
    assert site.incident_pages == len(BACKLOG) + len(HISTORY) and site.missing_marts == []
    text = "".join(p.read_text() for p in pages)
    assert "<script" not in text and "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text
    links = 0
    for path in pages:
        page = _open(browser, site.out_dir, path, tmp_path)
        links += _links_resolve(page, site.out_dir)
        page.close()
    assert links > 50


def test_index_shows_the_runs_methods_agreement_and_failures(built, browser, tmp_path) -> None:
    conn, site, _, batch = built
    page = _open(browser, site.out_dir, site.index, tmp_path)
    runs = page.locator("table.runs > tbody > tr")  # the runs started on their own; the others grouped under them
    assert runs.count() == conn.execute("SELECT count(*) FROM runs WHERE parent_run_id IS NULL").fetchone()[0]
    parents = conn.execute("SELECT count(DISTINCT parent_run_id) FROM runs WHERE kind = 'ingest_inventory'"
                           ).fetchone()[0]  # the corpus's ingest_incidents runs, each with the inventories it found
    assert parents > 0 and page.locator("details.sub-runs[data-kind='ingest_inventory'] summary").count() == parents
    astra_run = page.locator("table.runs > tbody > tr", has_text=batch.run_id)
    assert "eval_astra" in astra_run.inner_text() and "completed_with_failures" in astra_run.inner_text()
    methods = {r.split("\t")[0]: r.split("\t") for r in page.locator("table.methods tbody tr").all_inner_texts()}
    assert set(methods) == {"verdict", "astra", "sade", "flat"}
    assert page.locator("table.methods tbody tr").first.get_attribute("class") == "family-verdict"  # it leads
    mean_acc = conn.execute("SELECT avg(value) FROM evaluations WHERE method = 'astra' AND metric = 'accuracy'"
                            ).fetchone()[0]
    assert methods["astra"][2] == str(len(BACKLOG)) and methods["astra"][5] == f"{mean_acc:.2f}"
    verdict_acc, verdict_f1 = conn.execute(
        "SELECT avg(value) FILTER (metric = 'accuracy'), avg(greatest(value, 0)) FILTER (metric = 'rca_f1') "
        "FROM evaluations WHERE method = 'verdict'").fetchone()
    headers = page.locator("table.methods thead th").all_inner_texts()
    verdict = dict(zip(headers, methods["verdict"]))
    assert verdict["analysed"] == verdict["scored"] == str(len(BACKLOG))
    assert verdict["mean accuracy"] == f"{verdict_acc:.2f}" and verdict["mean RCA F1"] == f"{verdict_f1:.2f}"
    assert page.locator("table.agreement tbody tr").count() >= 2
    failure = page.locator("table.failures tbody tr").all_inner_texts()
    assert len(failure) == 1 and "ghost-1" in failure[0] and "astra_eval" in failure[0]


def test_stratification_has_one_bar_per_fault_category_with_the_mart_means(built, browser, tmp_path) -> None:
    conn, site, _, _ = built
    categories = dict(conn.execute(
        "SELECT g.category, avg(e.value) FROM evaluations e JOIN ground_truth g USING (incident_id) "
        "WHERE e.method = 'astra' AND e.metric = 'accuracy' AND g.is_faulty GROUP BY 1").fetchall())
    assert len(categories) == 3  # misconfiguration, end_host_failure, link_failure
    page = _open(browser, site.out_dir, site.out_dir / "stratification.html", tmp_path)
    bars = page.locator("svg#chart-deterministic-category rect.bar")
    assert bars.count() == len(categories)
    shown = {bars.nth(i).get_attribute("data-label"): float(bars.nth(i).get_attribute("data-value"))
             for i in range(bars.count())}
    assert shown == pytest.approx(categories, abs=1e-4)
    assert page.locator("svg#chart-deterministic-category g.whisker").count() == 1  # only misconfiguration has n=2
    strata = page.locator("table.strata.category tbody tr")
    assert strata.count() == 3 and "Cohen" in page.locator("table.strata.category thead").inner_text()
    assert re.search(r"Kruskal–Wallis across 3 strata \(4 incidents\): H = [\d.]+, df = 2, p = [\d.]+",
                     page.locator("p.kw").first.inner_text())


def test_an_incident_page_shows_ticket_claims_with_evidence_submission_and_truth(built, browser, tmp_path) -> None:
    conn, site, _, _ = built
    title, description = conn.execute("SELECT t.title, t.description FROM incidents i JOIN tickets t USING "
                                      "(ticket_id) WHERE i.incident_id = 'sample-backlog-003'").fetchone()
    page = _open(browser, site.out_dir, site.out_dir / "incidents" / "sample-backlog-003.html", tmp_path)
    assert title in page.locator("h1").inner_text()
    assert page.locator("pre.ticket-description").inner_text().strip() == description.strip()
    final_round, root_cause = conn.execute("SELECT round, root_cause FROM astra_rounds WHERE incident_id = "
                                           "'sample-backlog-003' AND is_final").fetchone()
    astra = page.locator("section#astra")
    assert f"final round {final_round}" in astra.locator("h3").first.inner_text()
    assert root_cause.strip() in astra.locator("dl.facts").first.inner_text()
    claims = page.locator("table.claims tbody tr")
    stored = conn.execute("SELECT count(*) FROM claims WHERE incident_id = 'sample-backlog-003'").fetchone()[0]
    assert claims.count() == stored > 0
    text, quote = conn.execute("SELECT c.text, e.quote FROM claims c JOIN evidence e USING (incident_id, analyst, "
                               "claim_id) WHERE c.incident_id = 'sample-backlog-003' AND c.agent = 'log' AND "
                               "e.status = 'VERIFIED' ORDER BY c.seq LIMIT 1").fetchone()
    row = claims.filter(has_text=text[:60]).first
    assert row.locator("blockquote").inner_text().strip() == quote.strip()
    assert row.locator(".status-VERIFIED").count() == 1
    sade = page.locator("div.submission[data-method='sade']")
    assert "bgp_acl_block" in sade.inner_text() and "router1" in sade.inner_text()
    assert '"root_cause_name": ["bgp_acl_block"]' in sade.locator("pre.nika").inner_text()
    assert page.locator("table.steps.sade tbody tr").count() == conn.execute(
        "SELECT count(*) FROM sade_steps WHERE incident_id = 'sample-backlog-003' AND method = 'sade'").fetchone()[0]
    truth = page.locator("section#truth")
    assert "bgp_acl_block" in truth.inner_text() and "dropped TCP port 179" in truth.inner_text()
    healthy = _open(browser, site.out_dir, site.out_dir / "incidents" / "sample-backlog-047.html", tmp_path)
    assert "faulty\tno" in healthy.locator("section#truth dl").inner_text().replace("\n", "\t")
    assert "is anomaly" in healthy.locator("div.submission[data-method='sade']").inner_text()
    history = _open(browser, site.out_dir, site.out_dir / "incidents" / "sample-history-001.html", tmp_path)
    assert "No data yet" in history.locator("section#astra").inner_text()
    assert "No verdict yet" in history.locator("section#verdict").inner_text()  # no verdict fused: still a page


def _png_size(data: bytes) -> tuple[int, int]:
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_an_incident_page_opens_with_the_verdict_and_its_cited_statements(built, browser, tmp_path) -> None:
    conn, site, _, _ = built
    labels, devices, confidence, rule = conn.execute(
        "SELECT labels, devices, confidence, rule FROM verdicts WHERE incident_id = 'sample-backlog-003'").fetchone()
    page = _open(browser, site.out_dir, site.out_dir / "incidents" / "sample-backlog-003.html", tmp_path)
    sections = page.locator("main > section").evaluate_all("els => els.map(e => e.id)")
    assert sections[0] == "verdict" and sections.index("astra") > sections.index("ticket") > 0
    headline = page.locator("section#verdict p.headline").inner_text()
    shown = f"confidence {confidence:.2f}"
    assert f"{labels[0]} on {devices[0]}" in headline and shown in headline and rule in headline
    text = page.locator("main").inner_text()
    assert 0 < text.index(labels[0]) < text.index(shown) < text.index("Ground truth") < text.index("ASTRA report")

    quote, ref = conn.execute("SELECT quote, ref FROM verdict_claims WHERE incident_id = 'sample-backlog-003' AND "
                              "source = 'network' AND status = 'VERIFIED' AND section = 'evidence' ORDER BY seq "
                              "LIMIT 1").fetchone()
    verified = page.locator("li.statement[data-source='network']", has_text=quote).first
    assert verified.locator("blockquote").inner_text().strip() == quote.strip() and ref in verified.inner_text()
    assert verified.get_attribute("data-status") == "VERIFIED" and verified.locator(".status-VERIFIED").count() == 1
    assert "about this incident" in verified.inner_text()
    ref_quote, ref_source = conn.execute(
        "SELECT quote, source FROM verdict_claims WHERE incident_id = 'sample-backlog-003' AND status = 'REFERENCE' "
        "ORDER BY seq LIMIT 1").fetchone()
    reference = page.locator(f"li.statement[data-source='{ref_source}']", has_text=ref_quote[:60]).first
    assert reference.get_attribute("data-status") == "REFERENCE" and reference.locator(".status-REFERENCE").count() == 1
    style = "e => { const s = getComputedStyle(e); return [s.borderLeftColor, s.backgroundColor, s.borderTopStyle]; }"
    assert verified.evaluate(style) != reference.evaluate(style)  # marked apart, not only by a word
    assert page.locator("section#verdict div.verdict-part").evaluate_all("els => els.map(e => e.dataset.section)")[
        :2] == ["symptom", "evidence"]
    assert page.locator("section#verdict div.verdict-part[data-section='disagreement']").count() == 0
    shot = tmp_path / "verdict-003.png"
    page.locator("section#verdict").screenshot(path=str(shot))
    data = shot.read_bytes()
    width, height = _png_size(data)
    assert len(data) > 30000 and width > 800 and height > 600, (len(data), width, height)

    disputed = _open(browser, site.out_dir, site.out_dir / "incidents" / f"{DISAGREES}.html", tmp_path)
    assert disputed.locator("section#verdict .badge.disagree").inner_text() == "disagree: logs"
    part = disputed.locator("section#verdict div.verdict-part[data-section='disagreement']")
    assert "The sources disagreed" in part.locator("p.verdict-prose").inner_text()
    assert part.locator("li.statement.verified[data-source='logs'] blockquote").inner_text() == DISAGREEING_QUOTE


def test_the_incidents_list_leads_with_the_verdict_and_marks_disagreement(built, browser, tmp_path) -> None:
    conn, site, _, _ = built
    page = _open(browser, site.out_dir, site.out_dir / "incidents.html", tmp_path)
    table = page.locator("table.incidents").first
    headers = table.locator("thead th").all_inner_texts()
    verdict_columns = ["verdict", "verdict devices", "confidence", "sources agreeing", "disagreement"]
    assert max(headers.index(c) for c in verdict_columns) < min(headers.index("ASTRA"), headers.index("SADE"))
    rows = {r.split("\t")[0]: dict(zip(headers, r.split("\t"))) for r in table.locator("tbody tr").all_inner_texts()}
    assert set(rows) == set(BACKLOG)
    for incident_id, status, labels, devices, confidence, agreeing in conn.execute(
            "SELECT incident_id, status, labels, devices, confidence, agreeing FROM verdicts").fetchall():
        row = rows[incident_id]
        assert row["verdict"] == (", ".join(labels) if status == "fault" else "no fault found"), row
        assert row["verdict devices"] == (", ".join(devices) or "-") and row["confidence"] == f"{confidence:.2f}"
        assert row["sources agreeing"] == ", ".join(agreeing)
    assert rows[DISAGREES]["disagreement"] == "disagree: logs"
    marked = table.locator("tbody tr.disagree")
    assert marked.count() == 1 and DISAGREES in marked.inner_text()
    assert marked.locator(".badge.disagree").count() == 1
    assert {r["disagreement"] for k, r in rows.items() if k != DISAGREES} == {"-"}
    history = page.locator("table.incidents").nth(1).locator("tbody tr").all_inner_texts()
    assert len(history) == len(HISTORY) and all("no verdict yet" in r for r in history)


def test_rounds_sade_and_cost_pages_show_the_marts(built, browser, tmp_path) -> None:
    _conn, site, _, _ = built
    rounds = _open(browser, site.out_dir, site.out_dir / "rounds.html", tmp_path)
    criteria = rounds.locator("table.summary tbody tr").all_inner_texts()
    assert {c.split("\t")[0] for c in criteria} == {"root_cause_identification", "resolution_specificity",
                                                     "evidence_grounding", "coverage", "focus", "judge_mean",
                                                     "accuracy"}
    assert "Δ first→last" in rounds.locator("table.rounds thead").inner_text()
    sade = _open(browser, site.out_dir, site.out_dir / "sade.html", tmp_path)
    overall = {r.split("\t")[1]: r.split("\t") for r in sade.locator("table.sade.overall tbody tr").all_inner_texts()}
    assert (set(overall) == {"sade", "flat", "verdict"}
            and overall["sade"][2] == overall["verdict"][2] == str(len(BACKLOG)))
    assert sade.locator("table.sade.family tbody tr", has_text="healthy").count() == 3  # sade, flat, the verdict
    cost = _open(browser, site.out_dir, site.out_dir / "cost.html", tmp_path)
    assert cost.locator("table.cost-analyses tbody tr").count() == 4 * len(BACKLOG)  # astra, sade, flat, verdict


def test_the_query_helper_refuses_anything_but_a_mart(conn) -> None:
    from dashboards.query import MartReader

    reader = MartReader(conn)
    for name in ("tickets", "runs", "information_schema.tables", "mart_runs; DROP TABLE tickets",
                 "mart_not_a_documented_mart", 'mart_runs" UNION SELECT * FROM "tickets'):
        with pytest.raises(FaultlineError, match="only the marts"):
            reader.rows(name)
    conn.execute("CREATE TABLE mart_runs AS SELECT 'r1' AS run_id")  # a built mart reads fine
    reader = MartReader(conn)
    assert reader.rows("mart_runs") == [{"run_id": "r1"}]
    with pytest.raises(FaultlineError, match="no column"):
        reader.rows("mart_runs", where={"run_id = run_id OR 1": 1})
    with pytest.raises(FaultlineError, match="no column"):
        reader.rows("mart_runs", order_by=["(SELECT title FROM tickets)"])
    assert reader.rows("mart_cost") == [] and reader.missing == {"mart_cost"}  # not built yet: empty, remembered


def test_an_empty_warehouse_builds_a_site_that_says_no_data_yet(conn, browser, tmp_path) -> None:
    from dashboards import build_dashboards
    from faultline.marts import refresh_marts

    unbuilt = build_dashboards(conn, tmp_path / "unbuilt")  # marts never refreshed: still a site
    assert "mart_incidents" in unbuilt.missing_marts
    assert "have not been built" in (tmp_path / "unbuilt" / "index.html").read_text()
    refresh_marts(conn)
    site = build_dashboards(conn, tmp_path / "site")
    assert site.incident_pages == 0 and site.missing_marts == []
    assert sorted(p.name for p in site.pages) == sorted(SUMMARY_PAGES)
    for name in SUMMARY_PAGES:
        page = _open(browser, site.out_dir, site.out_dir / name, tmp_path)
        assert page.locator(".empty").count() >= 1, name
        assert "No data yet" in page.locator("main").inner_text(), name
        page.close()


def test_values_are_escaped_and_odd_ids_get_safe_files(conn, browser, tmp_path) -> None:
    from dashboards import build_dashboards
    from faultline.marts import refresh_marts

    evil = "<script>alert('x')</script> & <b>bold</b>"
    conn.execute("INSERT INTO incidents (incident_id, title, is_historical, created_at) VALUES (?, ?, false, now())",
                 ["../odd id/<1>", evil])
    conn.execute("INSERT INTO ground_truth VALUES (?, false, [], [], [], [], NULL, ?, 'test', now())",
                 ["../odd id/<1>", evil])
    _save_evil_verdict(conn, "../odd id/<1>", evil)
    refresh_marts(conn)
    site = build_dashboards(conn, tmp_path / "site")
    (incident,) = list((site.out_dir / "incidents").glob("*.html"))
    assert incident.parent == site.out_dir / "incidents" and re.fullmatch(r"[A-Za-z0-9._-]+\.html", incident.name)
    page = _open(browser, site.out_dir, incident, tmp_path)
    assert page.locator("script").count() == 0 and page.locator("main b").count() == 0
    assert evil in page.locator("h1").inner_text() and evil in page.locator("pre.resolution-note").inner_text()
    verdict = page.locator("section#verdict")
    assert evil in verdict.locator("p.headline").inner_text() and verdict.locator(".badge.disagree").count() == 1
    assert verdict.locator("blockquote").all_inner_texts() == [evil, evil]
    assert evil in verdict.locator("div.verdict-part[data-section='disagreement'] p.verdict-prose").inner_text()
    assert evil in verdict.locator("pre.verdict-report").text_content(), "the Markdown report (folded), escaped"
    listing = _open(browser, site.out_dir, site.out_dir / "incidents.html", tmp_path)
    listing.locator("table.incidents a").first.click()
    assert listing.url == incident.as_uri()


def _save_evil_verdict(conn, incident_id: str, evil: str) -> None:
    """A verdict whose every text field is markup, with a VERIFIED and a REFERENCE statement."""
    from faultline.verdict.records import Citation, Verdict, VerdictClaim
    from faultline.verdict.report import render
    from faultline.verdict.store import save_verdict

    claims = [VerdictClaim(seq=1, section="evidence", text=evil, quote=evil, status="VERIFIED",
                           citation=Citation(source="network", ref=evil, device=evil, detail=evil)),
              VerdictClaim(seq=2, section="fix", text=evil, quote=evil, status="REFERENCE",
                           citation=Citation(source="docs", ref=evil, detail=evil))]
    verdict = Verdict(incident_id=incident_id, status="fault", labels=[evil], devices=[evil], confidence=0.5,
                      rule=evil, rule_text=evil, agreeing=["network"], disagreeing=["logs"], symptom=evil,
                      root_cause=evil, fix=evil, verification=evil, disagreement=evil, claims=claims)
    save_verdict(conn, verdict.model_copy(update={"text": render(verdict)}))


def test_cli_builds_the_site_and_prints_the_index_path(run_cli, settings, capsys, tmp_path, monkeypatch) -> None:
    run_cli("dashboards", "build")
    out = capsys.readouterr().out.strip().splitlines()
    default = settings.duckdb_path.parent / "dashboards" / "index.html"
    assert out[-1] == str(default) and default.is_file()
    assert "No data yet" in default.read_text()
    if "dashboards_dir" in type(settings).model_fields:  # the nightly run's setting names the default folder
        monkeypatch.setenv("FAULTLINE_DASHBOARDS_DIR", str(tmp_path / "configured"))
        run_cli("dashboards", "build")
        assert capsys.readouterr().out.strip().splitlines()[-1] == str(tmp_path / "configured" / "index.html")
        monkeypatch.delenv("FAULTLINE_DASHBOARDS_DIR")
    run_cli("dashboards", "build", "--out", str(tmp_path / "elsewhere"), "--no-refresh")
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(tmp_path / "elsewhere" / "index.html")
    run_cli("dashboards", "build", "--out", "/proc/no-such-place", expect_exit=2)
