"""Hostile input in search: ticket, log and document text carrying every query-syntax character of the search
engines (quotes, field prefixes, AND/OR/NOT, + - ~ ^ * ? : \\ /, brackets, < > ! && ||), on a real LanceDB index
built from the sample history's tickets and the sample runbook.

Trials, in order:

1. ASTRA's pre-fetch for an incident whose title is a real JIRA summary with quoted words (the finding of
   issue 20) finds the same candidates as for its plain words;
2. `faultline search` (a process in text and in hybrid mode) with hostile text: exit 0 and the same hits as
   the API gives;
3. the docs MCP server (spawned over stdio) answers hostile text with the hits the API gives;
4. a bad filter is still named as the filter, and a failing query with a good filter is not blamed on it;
5. onwards: a generated text (ticket-, log- or doc-shaped, seeded) searched in every mode on both indexes:
   no error; full-text results identical to its plain words' (rows and BM25 scores), hybrid hits carrying
   the plain words' full-text scores.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from rel_cases.common import REPO, Trial, cli

NAME = "hostile_search"
CHECKS = ("text with every query-syntax character searched in every mode (API, CLI, docs MCP server, ASTRA "
          "pre-fetch): no error, the same full-text results as its plain words; errors name their real cause")
DEFAULT_TRIALS = 44
NEEDS_ROOT = False
SAMPLE = REPO / "data" / "sample"
MODES = ("vector", "text", "hybrid")
SYNTAX = '"():+-~^*?\\/[]{}<>!&|'
JIRA = '"guarded" is misspelled as "gaurded" in FSPermissionChecker.java'
QUOTE_LAST = 'The javadoc of checkPermission says "gaurded"'
HOSTILE = ('title:"bgp" AND (neighbor OR hold) NOT +timer -expired~2 ^router2* ? : \\ / [ ] { } < > ! && || '
           '"unterminated')
WORDS = ("bgp", "neighbor", "hold", "timer", "expired", "ospf", "adjacency", "dns", "dhcp", "arp", "router2",
         "interface", "eth0", "down", "unreachable", "nginx", "10.1.0.10", "site", "pc", "responding", "filter",
         "lease", "resolve", "web", "slow", "packet", "loss", "route", "missing", "acl")
MARKS = ('"', 'title:', 'text:', 'AND', 'OR', 'NOT', '+', '-', '~', '~2', '^3', '*', '?', ':', '\\', '/', '(', ')',
         '[', ']', '{', '}', '<', '>', '<=', '!', '&&', '||', '"', "'")
SHAPES = ("ticket", "log", "doc")


def plain(text: str) -> str:
    """`text` with every syntax character replaced by a space: the words alone."""
    return " ".join(text.translate({ord(c): " " for c in SYNTAX}).split())


def generated(seed: int) -> str:
    """A ticket-, log- or doc-shaped text with syntax characters glued to and between its words."""
    rng = random.Random(seed)
    shape = SHAPES[seed % len(SHAPES)]
    parts = []
    for _ in range(rng.randint(3, 12)):
        word = rng.choice(WORDS)
        if rng.random() < 0.5:
            word = rng.choice(MARKS) + word
        if rng.random() < 0.4:
            word += rng.choice(MARKS)
        parts.append(word)
        if rng.random() < 0.3:
            parts.append(rng.choice(MARKS))
    body = " ".join(parts)
    if shape == "log":
        return f"2026-11-02T00:01:{seed % 60:02d} router2 bgpd[{seed}]: %ADJCHANGE: {body} <vrf:default> [{seed}]"
    if shape == "doc":
        return f"Use 'timers bgp <keepalive> <holdtime>' {{optional}} -- {body} (see [RFC 4271] section 4.4)"
    return f'"{body}"' if seed % 2 else body


class _CachedEmbedder:
    """The embedder, remembering each query's vector: a text is searched in two modes on two indexes."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self._seen: dict[tuple[str, ...], Any] = {}

    def embed(self, texts: list[str]) -> Any:
        key = tuple(texts)
        if key not in self._seen:
            self._seen[key] = self._embedder.embed(texts)
        return self._seen[key]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)


class _Index:
    """The case's warehouse and indexes (built once) and one in-process embedder."""

    def __init__(self, work: Path) -> None:
        from faultline.config import Settings
        from faultline.retrieval.embed import Embedder

        self.db, self.lancedb = work / "fl.duckdb", work / "lancedb"
        self.settings = Settings(duckdb_path=self.db, lancedb_dir=self.lancedb, progress=False)
        self.embedder = _CachedEmbedder(Embedder(self.settings))
        if not self.lancedb.is_dir():
            self._build(work)

    def _build(self, work: Path) -> None:
        from faultline import db
        from faultline.ingest.api import ingest_paths
        from faultline.retrieval.index import sync_index

        tickets = work / "tickets.jsonl"
        rows = [json.loads(p.read_text()) for p in sorted((SAMPLE / "history").glob("*/ticket.json"))]
        rows.append({**rows[0], "ticket_id": "NET-9000001", "incident_id": "hostile-1", "title": JIRA,
                     "description": f"{HOSTILE}\nFound: a typo in a comment. Fix: corrected the spelling."})
        tickets.write_text("".join(json.dumps(r) + "\n" for r in rows))
        conn = db.connect(self.db)
        try:
            for kind, path in (("tickets", tickets), ("docs", SAMPLE / "docs")):
                report = ingest_paths(conn, self.settings, kind, [path])
                if report.totals()["failed_files"] or not report.totals()["accepted"]:
                    raise RuntimeError(f"ingesting {path} loaded nothing: {report.totals()}")
                sync_index(conn, self.settings, kind, self.embedder)  # type: ignore[arg-type]
        finally:
            conn.close()

    def search(self, kind: str, text: str, mode: str, k: int = 5, where: str | None = None) -> list[Any]:
        from faultline.retrieval.search import search

        return search(self.settings, kind, text, k=k, mode=mode, where=where, embedder=self.embedder)


def _rows(hits: list[Any]) -> list[tuple[str, float]]:
    return [(h.id, round(h.score, 4)) for h in hits]


def _same_as_plain(index: _Index, text: str) -> str:
    """'' when `text` behaves like its plain words in every mode on both indexes, else what differed."""
    words = plain(text)
    for kind in ("tickets", "docs"):
        reference = {h.id: round(h.score, 4) for h in index.search(kind, words, "text", k=50)}
        for mode in MODES:
            hits = index.search(kind, text, mode)
            if mode == "vector" and not hits:
                return f"{kind} {mode}: no hits"
            if mode == "text" and _rows(hits) != _rows(index.search(kind, words, "text")):
                return f"{kind} text: {_rows(hits)} != plain {_rows(index.search(kind, words, 'text'))}"
            if mode == "hybrid":
                for hit in hits:
                    expected = reference.get(hit.id)
                    if hit.text_score is not None and round(hit.text_score, 4) != expected:
                        return f"{kind} hybrid: {hit.id} text score {hit.text_score} != plain {expected}"
    return ""


def _prefetch(index: _Index) -> Trial:
    import duckdb

    from faultline.astra.prefetch import prefetch
    from faultline.astra.records import Incident

    conn = duckdb.connect(str(index.db), read_only=True)
    try:
        found = {}
        for title, description in ((JIRA, QUOTE_LAST), (plain(JIRA), plain(QUOTE_LAST))):
            # the query text (title, then description) opens and closes with a quote, as this ticket's does
            incident = Incident(incident_id="hostile-open", ticket_id="NET-9999999", title=title,
                                description=description, opened_at="2027-01-01T00:00:00+00:00")
            found[title] = prefetch(index.settings, conn, incident, embedder=index.embedder).hybrid_ids
    finally:
        conn.close()
    if found[JIRA][:1] != ["NET-9000001"] or found[plain(JIRA)][:1] != ["NET-9000001"]:
        return Trial(False, f"candidates {found[JIRA][:3]}, for the plain words {found[plain(JIRA)][:3]}",
                     "ticket text must be searched as its words")
    return Trial(True, "pre-fetch on the quoted JIRA summary finds its ticket first, as for its plain words")


def _cli(index: _Index) -> Trial:
    for mode in ("text", "hybrid"):  # hybrid runs the vector search too
        proc = cli(index.db, "search", "tickets", "--mode", mode, "--k", "5", "--json", "--", HOSTILE,
                   lancedb=index.lancedb)
        if proc.returncode != 0:
            return Trial(False, f"search --mode {mode} exited {proc.returncode}: {proc.stderr[-300:]}",
                         "faultline search must take any text")
        got = [(h["id"], round(h["score"], 4)) for h in json.loads(proc.stdout)]
        if got != _rows(index.search("tickets", HOSTILE, mode)):
            api = _rows(index.search("tickets", HOSTILE, mode))
            return Trial(False, f"{mode}: the CLI gave {got[:3]}, the API {api[:3]}",
                         "the CLI must search what the API searches")
    return Trial(True, "faultline search, text and hybrid: exit 0, the API's hits")


def _docs_server(index: _Index) -> Trial:
    from faultline.astra.docs_client import DocsClient

    with DocsClient(index.settings) as client:
        served = [h["chunk_id"] for h in client.search(HOSTILE, 5)]
        logged = [h["chunk_id"] for h in client.search(generated(1), 5)]
    expected = [h.id for h in index.search("docs", HOSTILE, "hybrid")]
    if not served or served != expected or not logged:
        return Trial(False, f"docs server gave {served} for the API's {expected} ({len(logged)} for a log line)",
                     "the docs server must search hostile text as words")
    return Trial(True, "docs MCP server: the API's hits")


def _errors(index: _Index) -> Trial:
    from lancedb.query import PhraseQuery

    from faultline.errors import FaultlineError
    from faultline.retrieval import search as search_mod

    bad = cli(index.db, "search", "tickets", "bgp", "--mode", "text", "--where", "created_at < '2021-01-01'",
              lancedb=index.lancedb)
    if bad.returncode != 2 or "search filter" not in bad.stderr:
        return Trial(False, f"a bad filter: exit {bad.returncode}, {bad.stderr[-200:]}", "name a bad filter")
    good_filter = "status = 'Resolved'"
    if not index.search("tickets", JIRA, "hybrid", where=good_filter):
        return Trial(False, "no hits for the JIRA summary under a good filter", "ticket text must be words")
    original = search_mod.text_query
    search_mod.text_query = lambda text: PhraseQuery(text, "text")  # a query the index cannot answer
    try:
        index.search("tickets", "hold timer", "text", where=good_filter)
        return Trial(False, "a phrase query on an index without positions did not fail", "")
    except FaultlineError as exc:
        if "filter" in exc.message:
            return Trial(False, f"blamed on the filter: {exc.message[:200]}", "an error names its real cause")
    finally:
        search_mod.text_query = original
    return Trial(True, "a bad filter is named; a failing query is not blamed on a good filter")


def run(trials: int, work: Path) -> list[Trial]:
    """The fixed trials, then generated texts (seeded by trial number)."""
    from faultline.errors import FaultlineError

    index = _Index(work)
    results = []
    for check in (_prefetch, _cli, _docs_server, _errors)[:trials]:
        try:
            results.append(check(index))
        except FaultlineError as exc:
            results.append(Trial(False, f"{check.__name__.strip('_')} raised: {exc.message[:200]}",
                                 "hostile text must be searched as its plain words"))
    for seed in range(trials - len(results)):
        text = generated(seed)
        try:
            problem = _same_as_plain(index, text)
        except FaultlineError as exc:
            problem = f"raised: {exc.message[:200]}"
        results.append(Trial(not problem, f"{text[:80]!r}: {problem}" if problem else "",
                             "hostile text must be searched as its plain words" if problem else ""))
    return results
