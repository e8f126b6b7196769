"""SADE's llm policy on recorded incidents, driven by a scripted fake model (never a real LLM)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faultline.llm import load_prompt
from faultline.llm.fake import scripted_model
from faultline.network.snapshot_backend import snapshot_backend
from faultline.sade.engine import diagnose
from faultline.sade.llm_policy import llm_policy_runner

REPO = Path(__file__).resolve().parents[1]
ARP_ON_ROUTER2 = REPO / "data" / "sample" / "history" / "sample-history-001"  # arp_acl_block on router2
HEALTHY = REPO / "data" / "sample" / "backlog" / "sample-backlog-047"  # simple_bgp healthy control
REMINDER = load_prompt("sade/reminder").text.splitlines()[0]


def act(action: str, **fields) -> str:
    return json.dumps({"action": action, **fields})


SCAN_ROUTER2_FILTERS = act("scan", device="router2", check="filters", reason="both pcs fail: router2 path")
SUBMIT = act("submit", answer="matches")


@pytest.fixture
def fast(settings):
    return settings.model_copy(update={"llm_backoff_s": 0.0, "llm_retries": 2})


def run(settings, folder: Path, steps: list, *, name: str, repeat_last: bool = False, **overrides):
    chosen = settings.model_copy(update=overrides) if overrides else settings
    with scripted_model(name, steps, repeat_last=repeat_last) as fake:
        policy, policy_name = llm_policy_runner(chosen, model=fake.model, incident_id=folder.name)
        diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name, policy=policy_name,
                        run_policy=policy)
    return diag, fake


def wandering(turns: int) -> list[str]:
    """A model that scans every phase-A check of the healthy control's devices in turn, each at most twice, and
    never submits."""
    moves = [act("scan", device=d, check=c) for d in ("router1", "router2", "pc1", "pc2")
             for c in ("interfaces", "filters", "neighbours", "link_counters")]
    return (moves * 2)[:turns]


def user_text(request: list[dict]) -> str:
    return request[-1]["content"]


def test_model_scans_the_owner_and_submits_the_right_answer(fast, conn):
    diag, fake = run(fast, ARP_ON_ROUTER2, [SCAN_ROUTER2_FILTERS, SUBMIT], name="good")
    assert diag.status == "submitted" and diag.policy == "llm:faultline-fake/good"
    assert diag.submission.v1.faulty_devices == ["router2"]
    assert diag.submission.v1.root_cause_name == ["arp_acl_block"]
    assert [r.resource_id for r in diag.submission.v2.root_causes] == ["node/router2"]
    # the initial scan is not a model choice; the model's scan is recorded with its phase and reason
    assert [(st.phase, st.tool, st.args) for st in diag.steps] == [
        ("initial", "reachability", {}), ("A", "nft_ruleset", {"dev": "router2"})]
    assert diag.steps[1].flags == ["acl_arp"] and "both pcs fail" in diag.steps[1].note
    # the model saw the symptoms first, then the fingerprint its scan made match
    first, second = user_text(fake.requests[0]), user_text(fake.requests[1])
    assert "pc1 -> pc2: unreachable" in first and "arp_acl_block" not in first
    assert "host_isolated at pc1 (failing with pc2) -> skills to try: host-ip" in first  # SADE's fault index
    assert "arp_acl_block on router2" in second and '"answer": "matches"' in second
    rows = conn.execute("SELECT stage, incident_id, model, prompt_name, prompt_hash, error FROM llm_calls").fetchall()
    assert rows == [("sade.policy", "sample-history-001", "faultline-fake/good", "sade/turn",
                     load_prompt("sade/turn").sha256, None)] * 2


def test_actions_the_phase_does_not_allow_are_refused_and_cost_a_turn(fast):
    steps = [act("scan", device="router2", check="frr_config"),  # a phase B check while in phase A
             act("advance", phase="D"),  # D before A was scanned
             SUBMIT,  # nothing matches yet
             act("scan", device="router9", check="filters")]  # no such device
    diag, fake = run(fast, ARP_ON_ROUTER2, steps, name="refused", sade_max_turns=4)
    # out of turns with users failing and nothing matched: a fault not identified, never healthy or no answer
    assert diag.status == "submitted" and diag.submission.v1.is_anomaly
    assert diag.submission.v1.root_cause_name == [] and "fault not identified" in diag.submission.summary
    assert [st.tool for st in diag.steps] == ["reachability"]  # nothing refused touched the network
    assert len(fake.requests) == 4
    told = [user_text(r).split("Result of your last action:\n")[1].split("\n")[0] for r in fake.requests[1:]]
    assert told[0] == ("refused: 'frr_config' is a phase B check and the current phase is A; phase A checks are "
                       "['filters', 'interfaces', 'link_counters', 'neighbours'] or 'all'")
    assert told[1] == "refused: phase D needs phase(s) A, B, C scanned at least once first"
    assert told[2].startswith("refused: no fingerprint matches yet")
    assert "Turn 4 of 4 (1 left" in user_text(fake.requests[3])


def test_refusal_then_correction_still_submits(fast):
    steps = [act("scan", device="router2", check="frr_config"), SCAN_ROUTER2_FILTERS, SUBMIT]
    diag, fake = run(fast, ARP_ON_ROUTER2, steps, name="corrects")
    assert diag.submission.v1.root_cause_name == ["arp_acl_block"] and len(fake.requests) == 3


def test_reminder_appears_once_at_half_budget_and_empty_budget_is_no_submission(fast, conn):
    diag, fake = run(fast, HEALTHY, wandering(20), name="idle")  # busy, never repeating a move thrice, no submit
    assert len(fake.requests) == 20  # SADE's default budget
    with_reminder = [i + 1 for i, r in enumerate(fake.requests) if REMINDER in user_text(r)]
    assert with_reminder == [10]
    assert diag.status == "no_submission" and diag.submission is None  # no symptom, no match, no submit
    assert "did not submit within 20 turns" in diag.error
    assert conn.execute("SELECT count(*) FROM llm_calls WHERE stage = 'sade.policy'").fetchone()[0] == 20


def test_out_of_turns_falls_back_to_the_matches(fast):
    steps = [SCAN_ROUTER2_FILTERS, act("read_skill", skill="acl")]
    diag, _ = run(fast, ARP_ON_ROUTER2, steps, name="slow", sade_max_turns=2)
    assert diag.status == "submitted" and diag.submission.v1.root_cause_name == ["arp_acl_block"]
    assert diag.steps[-1].tool == "read_skill" and diag.steps[-1].probe_calls == 0


def test_skill_text_is_shown_after_read_skill(fast):
    steps = [act("read_skill", skill="acl"), SCAN_ROUTER2_FILTERS, SUBMIT]
    diag, fake = run(fast, ARP_ON_ROUTER2, steps, name="skill")
    assert "# Packet-filter (ACL) faults" not in user_text(fake.requests[0])
    assert "# Packet-filter (ACL) faults" in user_text(fake.requests[1])
    assert diag.submission.v1.faulty_devices == ["router2"]


def test_invalid_json_is_retried_by_the_gateway_without_costing_a_turn(fast, conn):
    steps = ["I would look at router2 first.", act("scan", device="router2"), SCAN_ROUTER2_FILTERS, SUBMIT]
    diag, fake = run(fast, ARP_ON_ROUTER2, steps, name="sloppy", sade_max_turns=2)
    assert diag.status == "submitted" and diag.submission.v1.root_cause_name == ["arp_acl_block"]
    errors = [e for (e,) in conn.execute("SELECT error FROM llm_calls ORDER BY created_at").fetchall()]
    assert len(errors) == 4 and errors[2:] == [None, None]
    assert "not valid JSON" in errors[0] and "needs check" in errors[1]
    assert "rejected" in fake.requests[1][-1]["content"]  # the model was told what was wrong


def test_healthy_with_users_failing_is_submitted_as_a_fault_not_identified(fast, monkeypatch):
    import faultline.sade.matcher as matcher

    monkeypatch.setattr(matcher, "load_skills", lambda: ())  # no fingerprint can explain what the users see
    sweep = []
    for phase in ("A", "B", "C", "D"):
        if phase != "A":
            sweep.append(act("advance"))
        sweep.append(act("scan", device="all", check="all"))
    sweep.append(act("submit", answer="healthy"))
    diag, _ = run(fast, ARP_ON_ROUTER2, sweep, name="blind")
    assert diag.status == "submitted" and diag.submission.v1.is_anomaly, diag.error
    assert diag.submission.v1.root_cause_name == [] and diag.submission.v1.faulty_devices


def test_healthy_only_after_a_clean_sweep(fast):
    sweep = [act("submit", answer="healthy")]  # refused: nothing scanned yet
    for phase in ("A", "B", "C", "D"):
        if phase != "A":
            sweep.append(act("advance"))
        sweep.append(act("scan", device="all", check="all"))
    sweep.append(act("submit", answer="healthy"))
    diag, fake = run(fast, HEALTHY, sweep, name="sweep")
    assert diag.status == "submitted" and diag.submission.v1.is_anomaly is False
    assert {st.phase for st in diag.steps} == {"initial", "A", "B", "C", "D"}
    assert "refused: healthy needs every check of every phase" in user_text(fake.requests[1])
    assert '"answer": "healthy"' in user_text(fake.requests[-1])


def test_going_back_to_an_earlier_phase_is_allowed(fast):
    steps = [act("scan", device="pc1", check="interfaces"), act("advance"), act("advance", phase="A"),
             SCAN_ROUTER2_FILTERS, SUBMIT]
    diag, fake = run(fast, ARP_ON_ROUTER2, steps, name="back")
    assert "now in phase A" in user_text(fake.requests[3])
    assert diag.submission.v1.faulty_devices == ["router2"]


def test_cli_diagnose_with_the_llm_policy_saves_the_submission(settings, run_cli, capsys):
    with scripted_model("cli", [SCAN_ROUTER2_FILTERS, SUBMIT]) as fake:
        run_cli("diagnose", str(ARP_ON_ROUTER2), "--policy", "llm", "--model", fake.model, "--save")
    out = capsys.readouterr().out
    assert "root_cause_name=['arp_acl_block']" in out
    from faultline import db

    conn = db.connect(settings.duckdb_path)
    try:
        row = conn.execute("SELECT labels, devices, status FROM submissions").fetchone()
        calls = conn.execute("SELECT count(*) FROM llm_calls WHERE incident_id = 'sample-history-001'").fetchone()
    finally:
        conn.close()
    assert row == (["arp_acl_block"], ["router2"], "submitted") and calls == (2,)


def test_no_model_is_a_clear_error(settings):
    from faultline.errors import FaultlineError

    with pytest.raises(FaultlineError, match="needs a model") as err:
        llm_policy_runner(settings, model=None, incident_id="x")
    assert "FAULTLINE_SADE_LLM_MODEL" in str(err.value)


def test_eval_sade_with_the_llm_policy_scores_the_models_answers(run_cli, capsys, tmp_path) -> None:
    import shutil

    corpus = tmp_path / "corpus"
    shutil.copytree(ARP_ON_ROUTER2, corpus / ARP_ON_ROUTER2.name)
    with scripted_model("eval-good", [SCAN_ROUTER2_FILTERS, SUBMIT]) as fake:
        run_cli("eval", "sade", "--corpus", str(corpus), "--policy", "llm", "--model", fake.model, "--json")
    report = json.loads(capsys.readouterr().out)
    (incident,) = report["incidents"]
    assert incident["submission"]["v1"]["root_cause_name"] == ["arp_acl_block"]
    assert len(fake.requests) == 2  # the model chose both steps: the policy reached it


def test_a_model_going_round_in_circles_gets_the_deterministic_walk_and_says_so(fast, conn):
    stuck = act("scan", device="pc1", check="interfaces", reason="pc1 again")
    diag, fake = run(fast, ARP_ON_ROUTER2, [stuck], name="circles", repeat_last=True)
    assert diag.status == "submitted" and diag.submission.v1.root_cause_name == ["arp_acl_block"]
    taken = [st for st in diag.steps if st.tool == "llm_fallback"]
    assert taken and taken[0].args["turn"] == 3  # asked twice is the model's own; the third time is not
    assert taken[0].note.startswith("model repeated itself: 'scan interfaces on pc1' asked 3 times; "
                                    "the deterministic walk's next step was taken: ")
    assert len(fake.requests) < fast.sade_max_turns  # the walk found the fault before the budget ran out
