"""The one matcher: every skill's fingerprints evaluated over a diagnosis's flags.

A fingerprint matches a device when its `all` kinds (and one of its `any`, when given) are flagged there, none of
its `none` kinds is and its role is allowed; per device the highest priority wins, and an answer whose devices a
stronger one names is dropped. Fields and residual matches: docs/sade.md#fingerprints-and-the-matcher.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from faultline.sade.records import Flag
from faultline.sade.skills import Fingerprint, load_skills


@dataclass
class Match:
    """One fingerprint that matched: the label, the devices it names and the v2 resources."""

    family: str
    fingerprint: str
    label: str
    device: str
    devices: list[str]
    resources: list[str]
    priority: int
    fallback: bool = False
    evidence: list[str] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)  # the flag kinds the fingerprint read (its `all` and `any`)


def _family_key(family: str) -> str:
    """Skill folder name -> the family tag scans put on flags (host-ip -> host_ip)."""
    return family.replace("-", "_")


def _resource(fp: Fingerprint, device: str, flags: list[Flag]) -> str:
    """NIKA v2 resource id of the answer's first device: node/<d>, or interface/<d>/<if> from the evidence."""
    if fp.resource == "interface":
        for kind in fp.all + fp.any:
            for f in flags:
                if f.device == device and f.kind == kind and f.attrs.get("ifname"):
                    return f"interface/{device}/{f.attrs['ifname']}"
        return f"interface/{device}/eth0"  # an end device's one interface
    return f"node/{device}"


def _devices(fp: Fingerprint, device: str, mine: list[Flag], flags: list[Flag]) -> list[str]:
    out: list[str] = []
    for spec in fp.devices:
        if spec == "self":
            names = [device]
        elif spec.startswith("attr:"):
            key = spec[5:]
            names = [str(f.attrs[key]) for f in mine if f.kind in fp.all + fp.any and f.attrs.get(key)]
        elif spec.startswith("flagged:"):
            kind = spec[8:]
            names = sorted({f.device for f in flags if f.kind == kind and f.device})
        else:
            names = []
        out += [n for n in names if n not in out]
    return out


def match(flags: list[Flag], *, roles: dict[str, str], complete: set[str] = frozenset()) -> list[Match]:  # type: ignore[assignment]
    """Every winning match over `flags`. `roles` maps device -> role; `complete` = devices scanned in every
    phase (fallback fingerprints apply only to them)."""
    by_device: dict[str, list[Flag]] = {}
    for f in flags:
        if f.device:
            by_device.setdefault(f.device, []).append(f)
    best: dict[str, Match] = {}
    also: dict[str, list[Match]] = {}  # every other match per device, for a second fault on the same device
    for skill in load_skills():
        for fp in skill.fingerprints:
            for device, mine in by_device.items():
                kinds = {f.kind for f in mine}
                if not set(fp.all) <= kinds or (fp.any and not kinds & set(fp.any)) or kinds & set(fp.none):
                    continue
                if fp.roles and roles.get(device) not in fp.roles:
                    continue
                if fp.elsewhere and not any(f.kind in fp.elsewhere for f in flags):
                    continue
                # a residual explanation: only on a fully examined device with no strong evidence of
                # another family (its own family's, e.g. a carrier loss for a flapping link, is fine)
                if fp.fallback and (device not in complete or any(
                        f.strength == "strong" and f.family and f.family != _family_key(skill.family)
                        for f in mine)):
                    continue
                devices = _devices(fp, device, mine, flags)
                m = Match(family=skill.family, fingerprint=fp.id, label=fp.label, device=device, devices=devices,
                          resources=[_resource(fp, device, flags)],
                          priority=fp.priority, fallback=fp.fallback,
                          evidence=[f.evidence for f in mine if f.kind in fp.all + fp.any],
                          kinds=set(fp.all + fp.any))
                also.setdefault(device, []).append(m)
                if device not in best or m.priority > best[device].priority:
                    best[device] = m
    ranked = sorted(best.values(), key=lambda m: (-m.priority, m.device))
    seconds = [x for m in ranked if not m.fallback for x in _second_on_device(m, also.get(m.device, []))]
    if any(not m.fallback for m in ranked):
        ranked = [m for m in ranked if not m.fallback]
    elif ranked:
        # a residual explanation names one device: the one with the most evidence (partial loss over isolation)
        ranked = sorted(ranked, key=lambda m: (-len(m.evidence), -("partial" in " ".join(m.evidence)), m.device))[:1]
    kept: list[Match] = []
    named: set[str] = set()
    for m in ranked:
        same = next((k for k in kept
                     if k.label == m.label and k.family == m.family and set(k.devices) & set(m.devices)), None)
        if same is not None:
            same.devices += [d for d in m.devices if d not in same.devices]
            continue
        if m.device in named:
            continue
        kept.append(m)
        named.update(m.devices)
    return kept + [x for x in seconds if any(k is not None and k.device == x.device for k in kept)]


def _second_on_device(winner: Match, others: list[Match]) -> list[Match]:
    """Other faults on the winner's device: matches of another label and family whose evidence shares no flag
    kind with the winner's (nor with each other), the highest priority first. Two labels reading the same
    flags are rival explanations (a shaper that drops: throttling or incast), not two faults."""
    out: list[Match] = []
    used = set(winner.kinds)
    for m in sorted(others, key=lambda x: -x.priority):
        if m.fallback or m.label == winner.label or m.family == winner.family or m.kinds & used:
            continue
        if any(m.label == o.label for o in out):
            continue
        out.append(m)
        used |= m.kinds
    return out
