"""What a packet-filter rule does as the kernel runs it: one `FilterRule` per rule, from either source.

nftables JSON (`nft -j list ruleset`) carries native expressions and, for rules iptables-nft wrote, `xt`
expressions that name an iptables match or target without its options; `iptables -S` / `iptables-save` text
carries every option (legacy or nft-backed). `merged_rules` makes one list per device: the nft rules of a table
iptables also printed take the decoded iptables form (`filters_iptables`; the same kernel rules, read once), and
iptables rules no nft table shows (the legacy backend) are added. Pure functions, never raise.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from faultline.network.records import FilterRule

HOOKS = {"INPUT": "input", "OUTPUT": "output", "FORWARD": "forward", "PREROUTING": "prerouting",
         "POSTROUTING": "postrouting"}
# iptables targets as the verdict the kernel applies (anything else marks, logs or rewrites and goes on)
TARGETS = {"ACCEPT": "accept", "DROP": "drop", "REJECT": "reject", "NFQUEUE": "queue", "QUEUE": "queue",
           "RETURN": "return"}
_NFT_VERDICTS = ("accept", "drop", "reject", "queue", "return", "continue", "jump", "goto")
PROTO_NUMBERS = {"1": "icmp", "6": "tcp", "17": "udp", "89": "ospf", "58": "ipv6-icmp"}


# --- nftables JSON ---------------------------------------------------------------------------------------------

def _value(right: Any) -> list[str]:
    """The values an nft match compares with, as strings ("80", "1000-2000", "10.0.0.0/8")."""
    if isinstance(right, dict):
        if "set" in right:
            return [v for item in right["set"] for v in _value(item)]
        if "range" in right and isinstance(right["range"], list) and len(right["range"]) == 2:
            return [f"{right['range'][0]}-{right['range'][1]}"]
        if "prefix" in right:
            return [f"{right['prefix'].get('addr')}/{right['prefix'].get('len')}"]
        return [str(right)]
    if isinstance(right, list):
        return [v for item in right for v in _value(item)]
    return [str(right)]


def _key(left: Any) -> str:
    """"tcp dport", "meta l4proto", "numgen", "ct state", ... for the left side of a match."""
    if not isinstance(left, dict):
        return str(left)
    if "payload" in left:
        return f"{left['payload'].get('protocol', '?')} {left['payload'].get('field', '?')}"
    if "meta" in left:
        return f"meta {left['meta'].get('key', '?')}"
    if "ct" in left:
        return f"ct {left['ct'].get('key', '?')}"
    if "numgen" in left:
        return "numgen"
    if "&" in left:  # `meta random & 2147483647` (iptables-nft's translation of a statistic match)
        return _key(left["&"][0]) if isinstance(left["&"], list) and left["&"] else "?"
    return next(iter(left), "?")


def _numgen_share(left: dict, op: str, right: Any) -> float | None:
    """The share of packets `numgen random|inc mod N < K` (or `== K`) selects."""
    mod = left["numgen"].get("mod")
    if not isinstance(mod, int) or mod <= 0:
        return None
    try:
        k = int(right)
    except (TypeError, ValueError):
        return None
    picked = {"<": k, "<=": k + 1, ">": mod - k - 1, ">=": mod - k, "==": 1, "!=": mod - 1}.get(op)
    return None if picked is None else max(0.0, min(1.0, picked / mod))


def _apply_match(rule: dict[str, Any], m: dict[str, Any]) -> None:
    left, op, right = m.get("left"), m.get("op", "=="), m.get("right")
    key, values = _key(left), _value(right)
    negated = op == "!="
    shown = [f"!{v}" for v in values] if negated else values
    if isinstance(left, dict) and "numgen" in left:
        rule["share"] = _numgen_share(left, op, right)
        rule["partial"] = rule["share"] is None or rule["share"] < 1.0
        gen = left["numgen"]
        rule["matches"].append(f"numgen {gen.get('mode', '?')} mod {gen.get('mod', '?')} {op} {right}")
        return
    if key == "meta random":
        share = int(right) / 2 ** 31 if op in ("<", "<=") and isinstance(right, int) else None
        rule["share"] = None if share is None else max(0.0, min(1.0, share))
        rule["partial"] = rule["share"] is None or rule["share"] < 1.0
        rule["matches"].append(f"meta random {op} {right}")
        return
    field = key.split(" ")[-1]
    if field in ("dport", "sport"):
        rule[field + "s"] += shown
        proto = key.split(" ")[0]
        if proto in ("tcp", "udp", "sctp"):
            rule["protocol"] = rule["protocol"] or proto
    elif key in ("meta l4proto", "ip protocol", "ip6 nexthdr"):
        rule["protocol"] = PROTO_NUMBERS.get(values[0], values[0]) if values and not negated else rule["protocol"]
    elif key in ("ether type", "meta protocol") and values and not negated:
        # the frame's own type (a netdev or bridge table): arp, ip, ip6 ... as the rule names it
        rule["protocol"] = rule["protocol"] or values[0]
    elif field in ("saddr", "daddr"):
        rule[field] += shown
    elif key in ("meta iifname", "meta iif"):
        rule["iif"] = shown[0] if shown else None
    elif key in ("meta oifname", "meta oif"):
        rule["oif"] = shown[0] if shown else None
    elif key.startswith(("icmp ", "icmpv6 ")) and field in ("type", "code"):
        rule["protocol"] = rule["protocol"] or key.split(" ")[0]
        rule["icmp_types"] += shown
    elif key == "meta length" or field == "length":
        rule["length"] = f"{op} {values[0]}" if op != "==" and values else (values[0] if values else None)
    elif key == "ct state":
        rule["ct_state"] += values
    rule["matches"].append(f"{key} {op} {','.join(values)}")


def _apply_xt(rule: dict[str, Any], xt: dict[str, Any]) -> None:
    """An iptables match or target iptables-nft wrote: its name says what it is, not its options."""
    name = str(xt.get("name", "?"))
    if xt.get("type") == "target":
        verdict = TARGETS.get(name.upper())
        rule["verdict"] = verdict or rule["verdict"]
        if verdict is None:
            rule["unknown"].append(f"target {name}")
        return
    low = name.lower()
    if low == "statistic":  # random or nth: a share of the packets either way, how much is in the options
        rule["share"] = rule["share"] if rule["share"] is not None else -1.0
    elif low in ("limit", "hashlimit"):
        rule["rate"] = rule["rate"] or "?"
    elif low in ("tcp", "udp", "icmp", "icmp6") and not rule["protocol"]:
        rule["protocol"] = low
    if low not in ("tcp", "udp"):  # a bare tcp/udp match only restates the protocol
        rule["unknown"].append(low)
    rule["matches"].append(f"xt {low}")


def empty_rule(source: str, family: str, table: str, chain: str, hook: str | None) -> dict[str, Any]:
    return {"source": source, "family": family, "table": table, "chain": chain, "hook": hook, "verdict": None,
            "verdict_arg": None, "protocol": None, "dports": [], "sports": [], "saddr": [], "daddr": [],
            "iif": None, "oif": None, "icmp_types": [], "length": None, "ct_state": [], "share": None, "rate": None,
            "rate_over": False, "unknown": [], "matches": [], "packets": None, "bytes": None}


def nft_filter_rule(rule: dict[str, Any], hook: str | None) -> FilterRule:
    """One rule of `nft -j list ruleset` (its `expr` list) as a `FilterRule`."""
    family, table, chain = (str(rule.get(k, "?")) for k in ("family", "table", "chain"))
    out = empty_rule("nft", family, table, chain, hook)
    for expr in rule.get("expr", []) if isinstance(rule.get("expr"), list) else []:
        if not isinstance(expr, dict):
            continue
        if isinstance(expr.get("match"), dict):
            _apply_match(out, expr["match"])
        elif isinstance(expr.get("xt"), dict):
            _apply_xt(out, expr["xt"])
        elif isinstance(expr.get("counter"), dict):
            out["packets"], out["bytes"] = expr["counter"].get("packets"), expr["counter"].get("bytes")
        elif isinstance(expr.get("limit"), dict):
            lim = expr["limit"]
            unit = lim.get("rate_unit", "packets")
            out["rate"] = f"{lim.get('rate')} {unit}/{lim.get('per', 'second')}"
            out["rate_over"] = bool(lim.get("inv"))
            out["matches"].append(f"limit {'over ' if out['rate_over'] else ''}{out['rate']}")
        else:
            for key in _NFT_VERDICTS:
                if key in expr:
                    out["verdict"] = key
                    arg = expr[key]
                    if isinstance(arg, dict):
                        out["verdict_arg"] = str(arg.get("target") or arg.get("type") or arg.get("num") or "") or None
                    break
    return finish_rule(out)


def finish_rule(out: dict[str, Any]) -> FilterRule:
    if "text" not in out:
        verdict = f"{out['verdict']} {out['verdict_arg']}" if out["verdict_arg"] else (out["verdict"] or "")
        out["text"] = f"{' '.join(out['matches'])} {verdict}".strip()
    if out["share"] is not None and out["share"] < 0:
        out["share"] = None  # a share whose size the source does not say
        out["partial"] = True
    else:
        out["partial"] = out.get("partial", False) or (out["share"] is not None and out["share"] < 1.0)
    return FilterRule(**out)


# --- one list per device ---------------------------------------------------------------------------------------

def nft_filter_rules(data: Any) -> list[FilterRule]:
    """Every rule of parsed `nft -j list ruleset` JSON, each with the hook of its chain (None: reached by jumps)."""
    items = data.get("nftables", []) if isinstance(data, dict) else []
    hooks = {(c["chain"].get("family"), c["chain"].get("table"), c["chain"].get("name")): c["chain"].get("hook")
             for c in items if isinstance(c, dict) and isinstance(c.get("chain"), dict)}
    return [nft_filter_rule(i["rule"], hooks.get((i["rule"].get("family"), i["rule"].get("table"),
                                                   i["rule"].get("chain"))))
            for i in items if isinstance(i, dict) and isinstance(i.get("rule"), dict)]


def _same(mine: list[FilterRule], decoded: list[FilterRule]) -> bool:
    return len(mine) == len(decoded) and all(a.verdict == b.verdict for a, b in zip(mine, decoded))


def merged_rules(nft: Iterable[FilterRule], iptables: Iterable[FilterRule]) -> list[FilterRule]:
    """One rule list: nft's, where a chain iptables also printed takes iptables' decoded form (counters from nft),
    then the iptables rules of chains nft does not show (the legacy backend). A rule both sources show (same table
    and chain, same place, same verdict) is listed once."""
    nft = list(nft)
    decoded: dict[tuple[str, str], list[FilterRule]] = {}
    for rule in iptables:
        decoded.setdefault((rule.table, rule.chain), []).append(rule)
    shown: dict[tuple[str, str], list[FilterRule]] = {}
    for rule in nft:
        if rule.family == "ip":
            shown.setdefault((rule.table, rule.chain), []).append(rule)
    twins = {key for key, rules in shown.items() if _same(rules, decoded.get(key, []))}
    out: list[FilterRule] = []
    for rule in nft:
        key = (rule.table, rule.chain)
        if rule.family == "ip" and key in twins:
            twin = decoded[key][shown[key].index(rule)]
            out.append(twin.model_copy(update={"source": "nft", "packets": rule.packets, "bytes": rule.bytes}))
        else:
            out.append(rule)
    for key, rules in decoded.items():
        if key not in twins:
            out += rules
    return out


_INHERITED = ("protocol", "dports", "sports", "saddr", "daddr", "iif", "oif", "icmp_types", "length", "rate")


def through_jumps(rules: list[FilterRule], depth: int = 3) -> list[FilterRule]:
    """The rules with what a jump into their chain already matched: a rule of a chain reached by `jump X` (or
    `-j X`) applies only to the packets the jumping rule selected, so it takes the jumping rule's hook and the
    conditions it does not set itself (one copy per jump into the chain; rules of unreached chains as they are)."""
    out = list(rules)
    for _ in range(depth):
        jumps = [r for r in out if r.verdict in ("jump", "goto") and r.verdict_arg and r.hook is not None]
        expanded: list[FilterRule] = []
        changed = False
        for rule in out:
            into = [j for j in jumps if (j.family, j.table, j.verdict_arg) == (rule.family, rule.table, rule.chain)
                    and j is not rule]
            if rule.hook is not None or not into:
                expanded.append(rule)
                continue
            changed = True
            for j in into:
                update: dict[str, Any] = {"hook": j.hook}
                update.update({k: getattr(j, k) for k in _INHERITED if not getattr(rule, k) and getattr(j, k)})
                if j.partial and not rule.partial:
                    update.update(partial=True, share=j.share)
                if j.rate:
                    update["rate_over"] = j.rate_over
                expanded.append(rule.model_copy(update=update))
        out = expanded
        if not changed:
            break
    return out
