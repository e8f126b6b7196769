"""Operator tickets for the incident corpus: what someone affected would file, and (historical) how it ended.

`write_ticket(facts, rng)` writes a symptom-level ticket that never names the fault or a faulty device, from
wording kept as data in text/. Who reports, in which style, and the leak rules: docs/corpus.md#symptoms-and-tickets.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict

from faultline.corpus.symptoms import Symptom, excerpt
from faultline.errors import FaultlineError
from faultline.lab.scenarios import build_topology
from faultline.nika.labels import catalogue

TEXT_DIR = Path(__file__).with_name("text")
USER_ROLES = ("host", "client")  # devices a person sits at
# most disruptive first: a reporter leads with what hurts most
KIND_ORDER = ("no_address", "unreachable", "dns_failure", "service_refused", "http_error", "dns_wrong_answer",
              "packet_loss", "http_slow", "slow")
SERVICE_KINDS = {"dns_failure": "dns", "dns_wrong_answer": "dns", "http_error": "web", "http_slow": "web",
                 "service_refused": "web"}
VOICE = {"user": "first", "helpdesk": "third", "noc": "monitor"}  # the kind phrases each role speaks in
PASTE = "\x00PASTE\x00"  # stands in for pasted output while the prose around it is tidied

Role = Literal["user", "helpdesk", "noc"]
Priority = Literal["Critical", "Major", "Minor", "Trivial"]


class TicketFacts(BaseModel):
    """One incident as the writer sees it; `ground_truth` as faultline.lab.faults.ground_truth returns it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    incident_id: str
    scenario: str
    size: str
    opened_at: datetime  # when the ticket is filed
    devices: list[tuple[str, str]]  # (name, role)
    symptoms: list[Symptom]
    healthy: bool
    ground_truth: dict[str, Any]
    historical: bool = False


class Ticket(BaseModel):
    """One operator ticket; `resolution` and `resolved_at` only on historical (resolved) tickets."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ticket_id: str
    title: str
    body: str
    reporter: str
    reporter_role: Role
    reporter_device: str | None  # the machine a reporting user sits at: the one device they may name
    priority: Priority
    product: str
    component: str
    created_at: datetime
    status: Literal["open", "resolved"]
    resolution: str | None = None
    resolved_at: datetime | None = None


@cache
def wording(name: str) -> dict[str, Any]:
    """One file of text/: `tickets`, `scenarios`, `vocabulary` or `resolutions`."""
    path = TEXT_DIR / f"{name}.yml"
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise FaultlineError(f"cannot read ticket wording {path}: {exc}", fix="restore it from the repository") from exc


def _faults(gt: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in gt.get("faults") or [] if isinstance(f, dict)]


def _label(fault: dict[str, Any]) -> str | None:
    # the lab's per-fault truth carries its label in its own v1 block
    return fault.get("label") or (fault.get("v1") or {}).get("root_cause_name")


def faulty_devices(gt: dict[str, Any]) -> set[str]:
    """Every device the ground truth blames: v1's list, each fault's list and its target."""
    found = set((gt.get("v1") or {}).get("faulty_devices") or [])
    for f in _faults(gt):
        found |= set((f.get("v1") or {}).get("faulty_devices") or []) | ({f["target"]} if f.get("target") else set())
    return found


def forbidden_terms(facts: TicketFacts) -> tuple[set[str], set[str]]:
    """(words, device names) a ticket of `facts` may not contain, lower case; rules in text/vocabulary.yml."""
    vocab, gt, v1 = wording("vocabulary"), facts.ground_truth, facts.ground_truth.get("v1") or {}
    plain, devices = set(vocab["plain"].lower().split()), {name.lower() for name, _ in facts.devices}
    names = [_label(f) for f in _faults(gt)] + [v1.get("root_cause_name")] + list(v1.get("root_cause_names") or [])
    labels = {n.lower() for n in names if isinstance(n, str) and n}
    how = {info.label: info.how for info in catalogue()}
    words = {w.lower() for w in vocab["never"]} | labels
    words |= {t for label in labels for t in label.split("_") if len(t) > 1}
    words |= {t for f in _faults(gt) for t in str(f.get("category") or "").lower().split("_") if len(t) > 1} - plain
    for mech in [str(f.get("mechanism") or "") for f in _faults(gt)] + [how.get(label, "") for label in labels]:
        for token in set(re.findall(r"[a-z][a-z0-9_-]*[a-z0-9]", mech.lower())) - devices:
            words |= {p for p in {token, *re.split(r"[-_]", token)} if len(p) > 1 and p not in plain | devices}
        words |= set(re.findall(r"(?<![\w.:/])\d{3,}(?![\w.:/])", mech))  # port numbers and the like: 179, 1000
    return words, {d.lower() for d in faulty_devices(gt)}


def leak_check(facts: TicketFacts, allowed: set[str]) -> Callable[[str], bool]:
    """`text -> True` when it says something forbidden; `allowed` names (own machine, public names) are fine.

    A word of 4+ letters also matches longer words starting with it ("block" -> "blocked"); shorter words,
    numbers (not as a percentage or inside an address) and device names match whole only.
    """
    words, devices = forbidden_terms(facts)
    allowed = {a.lower() for a in allowed if a}
    parts = [re.escape(w) + (r"(?![0-9.%])" if w.isdigit() else r"[a-z0-9]*" if len(w) >= 4 else r"(?![a-z0-9])")
             for w in sorted(words - allowed)]
    parts += [re.escape(d) + r"(?![a-z0-9_])" for d in sorted(devices - allowed)]
    pattern = re.compile(r"(?<![a-z0-9])(?:" + "|".join(parts) + ")", re.IGNORECASE) if parts else None
    mask = re.compile("|".join(re.escape(a) for a in sorted(allowed, key=len, reverse=True)), re.IGNORECASE)

    def dirty(text: str) -> bool:
        return bool(pattern and pattern.search(mask.sub(" ", text) if allowed else text))

    return dirty


class _Dirty(Exception):
    """No variant of a pool can be filled without a forbidden word."""


_SLOT = re.compile(r"\{\{|\}\}|\{(\^?)(\w+)\}")


class _Filler:
    """Fills templates: a slot takes its value, else a clean variant drawn from the first pool table having it."""

    def __init__(self, rng: random.Random, values: dict[str, str], pools: list[dict[str, Any]],
                 dirty: Callable[[str], bool]) -> None:
        self.rng, self.values, self.pools, self.dirty = rng, values, pools, dirty

    def _slot(self, m: re.Match[str]) -> str:
        if m.group(2) is None:
            return m.group(0)[0]  # {{ or }}
        key = m.group(2)
        pool = next((p[key] for p in self.pools if isinstance(p.get(key), list)), None)
        if key not in self.values and pool is None:
            raise FaultlineError(f"ticket template slot {{{key}}} has no value", fix="see text/tickets.yml")
        out = self.values[key] if key in self.values else self.pick(pool or [])
        return _capital(out) if m.group(1) else out

    def pick(self, variants: list[str]) -> str:
        """A filled variant without a forbidden word (rng order); _Dirty when there is none."""
        order = list(variants)
        self.rng.shuffle(order)
        for variant in order:
            try:
                out = _SLOT.sub(self._slot, variant)
            except _Dirty:
                continue
            if not self.dirty(out):
                return out
        raise _Dirty

    def first_clean(self, pools: list[list[str]]) -> str:
        """A variant of the first pool that has a clean one (the fallback pools always do; a test checks)."""
        for pool in pools:
            try:
                return self.pick(pool)
            except _Dirty:
                continue
        raise FaultlineError("every fallback ticket phrase has a forbidden word",
                             fix="add a plain one to text/tickets.yml")


def _capital(text: str) -> str:
    """First letter upper case, unless the text starts with a name (web99.local, 10.1.1.10, host_1)."""
    first = text.split(maxsplit=1)[0].rstrip(",:.'!?") if text.strip() else ""
    return text[:1].upper() + text[1:] if first.replace("'", "").isalpha() else text


def _tidy(text: str) -> str:
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines()]
    return _capital(re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip())


class _Places:
    """The scenario's addresses, public names, LAN numbers and site rules (text/scenarios.yml)."""

    def __init__(self, facts: TicketFacts) -> None:
        cfg = wording("scenarios")
        self.defaults, self.cfg = cfg["defaults"], cfg["scenarios"].get(facts.scenario, {})
        self.roles = dict(facts.devices)
        self.ip: dict[str, str] = {}
        self.public: dict[str, str] = {}  # device -> the DNS name people use for it
        self.lan: dict[str, int] = {}
        try:
            topo = build_topology(facts.scenario, facts.size)
        except FaultlineError:
            return  # a scenario unknown here: refer to places and destinations generically
        self.ip = {n.name: n.addresses[0].split("/")[0] for n in topo.nodes.values() if n.addresses}
        for _, (_, records) in sorted(topo.zones.items()):
            for fqdn, node in sorted(records.items(), key=lambda kv: kv[0].startswith(("ns", "dns"))):
                self.public.setdefault(node, fqdn)
        self.lan = {h.node: index for index, lan in enumerate(topo.lans, start=1) for h in lan.hosts}

    def site(self, device: str | None) -> tuple[str, list[str], list[str]] | None:
        """(component, where variants, group variants) of the first site rule matching `device`."""
        for rule in self.cfg.get("sites", []):
            if m := re.match(rule["match"], device or ""):
                fields = {**m.groupdict(), "lan": str(self.lan.get(device or "", 1))}
                return (rule["component"].format(**fields), [w.format(**fields) for w in rule["where"]],
                        [g.format(**fields) for g in rule.get("group", rule["where"])])
        return None

    def dst_variants(self, sym: Symptom) -> list[str]:
        """How a reporter names the symptom's destination: the public name, else by role and address."""
        if sym.dst is None or "://" in sym.dst:
            return [urlsplit(sym.dst).hostname or sym.dst] if sym.dst else [""]
        if sym.dst in self.public or sym.dst not in self.roles:  # a service people use, or a name they typed
            return [self.public.get(sym.dst, sym.dst)]
        ip = sym.dst_ip or self.ip.get(sym.dst)
        if ip is None:
            return list(self.defaults["unknown_dst"])
        return [v.format(ip=ip) for v in self.defaults["roles"].get(self.roles.get(sym.dst, "host"), ["{ip}"])]


def _weighted(rng: random.Random, weights: dict[str, int], allowed: list[str]) -> str:
    names = [n for n in weights if n in allowed]
    return rng.choices(names, weights=[weights[n] for n in names])[0]


def _since(facts: TicketFacts, rng: random.Random) -> datetime:
    """When the trouble started, as the reporter says it.

    The first observation if it precedes the ticket; `opened_at` when every observation comes later (the
    caller passed the fault's start as `opened_at`); a little before filing when nothing was observed.
    """
    seen = [s.observed_at for s in facts.symptoms if s.observed_at is not None]
    try:
        if seen:
            return min(min(seen), facts.opened_at)
    except TypeError:  # naive and aware times mixed
        pass
    return facts.opened_at - timedelta(minutes=rng.randint(2, 25))


def _priority(healthy: bool, role: str, n_users: int, kind: str, rng: random.Random) -> Priority:
    if healthy:
        return rng.choice(["Minor", "Trivial"])
    if n_users >= 3 or (n_users >= 2 and kind in SERVICE_KINDS):
        return "Critical" if role == "noc" or rng.random() < 0.5 else "Major"
    return "Major" if n_users == 2 or (role == "user" and rng.random() < 0.4) else "Minor"


def resolution_note(facts: TicketFacts) -> str:
    """What was found and the fix, per fault (text/resolutions.yml); a no-fault note for healthy incidents."""
    notes, v1 = wording("resolutions"), facts.ground_truth.get("v1") or {}
    out = []
    for fault in _faults(facts.ground_truth):
        label = _label(fault) or v1.get("root_cause_name")
        if label not in notes["labels"]:
            raise FaultlineError(f"no resolution note for fault label {label!r}", fix="add one to text/resolutions.yml")
        blamed = list((fault.get("v1") or {}).get("faulty_devices") or v1.get("faulty_devices") or [])
        device = fault.get("target") or (blamed[0] if blamed else "the device")
        fields = {"device": device, "other": next((d for d in blamed if d != device), device),
                  "devices": ", ".join(blamed or [device])}
        entry = notes["labels"][label]
        out.append(notes["format"].format(found=entry["found"].format(**fields), fix=entry["fix"].format(**fields)))
    return "\n\n".join(out) or notes["format"].format(**notes["no_fault"])


def _also(fill: _Filler, places: _Places, ranked: list[Symptom], primary: Symptom, role: str) -> None:
    """Mention a second symptom (another kind or destination) through `also`, when one reads clean."""
    others = [s for s in ranked if (s.kind, s.dst) != (primary.kind, primary.dst)]
    if others:
        other, kinds = fill.rng.choice(others[:4]), wording("tickets")["kinds"]
        sub = _Filler(fill.rng, dict(fill.values), [kinds[other.kind]], fill.dirty)
        try:
            sub.values["dst"] = sub.pick(places.dst_variants(other))
            fill.values["second"] = sub.pick(kinds[other.kind][VOICE[role]])
            fill.values["also"] = fill.pick(fill.pools[0]["also"])
        except _Dirty:
            fill.values["second"] = fill.values["also"] = ""


def _paste(fill: _Filler, sym: Symptom) -> str:
    """The symptom's command and output, wrapped as people paste it; "" when it would say too much."""
    try:
        return _Filler(fill.rng, {"command": sym.command, "text": excerpt(sym.evidence)}, [], fill.dirty).pick(
            wording("tickets")["common"]["paste"]) if sym.evidence.strip() else ""
    except _Dirty:
        return ""


def _cast(facts: TicketFacts, places: _Places, rng: random.Random) -> tuple[str, str | None, list[Symptom],
                                                                         Symptom | None, list[str]]:
    """Who reports and what they lead with: (role, own machine, symptoms they speak of, primary, affected users)."""
    words = wording("tickets")
    users = sorted(n for n, r in facts.devices if r in USER_ROLES)
    affected = list(dict.fromkeys(s.src for s in facts.symptoms if places.roles.get(s.src) in USER_ROLES))
    people = users if facts.healthy else affected
    role = _weighted(rng, words["weights"]["roles"], ["user", "helpdesk", "noc"] if people else ["noc"])
    own = rng.choice(people) if role == "user" else None
    ranked = [] if facts.healthy else sorted(facts.symptoms, key=lambda s: KIND_ORDER.index(s.kind))
    mine = [s for s in ranked if s.src == own] or [s for s in ranked if s.src in affected] or ranked
    primary = rng.choice([s for s in mine if s.kind == mine[0].kind]) if mine else None
    return role, own, (mine if own else ranked), primary, affected


def _site(places: _Places, own: str | None, primary: Symptom | None, rng: random.Random) -> tuple | None:
    """The place the trouble is at: the reporter's, else the affected user's end of the primary symptom."""
    users = sorted(n for n, r in places.roles.items() if r in USER_ROLES)
    ends = [primary.src, primary.dst or ""] if primary else [rng.choice(users)] if users else []
    anchor = own or next((e for e in ends if places.roles.get(e) in USER_ROLES), ends[0] if ends else None)
    return places.site(anchor) or (places.site(primary.dst) if primary else None)


def write_ticket(facts: TicketFacts, rng: random.Random) -> Ticket:
    """The ticket someone affected by `facts` would file; the same rng state gives the same ticket.

    The incident id is mixed into the draws, so one seed reused across incidents still varies the tickets.
    """
    rng = random.Random(f"{facts.incident_id}:{rng.getrandbits(64)}")
    if not (facts.ground_truth.get("v1") or {}).get("is_anomaly", True):
        facts = facts.model_copy(update={"healthy": True})
    words, places = wording("tickets"), _Places(facts)
    role, own, spoken, primary, affected = _cast(facts, places, rng)
    site = _site(places, own, primary, rng)
    allowed = {own or ""} | set(places.public.values()) | {
        (urlsplit(s.dst).hostname or "") if "://" in s.dst else s.dst for s in facts.symptoms
        if s.dst and s.kind in SERVICE_KINDS}
    values = {"since": _since(facts, rng).strftime("%H:%M"), "reported": facts.opened_at.strftime("%H:%M"),
              "own": own or "", "src_ip": places.ip.get(primary.src if primary else "", "n/a"),
              "n_users": str(len(affected) or 1), "n_dsts": str(len({s.dst for s in facts.symptoms}) or 1),
              "detail": primary.detail if primary else "", "reporter": rng.choice(words["reporters"][role]),
              "second": "", "also": "", "paste": PASTE}
    role_words = dict(words[role], scope=words[role].get("scope_many" if len(affected) > 1 else "scope_one", [""]))
    sites = {"where": site[1] if site else places.defaults["where"],
             "group": site[2] if site else places.defaults["group"]}
    kind = primary.kind if primary else "unknown"
    fill = _Filler(rng, values, [role_words, words["common"], sites, words["kinds"][kind]], leak_check(facts, allowed))
    if primary is None:  # healthy (or nothing observed): talk about a service people use
        public = sorted(n for n in set(places.public.values()) if not n.startswith(("ns", "dns"))) or [
            ip for n, ip in sorted(places.ip.items()) if places.roles.get(n) not in ("router", "switch")]
        values["dst"] = rng.choice(public) if public else ""
    else:
        values["dst"] = fill.first_clean([places.dst_variants(primary), [primary.dst_ip or "?"]])
        _also(fill, places, spoken, primary, role)
    paste = _paste(fill, primary) if primary else ""
    style = _weighted(rng, words["weights"]["styles"], ["vague", "precise"] + (["pasted"] if paste else []))
    section = words["healthy"][role] if facts.healthy else {k: role_words[k][style] for k in ("titles", "bodies")}
    title = fill.first_clean([section["titles"], role_words["titles"]["vague"], words["fallback"]["titles"]])
    body = fill.first_clean([section["bodies"], role_words["bodies"]["vague"], words["fallback"]["bodies"]])
    service = places.cfg.get("service_components", {}).get(SERVICE_KINDS.get(kind, ""))
    digest = int(hashlib.sha256(facts.incident_id.encode()).hexdigest()[:12], 16)
    done = facts.historical
    return Ticket(ticket_id=f"NET-{digest % 10**7:07d}", title=_tidy(title.replace(PASTE, "")),
                  body=_tidy(body).replace(PASTE, paste), reporter=values["reporter"], reporter_role=role,
                  reporter_device=own, priority=_priority(facts.healthy, role, len(affected), kind, rng),
                  product=places.cfg.get("product", facts.scenario),
                  component=service or (site[0] if site else places.cfg.get("default_component", "Network")),
                  created_at=facts.opened_at, status="resolved" if done else "open",
                  resolution=resolution_note(facts) if done else None,
                  resolved_at=facts.opened_at + timedelta(minutes=rng.randint(25, 480)) if done else None)
