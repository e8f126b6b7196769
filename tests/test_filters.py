"""The filter model on real listings (tests/cases/filters, recorded in throwaway namespaces of this kernel: rules
written by iptables-nft, legacy iptables and native nft, an htb shaper under load), and what the filter and qdisc
checks make of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from faultline.network import parse_services as ps
from faultline.network import parsers as pp
from faultline.network.filters import merged_rules
from faultline.network.records import FilterRule
from faultline.sade.scans.l2 import judge_rule

CASES = Path(__file__).parent / "cases" / "filters"


def _text(name: str) -> str:
    return (CASES / name).read_text()


def _by_text(rules: list[FilterRule], *words: str) -> FilterRule:
    [rule] = [r for r in rules if all(w in r.text for w in words)]
    return rule


def test_iptables_nft_xt_target_is_a_reject_not_a_user_space_queue() -> None:
    ruleset = ps.parse_nft("web", _text("iptables_nft_ruleset.json"))
    reject = next(r for r in ruleset.filters if r.dports == ["80"])
    assert (reject.verdict, reject.protocol, reject.hook) == ("reject", "tcp", "input")
    assert judge_rule(reject, []) == "acl_http"
    assert next(r for r in ruleset.rules if r.matches == ["tcp dport == 80"]).verdict == "reject"


def test_iptables_nft_statistic_match_reads_as_a_share_even_without_its_options() -> None:
    ruleset = ps.parse_nft("h", _text("iptables_nft_ruleset.json"))
    out = next(r for r in ruleset.filters if r.chain == "OUTPUT")
    assert (out.verdict, out.oif, out.partial, out.share) == ("drop", "eth0", True, None)
    assert judge_rule(out, []) == "random_drop"  # not "drop everything leaving eth0"


def test_iptables_text_decodes_probability_rate_ports_and_reject_type() -> None:
    rules = ps.parse_iptables("h", "filter", _text("iptables_nft_filter_S.txt")).filters
    rand = _by_text(rules, "--probability")
    assert (rand.oif, rand.verdict, round(rand.share or 0, 2), rand.partial) == ("eth0", "drop", 0.4, True)
    nth = _by_text(rules, "--every 3")
    assert nth.partial and round(nth.share or 0, 3) == 0.333
    assert _by_text(rules, "REJECT", "--dport 80").verdict_arg == "tcp-reset"
    assert _by_text(rules, "multiport").dports == ["80", "443"]
    above = _by_text(rules, "hashlimit-above")
    assert (above.rate, above.rate_over) == ("100/sec", True)
    assert _by_text(rules, "--length").length == "1400-65535"
    assert _by_text(rules, "INVALID").ct_state == ["invalid"]


def test_judgements_on_the_decoded_rules() -> None:
    rules = ps.parse_iptables("h", "filter", _text("iptables_nft_filter_S.txt")).filters
    kinds = {r.text: judge_rule(r, rules[:i]) for i, r in enumerate(rules)}
    assert kinds[_by_text(rules, "multiport").text] == "acl_http"
    assert kinds[_by_text(rules, "--dport 179").text] == "acl_bgp"
    assert kinds[_by_text(rules, "-p ospf").text] == "acl_ospf"
    assert kinds[_by_text(rules, "icmp-type 8").text] == "acl_icmp"
    assert kinds[_by_text(rules, "--length").text] == "acl_length"
    assert kinds[_by_text(rules, "hashlimit").text] == "rate_limited"
    # udp/53 accepted up to 10/s, then dropped: a rate limit in two rules, not a DNS block
    assert kinds[_by_text(rules, "--dport 53 -j DROP").text] == "rate_limited"
    assert kinds[_by_text(rules, "INVALID").text] is None
    assert kinds[_by_text(rules, "-j mychain").text] is None


def test_nft_and_iptables_listings_of_the_same_rules_merge_once() -> None:
    nft = ps.parse_nft("h", _text("iptables_nft_ruleset.json")).filters
    ipt = ps.parse_iptables("h", "filter", _text("iptables_nft_filter_S.txt")).filters
    merged = merged_rules(nft, ipt)
    assert len(merged) == len(nft) == len(ipt)
    out = next(r for r in merged if r.chain == "OUTPUT")
    assert out.source == "nft" and round(out.share or 0, 2) == 0.4 and out.packets == 0  # decoded, nft's counters


def test_legacy_iptables_rules_are_added_where_nft_shows_nothing() -> None:
    nft = ps.parse_nft("h", _text("native_nft_ruleset.json")).filters
    legacy = ps.parse_iptables("h", "filter", _text("iptables_legacy_filter_S.txt"))
    saved = ps.parse_iptables("h", "filter", _text("iptables_legacy_save.txt"))
    assert saved.filters == legacy.filters and saved.policies == legacy.policies == {
        "INPUT": "ACCEPT", "FORWARD": "ACCEPT", "OUTPUT": "ACCEPT"}
    merged = merged_rules(nft, legacy.filters)
    assert len(merged) == len(nft) + len(legacy.filters)
    assert {r.source for r in merged[len(nft):]} == {"iptables"}


def test_native_nft_numgen_limit_over_length_and_arp() -> None:
    rules = ps.parse_nft("h", _text("native_nft_ruleset.json")).filters
    numgen = next(r for r in rules if "numgen" in r.text)
    assert (numgen.oif, numgen.share, judge_rule(numgen, [])) == ("eth0", 0.6, "random_drop")
    over = next(r for r in rules if r.rate)
    assert over.rate_over and over.daddr == ["10.9.0.2"] and judge_rule(over, []) == "rate_limited"
    assert judge_rule(next(r for r in rules if r.length), []) == "acl_length"
    assert judge_rule(next(r for r in rules if r.icmp_types), []) == "acl_icmp"
    assert judge_rule(next(r for r in rules if r.family == "arp"), []) == "acl_arp"
    assert judge_rule(next(r for r in rules if r.ct_state), []) is None
    assert judge_rule(next(r for r in rules if r.protocol == "ospf"), []) == "acl_ospf"


def test_nfqueue_written_by_iptables_is_a_queue() -> None:
    [rule] = ps.parse_nft("dns", _text("nfqueue_nft_ruleset.json")).filters
    assert (rule.verdict, rule.sports, judge_rule(rule, [])) == ("queue", ["53"], "traffic_diverted")
    [text] = ps.parse_iptables("dns", "mangle", _text("nfqueue_mangle_S.txt")).filters
    assert (text.verdict, text.verdict_arg, text.oif) == ("queue", "7", "eth0")


@pytest.mark.parametrize("line", ["-A INPUT -p tcp ! --dport 22 -j DROP", "-A INPUT -j", "-A", "-P INPUT DROP",
                                  "-A INPUT -m comment --comment 'unbalanced -j DROP"])
def test_odd_iptables_lines_never_raise(line: str) -> None:
    rules = ps.parse_iptables("h", "filter", line).filters
    assert all(r.dports in ([], ["!22"]) for r in rules)


def test_htb_qdisc_with_a_backlog_is_read() -> None:
    table = pp.parse_qdiscs("h", _text("htb_queue_qdisc.json"))
    htb = next(q for q in table.qdiscs if q.kind == "htb")
    assert htb.root and htb.backlog > 0 and htb.qlen > 0 and htb.drops == 0 and htb.overlimits > 0


# --- the checks on a one-device network answering recorded listings -------------------------------------------

NFT = ("nft", "-j", "list", "ruleset")
IPT = ("iptables", "-t", "filter", "-S")
TC = ("tc", "-s", "-j", "qdisc", "show")
EMPTY_NFT = '{"nftables": [{"metainfo": {"version": "1.0.6"}}]}'
DEFAULT_QDISC = ('[{"kind":"noqueue","handle":"0:","dev":"eth0","root":true,"options":{},"bytes":0,"packets":0,'
                 '"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0}]')


def _session(now: dict[tuple[str, ...], str], before: dict[tuple[str, ...], str] | None = None):
    from faultline.network.backend import Backend
    from faultline.network.devices import Device, StaticDirectory
    from faultline.network.registry import ProbeContext
    from faultline.network.runner import CommandResult
    from faultline.network.snapshot import ReplayRunner
    from faultline.sade.session import Session

    directory = StaticDirectory([Device(name="h", role="host", namespace="ns-h", addresses=("10.0.0.2/24",))])

    def ctx(outputs: dict[tuple[str, ...], str]) -> ProbeContext:
        results = [CommandResult(device="h", namespace="ns-h", argv=["ip", "netns", "exec", "ns-h", *argv],
                                 exit_code=0, stdout=text, stderr="", duration_s=0.0) for argv, text in outputs.items()]
        return ProbeContext(directory=directory, runner=ReplayRunner(results, 10.0, 1 << 20))

    return Session(Backend(kind="snapshot", ctx=ctx(now), baseline_ctx=ctx(before) if before is not None else None))


def _flags(session) -> dict[str, dict]:
    return {f.kind: f.attrs for f in session.flags}


def test_filter_check_reads_iptables_only_when_nft_hides_a_blocking_rules_options() -> None:
    from faultline.sade.scans.l2 import _filters

    s = _session({NFT: _text("iptables_nft_ruleset.json"), IPT: _text("iptables_nft_filter_S.txt")})
    _filters(s, s.device("h"))
    assert [st.tool for st in s.steps] == ["nft_ruleset", "iptables_rules"]
    flags = _flags(s)
    assert flags["random_drop"]["ifname"] == "eth0"
    assert any(f.kind == "acl_http" and f.attrs["verdict"] == "reject" for f in s.flags)
    assert "traffic_diverted" not in flags  # an iptables REJECT is not a user-space queue
    quiet = _session({NFT: _text("nfqueue_nft_ruleset.json")})
    _filters(quiet, quiet.device("h"))
    assert [st.tool for st in quiet.steps] == ["nft_ruleset"] and set(_flags(quiet)) == {"traffic_diverted"}


def test_filter_check_flags_only_rules_the_baseline_did_not_have() -> None:
    from faultline.sade.scans.l2 import _filters

    listing = {NFT: _text("native_nft_ruleset.json")}
    s = _session(listing, before=listing)
    _filters(s, s.device("h"))
    assert s.flags == []
    new = _session(listing, before={NFT: EMPTY_NFT})
    _filters(new, new.device("h"))
    assert {"random_drop", "rate_limited", "acl_arp"} <= set(_flags(new))
    assert all(f.vs_baseline for f in new.flags)


def test_filter_check_reads_legacy_iptables_when_the_baseline_shows_the_device_uses_it() -> None:
    from faultline.sade.scans.l2 import _filters

    legacy = _text("iptables_legacy_filter_S.txt")
    s = _session({NFT: EMPTY_NFT, IPT: legacy}, before={NFT: EMPTY_NFT, IPT: "-P INPUT ACCEPT\n-A INPUT -j ACCEPT\n"})
    _filters(s, s.device("h"))
    assert {"acl_http", "random_drop", "rate_limited"} <= set(_flags(s))


def test_qdisc_check_a_shaper_that_queues_is_throttling_not_incast() -> None:
    from faultline.sade.matcher import match
    from faultline.sade.scans.control import _qdiscs

    for before in (None, {TC: DEFAULT_QDISC}):
        s = _session({TC: _text("htb_queue_qdisc.json")}, before=before)
        _qdiscs(s, s.device("h"))
        assert {"tc_shaper", "shaper_queueing"} <= set(_flags(s)) and "shaper_dropping" not in _flags(s)
        [m] = match(s.flags, roles={"h": "host"})
        assert (m.label, m.devices) == ("link_bandwidth_throttling", ["h"])


def test_qdisc_check_the_baselines_own_shaper_is_judged_by_its_load_since_then() -> None:
    import json

    from faultline.sade.scans.control import _qdiscs

    htb = _text("htb_queue_qdisc.json")
    same = _session({TC: htb}, before={TC: htb})
    _qdiscs(same, same.device("h"))
    assert same.flags == []  # the shaper and its queue were there when the network was healthy
    idle = json.loads(htb)
    for q in idle:
        q.update(bytes=0, packets=0, overlimits=0, backlog=0, qlen=0)
    loaded = json.loads(htb)
    for q in loaded:
        if q["kind"] == "htb":
            q["overlimits"] = 600
    s = _session({TC: json.dumps(loaded)}, before={TC: json.dumps(idle)})
    _qdiscs(s, s.device("h"))
    assert set(_flags(s)) == {"shaper_queueing"} and _flags(s)["shaper_queueing"]["overlimits"] == 600


def test_a_drop_in_a_chain_reached_by_a_jump_blocks_what_the_jump_selected() -> None:
    from faultline.network.filters import through_jumps

    text = "-A INPUT -p tcp -m tcp --dport 80 -j BLOCK\n-A BLOCK -j LOG\n-A BLOCK -j SHARE\n-A SHARE -m statistic " \
           "--mode random --probability 0.5 -j DROP\n-A ORPHAN -j DROP\n"
    rules = through_jumps(ps.parse_iptables("web", "filter", text).filters)
    drops = {r.chain: r for r in rules if r.verdict == "drop"}
    assert drops["SHARE"].hook == "input" and drops["SHARE"].dports == ["80"] and drops["SHARE"].share == 0.5
    assert judge_rule(drops["SHARE"], []) == "random_drop"
    assert drops["ORPHAN"].hook is None and len(rules) == 5
