"""`iptables -S` / `iptables-save` lines as `FilterRule`s: every option decoded, whichever backend (legacy or
nft) the kernel runs them on. Pure, never raises."""

from __future__ import annotations

import shlex

from faultline.network.filters import HOOKS, PROTO_NUMBERS, TARGETS, empty_rule, finish_rule
from faultline.network.records import FilterRule


def _ports(text: str) -> list[str]:
    return [p.replace(":", "-") for p in text.split(",") if p]


def iptables_filter_rule(line: str, table: str) -> FilterRule | None:
    """One `-A CHAIN ...` line of `iptables -S` or `iptables-save` as a `FilterRule` (None for other lines)."""
    try:
        tokens = shlex.split(line)
    except ValueError:
        tokens = line.split()
    if len(tokens) < 2 or tokens[0] != "-A":
        return None
    chain = tokens[1]
    out = empty_rule("iptables", "ip", table, chain, HOOKS.get(chain))
    out["text"] = line.strip()
    negate = False
    i = 2
    mode = None
    while i < len(tokens):
        tok = tokens[i]
        arg = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok == "!":
            negate, i = True, i + 1
            continue
        bang = "!" if negate else ""
        step = 2
        if tok in ("-p", "--protocol"):
            out["protocol"] = None if negate else PROTO_NUMBERS.get(arg, arg)
        elif tok in ("-s", "--source", "-d", "--destination"):
            out["saddr" if tok in ("-s", "--source") else "daddr"] += [bang + a for a in arg.split(",")]
        elif tok in ("-i", "--in-interface"):
            out["iif"] = bang + arg
        elif tok in ("-o", "--out-interface"):
            out["oif"] = bang + arg
        elif tok in ("--dport", "--destination-port", "--dports", "--destination-ports"):
            out["dports"] += [bang + p for p in _ports(arg)]
        elif tok in ("--sport", "--source-port", "--sports", "--source-ports"):
            out["sports"] += [bang + p for p in _ports(arg)]
        elif tok == "--ports":
            out["dports"] += [bang + p for p in _ports(arg)]
            out["sports"] += [bang + p for p in _ports(arg)]
        elif tok in ("--icmp-type", "--icmpv6-type"):
            out["icmp_types"].append(bang + arg)
        elif tok == "--length":
            out["length"] = bang + arg.replace(":", "-")
        elif tok in ("--ctstate", "--state"):
            out["ct_state"] += [bang + s.lower() for s in arg.split(",")]
        elif tok == "--mode":
            mode = arg
            if mode in ("random", "nth") and out["share"] is None:
                out["share"] = -1.0
        elif tok == "--probability" and mode == "random":
            out["share"] = _float(arg, -1.0)
        elif tok == "--every" and mode == "nth":
            every = _float(arg, 0.0)
            out["share"] = 1.0 / every if every >= 1 else -1.0
        elif tok == "--limit":
            out["rate"] = arg
        elif tok in ("--hashlimit-above", "--hashlimit-upto", "--hashlimit"):
            out["rate"], out["rate_over"] = arg, tok == "--hashlimit-above"
        elif tok in ("-j", "--jump", "-g", "--goto"):
            target = TARGETS.get(arg.upper())
            if target:
                out["verdict"] = target
            elif arg.upper() in ("LOG", "MARK", "CONNMARK", "TOS", "DSCP", "TCPMSS", "CT", "NOTRACK", "TRACE"):
                out["unknown"].append(f"target {arg}")
            else:
                out["verdict"], out["verdict_arg"] = ("goto" if tok in ("-g", "--goto") else "jump"), arg
        elif tok in ("--reject-with", "--queue-num", "--queue-balance"):
            out["verdict_arg"] = arg
        elif tok in ("-m", "--match"):
            if arg not in ("tcp", "udp", "icmp", "multiport", "statistic", "limit", "hashlimit", "length",
                           "conntrack", "state", "icmp6"):
                out["unknown"].append(arg)
        elif tok.startswith("-") and (not arg or arg.startswith("-")):
            step = 1  # a flag without a value (--queue-bypass, --rsource, ...)
        negate = False
        i += step
    cut = next((k for k, t in enumerate(tokens) if t in ("-j", "--jump", "-g", "--goto")), len(tokens))
    out["matches"] = [" ".join(tokens[2:cut])] if cut > 2 else []
    return finish_rule(out)


def _float(text: str, default: float) -> float:
    try:
        return float(text)
    except ValueError:
        return default
