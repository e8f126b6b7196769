"""Ticket-guided triage: the ticket's words as a lead symptom when the initial scan shows nothing.

The index's ``ticket:`` rules (`prompts/skills/index.yml`) turn the first matching words of the ticket's title and
description (never its resolution) into a lead kind, on a device the ticket names or the rule's role. Without a
ticket nothing changes. In full: docs/sade.md#ticket-guided-triage.
"""

from __future__ import annotations

import re
from urllib.parse import urlparse

from faultline.network.snapshot import client_positions
from faultline.sade.index import LeadSymptom
from faultline.sade.index_file import load_index
from faultline.sade.scans.common import IPV4_TEXT, owner_of
from faultline.sade.session import Session


def ticket_leads(session: Session) -> list[LeadSymptom]:
    """The ticket's lead symptom (one, or one per user position when the rule's lead is any user), or []
    without a ticket or without words the index knows."""
    text = (session.ticket or "").lower()
    if not text.strip():
        return []
    for rule in load_index().ticket:
        if not any(re.search(word, text) for word in rule.words):
            continue
        if rule.foreign and not _foreign_address(session, text, rule.words):
            continue
        named = named_devices(session, text)
        roles = {d: session.device(d).role for d in named}
        preferred = [d for role in rule.lead for d in named if roles[d] == role]
        if not preferred and rule.default == "users":
            # the user is not named: any user position could have written it, each one is a lead
            users = client_positions(session.devices())
            return [LeadSymptom(rule.kind, u, [d for d in users if d != u][:3]) for u in users]
        default = [d.name for d in session.devices(rule.default)] if rule.default else []
        lead = (preferred or default or [""])[0]
        if lead:
            return [LeadSymptom(rule.kind, lead, [d for d in named if d != lead][:3])]
    return []


def _foreign_address(session: Session, text: str, words: list[str]) -> bool:
    """Does one of the addresses the words capture belong to no device of this network?"""
    for word in words:
        for m in re.finditer(word, text):
            if m.groups() and m.group(1) and owner_of(session, m.group(1)) is None:
                return True
    return False


def named_devices(session: Session, text: str) -> list[str]:
    """Devices of this network the ticket names, in the order it names them: by name, by an address, or by a
    web name whose URL the service canary already fetched (its answer says which device served it)."""
    found: list[tuple[int, str]] = []
    for d in session.devices():
        m = re.search(rf"(?<![\w-]){re.escape(d.name.lower())}(?![\w-])", text)
        if m:
            found.append((m.start(), d.name))
    for m in IPV4_TEXT.finditer(text):
        owner = owner_of(session, m.group(1))
        if owner is not None:
            found.append((m.start(), owner.name))
    for url in session.backend.urls:
        host = (urlparse(url).hostname or "").lower()
        at = text.find(host) if host else -1
        if at < 0:
            continue
        for out in _fetched(session, url):
            owner = owner_of(session, out.record.remote_ip) if out.record.remote_ip else None
            if owner is not None:
                found.append((at, owner.name))
                break
    ordered: list[str] = []
    for _, name in sorted(found):
        if name not in ordered:
            ordered.append(name)
    return ordered


def _fetched(session: Session, url: str) -> list:
    return [out for step in session.steps if step.tool == "http_get" and step.args.get("url") == url
            and (out := session.seen("http_get", **step.args)) is not None]
