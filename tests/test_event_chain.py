"""Causes before their echoes, and time that fits the ticket, on a syslog archive built from the vendor event
catalogue's real samples (`bench/event_cases.py`): per platform family, a root event on one router and the echoes
it causes at the far end give one cause, at the right end; a line logged after the ticket was opened is no cause."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from bench.event_cases import BGP_ROOTS, DEVICE_ROOTS, LINK_ROOTS, Case, build_cases, write_archive, write_inventory

FAMILIES = ("eos", "frr", "ios", "iosxr", "junos", "linux", "nxos")


def _one_case_per_platform() -> dict[str, Case]:
    """Each platform's first link or BGP root case (one with a far end), else its first device root case."""
    chosen: dict[str, Case] = {}
    cases = build_cases()
    for order in (LINK_ROOTS + BGP_ROOTS, DEVICE_ROOTS):
        for case in cases:
            if case.platform not in chosen and case.cls in order:
                chosen[case.platform] = case
    return chosen


def _warehouse(tmp: Path, cases: list[Case], tickets: list[dict]):
    from faultline import db
    from faultline.config import Settings
    from faultline.ingest.api import ingest_paths
    from faultline.ingest.inventory import ingest_inventory

    settings = Settings(duckdb_path=tmp / "fl.duckdb", lancedb_dir=tmp / "lancedb", progress=False,
                        log_timezone="UTC", ticket_timezone="UTC")
    conn = db.open_warehouse(settings)
    ingest_paths(conn, settings, "logs", write_archive(cases, tmp / "archive"))
    ingest_inventory(conn, settings, write_inventory(cases, tmp / "inventory"), name="noc")
    (tmp / "tickets.jsonl").write_text("".join(json.dumps({k: v for k, v in t.items()
                                                           if k not in ("case_id", "variant")}) + "\n"
                                               for t in tickets))
    ingest_paths(conn, settings, "tickets", [tmp / "tickets.jsonl"])
    return settings, conn


def _analyse(settings, conn, ticket_id: str):
    from faultline.astra.unit import run_astra

    result = run_astra(settings, conn, ticket_id, max_rounds=1).result
    log = next(o for o in reversed(result.outputs) if o.agent == "log")
    return result.rounds[-1].report, log.data.get("event_chain") or {}, log


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    cases = _one_case_per_platform()
    tickets = [t for case in cases.values() for t in case.tickets() if t["variant"] in ("device", "peer")]
    settings, conn = _warehouse(tmp_path_factory.mktemp("events"), list(cases.values()), tickets)
    yield settings, conn, cases
    conn.close()


def test_every_platform_family_has_a_case():
    assert set(_one_case_per_platform()) == set(FAMILIES)


@pytest.mark.parametrize("platform", FAMILIES)
@pytest.mark.parametrize("variant", ["device", "peer"])
def test_a_root_event_and_its_far_end_echoes_give_one_cause_at_the_right_end(archive, platform, variant):
    settings, conn, cases = archive
    case = cases[platform]
    report, chain, log = _analyse(settings, conn, f"{case.case_id}-{variant}")
    assert report.label == case.cls, log.text
    assert report.devices[:1] == [case.a], log.text  # the root event's device first, whichever end the ticket named
    assert chain["root"]["device"] == case.a and chain["root"]["cls"] == case.cls
    far = [line for line in case.lines if line[1] == case.b and line[0] <= case.opened]
    if far:  # the far end logged its echoes: it is the affected peer, never the cause
        assert chain["affected_peers"] == [case.b], log.text
        assert case.b in report.root_cause and "affected peer" in report.root_cause
    planted = [line[2] for line in case.lines if line[0] > case.opened and line[1] == case.a]
    later = [e["cls"] for e in chain["later"]]
    assert later == planted and case.cls not in later  # the event logged after the opening is listed as later


def test_a_line_logged_after_the_ticket_was_opened_is_not_its_cause_unless_the_problem_goes_on(tmp_path):
    case = next(c for c in build_cases(["iosxr"]) if c.cls == "interface_admin_down")
    # the only event is the port shut 11 minutes after the ticket was opened
    late = Case(case.case_id, case.platform, case.cls, case.sample, case.a, case.b, case.c, case.at)
    late.lines = [(case.opened + timedelta(minutes=11), case.a, case.cls, case.sample)]
    tickets = late.tickets()[:1]
    ongoing = dict(tickets[0], ticket_id=f"{case.case_id}-still",
                   description=tickets[0]["description"] + " The link is still down.")
    settings, conn = _warehouse(tmp_path, [late], [tickets[0], ongoing])
    report, chain, log = _analyse(settings, conn, tickets[0]["ticket_id"])
    assert report.label != case.cls and not chain
    assert "Logged after the ticket was opened (later, not its cause)" in log.text
    assert any("logged only after the ticket was opened" in s["note"] for s in log.data["signals"])
    report, chain, log = _analyse(settings, conn, ongoing["ticket_id"])
    assert report.label == case.cls and 'the ticket says the problem goes on ("still")' in log.text


def test_of_two_events_before_the_ticket_the_one_nearest_its_moment_is_the_cause(tmp_path):
    cases = build_cases(["iosxr"])
    near = next(c for c in cases if c.cls == "interface_admin_down")
    far = next(c for c in cases if c.cls == "power_supply_failure")
    both = Case(near.case_id, "iosxr", near.cls, near.sample, near.a, near.b, near.c, near.at)
    both.lines = [(near.at - timedelta(minutes=12), near.a, far.cls, far.sample),
                  (near.at, near.a, near.cls, near.sample)]
    settings, conn = _warehouse(tmp_path, [both], both.tickets()[:1])
    report, chain, log = _analyse(settings, conn, both.tickets()[0]["ticket_id"])
    assert report.label == near.cls and chain["root"]["cls"] == near.cls, log.text
    weighed = [s for s in log.data["signals"] if s["label"] == far.cls]
    assert weighed and "12 minutes from the ticket's moment" in weighed[0]["note"]  # in scope, but weighed down


def test_only_the_far_end_logged_the_report_says_which_end_is_missing(tmp_path):
    case = next(c for c in build_cases(["iosxr"]) if c.cls == "interface_admin_down")
    # a's own lines are gone (its logs never reached the archive): only b's carrier loss and BGP drop remain
    lone = Case(case.case_id, "iosxr", case.cls, case.sample, case.a, case.b, case.c, case.at)
    lone.lines = [line for line in case.lines if line[1] == case.b and line[0] <= case.opened]
    from faultline.events.catalogue import catalogue

    login = catalogue().messages_of("login_aaa")[0].samples[0]
    lone.lines.append((case.at - timedelta(hours=1), case.a, "login_aaa", login))  # a logged, but not then
    ticket = lone.tickets()[1]  # names b
    settings, conn = _warehouse(tmp_path, [lone], [ticket])
    report, chain, log = _analyse(settings, conn, ticket["ticket_id"])
    assert chain["root"]["role"] == "symptom" and chain["root"]["device"] == case.b, log.text
    assert "no root event was logged" in chain["missing"] and case.a in chain["missing"]
    assert "not why" in report.root_cause


def test_the_verdict_and_its_page_show_the_chain_and_generic_guidance_for_an_imported_ticket(archive):
    from dashboards.pages_verdict import verdict_section
    from dashboards.query import MartReader
    from faultline.marts import refresh_marts
    from faultline.outcome import IncidentRef
    from faultline.verdict.unit import run_verdict

    settings, conn, cases = archive
    case = cases["iosxr"]
    ticket = f"{case.case_id}-peer"
    _analyse(settings, conn, ticket)
    verdict = run_verdict(settings, conn, IncidentRef(incident_id=ticket, ticket_id=ticket),
                          network_backend=None).verdict
    assert verdict.labels == [case.cls] and verdict.devices[:1] == [case.a]
    assert verdict.category == "link_failure" and "(None)" not in verdict.root_cause
    chain = [c for c in verdict.claims if c.section == "chain"]
    archive_lines = {" ".join(p.read_text().split()) for p in (settings.duckdb_path.parent / "archive").glob("*.log")}
    assert chain[0].text.startswith("Root event") and chain[0].citation.device == case.a
    assert any(c.text.startswith("Echo at the far end") and c.citation.device == case.b for c in chain)
    assert all(c.status == "VERIFIED" and c.quote in " ".join(archive_lines) for c in chain)
    assert "Generic guidance" in verdict.fix and "not from this incident" in verdict.fix and not verdict.fix_known
    assert "**Event chain" in verdict.text
    refresh_marts(conn, settings)
    incident = MartReader(conn).rows("mart_incidents", where={"incident_id": ticket})[0]
    page = str(verdict_section(MartReader(conn), incident))
    assert 'data-section="chain"' in page and case.b in page
