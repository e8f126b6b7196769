"""Keeping the LanceDB search indexes (``tickets``, ``doc_chunks``) in step with the DuckDB warehouse, incrementally.

Each table has ``id``, ``text`` (native FTS), ``snippet``, the filter columns and ``vector`` (and at scale an ANN
index, `faultline.retrieval.ann`). Only rows whose ``embed_hash`` (model + text embedded) is new are embedded, rows
whose ``source_hash`` (the warehouse row) alone changed keep their vector, rows gone are deleted; no change, no write.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from faultline.retrieval.ann import FLAT, sync_vector_index

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from faultline.config import Settings
    from faultline.retrieval.embed import Embedder

Kind = Literal["tickets", "docs"]
TABLE_NAMES: dict[str, str] = {"tickets": "tickets", "docs": "doc_chunks"}
_ID_CHUNK = 500
# MiniLM reads 256 word pieces. 1000 characters average ~160 pieces on the ZooKeeper tickets;
# code-heavy texts still reach 256 and the tokenizer cuts their tail, hence title first.
EMBED_CHARS = 1000
FTS_CHARS = 32_000  # huge pasted logs add little to BM25 and bloat the index
SNIPPET_CHARS = 200

_MARKUP = re.compile(r"\{(?:code|noformat|quote|panel|color)(?::[^}]*)?\}|\[~[^\]]*\]", re.I)
_FRAME = re.compile(r"^\s*(?:at\s+[\w$.<>]+\(.*\)|\.\.\. \d+ more)\s*$")
_SPACE = re.compile(r"\s+")

_SOURCE_SQL: dict[str, str] = {
    "tickets": """
        SELECT ticket_id, title, description, environment, components, status, resolution,
               created_at, resolved_at, content_hash
        FROM tickets ORDER BY ticket_id""",
    "docs": "SELECT chunk_id, doc_id, title, text FROM doc_chunks ORDER BY chunk_id",
}


@dataclass(frozen=True)
class IndexStats:
    """Outcome of one sync: rows now indexed, rows embedded, rows deleted, wall seconds."""

    kind: str
    rows_total: int
    embedded: int
    removed: int
    seconds: float
    vector_index: str = FLAT  # or the ANN index type (faultline.retrieval.ann)


@dataclass(frozen=True)
class DocumentTexts:
    """The three texts kept per row: searched (FTS), embedded, and shown."""

    text: str
    embed: str
    snippet: str


def clean_markup(text: str | None, *, max_frames: int | None = None) -> str:
    """Drop JIRA markers (``{code}``, ``{noformat}``, ``[~user]`` ...) and squeeze whitespace.

    With ``max_frames``, only the first ``max_frames`` lines of each Java stack-trace run
    (``at pkg.Class.method(File.java:1)``) are kept.
    """
    if not text:
        return ""
    text = _MARKUP.sub(" ", text)
    if max_frames is not None:
        kept: list[str] = []
        run = 0
        for line in text.splitlines():
            run = run + 1 if _FRAME.match(line) else 0
            if run <= max_frames:
                kept.append(line)
        text = "\n".join(kept)
    return _SPACE.sub(" ", text).strip()


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at a word boundary when one is near."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ")
    return head[:space] if space > limit * 0.8 else head


def _snippet(text: str) -> str:
    cut = truncate(text, SNIPPET_CHARS)
    return cut if cut == text else cut + "…"


def ticket_texts(title: str | None, description: str | None, environment: str | None,
                 components: list[str] | None = None) -> DocumentTexts:
    """Texts for a ticket: title, description, environment and components.

    The embedded text keeps the title whole, a short environment and the component list, and
    gives the description what is left of ``EMBED_CHARS`` (long stack traces shortened first).
    The same function builds query texts (without components), so both sides match.
    """
    title = clean_markup(title)
    comps = ", ".join(c for c in (components or []) if c)
    tail = " ".join(p for p in (truncate(clean_markup(environment), 200),
                                f"Components: {comps}." if comps else "") if p)
    body = clean_markup(description, max_frames=3)
    room = max(EMBED_CHARS - len(title) - len(tail) - 2, 0)
    embed = " ".join(p for p in (title, truncate(body, room), tail) if p)
    full = " ".join(p for p in (title, clean_markup(description), clean_markup(environment),
                                f"Components: {comps}." if comps else "") if p)
    return DocumentTexts(truncate(full, FTS_CHARS), truncate(embed, EMBED_CHARS), _snippet(body or title))


def doc_texts(title: str | None, body: str | None) -> DocumentTexts:
    """Texts for a doc chunk: its section path (title) followed by the chunk text."""
    title = clean_markup(title)
    text = clean_markup(body)
    full = f"{title}: {text}" if title and text else title or text
    return DocumentTexts(truncate(full, FTS_CHARS), truncate(full, EMBED_CHARS), _snippet(text or title))


def _sha(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:32]


def _utc(value: datetime | None) -> datetime | None:
    """DuckDB's zone-aware (or naive UTC) timestamp as a UTC datetime."""
    if value is None or value.tzinfo is None:
        return value if value is None else value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def _read_source(conn: duckdb.DuckDBPyConnection, kind: Kind, model: str) -> list[dict[str, Any]]:
    """Warehouse rows as Lance rows (without vectors), with both hashes filled in."""
    rows: list[dict[str, Any]] = []
    for rec in conn.execute(_SOURCE_SQL[kind]).fetchall():
        if kind == "tickets":
            tid, title, desc, env, comps, status, resolution, created, resolved, chash = rec
            texts = ticket_texts(title, desc, env, comps)
            row = {"id": tid, "title": title, "status": status, "resolution": resolution,
                   "components": list(comps or []), "created_at": _utc(created),
                   "resolved_at": _utc(resolved)}
            source = _sha(chash or "", texts.text, str(row))
        else:
            cid, doc_id, title, body = rec
            texts = doc_texts(title, body)
            row = {"id": cid, "doc_id": doc_id, "title": title}
            source = _sha(doc_id, title, body)
        row.update(text=texts.text, snippet=texts.snippet, source_hash=source,
                   embed_hash=_sha(model, texts.embed), _embed=texts.embed)
        rows.append(row)
    return rows


def _schema(kind: Kind, dim: int) -> pa.Schema:
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    fields = [pa.field("id", pa.string(), nullable=False), pa.field("title", pa.string()),
              pa.field("text", pa.string()), pa.field("snippet", pa.string())]
    if kind == "tickets":
        fields += [pa.field("status", pa.string()), pa.field("resolution", pa.string()),
                   pa.field("components", pa.list_(pa.string())), pa.field("created_at", ts),
                   pa.field("resolved_at", ts)]
    else:
        fields.append(pa.field("doc_id", pa.string()))
    fields += [pa.field("source_hash", pa.string()), pa.field("embed_hash", pa.string()),
               pa.field("vector", pa.list_(pa.float32(), dim))]
    return pa.schema(fields)


def _to_arrow(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    import pyarrow as pa

    columns = {f.name: [r[f.name] for r in rows] for f in schema}
    return pa.Table.from_pydict(columns, schema=schema)


def _layout(schema: pa.Schema) -> list[tuple[str, Any]]:
    return [(f.name, f.type) for f in schema]


def _id_filters(ids: list[str]) -> list[str]:
    """``id IN (...)`` predicates covering ``ids``, a few hundred per predicate."""
    quoted = ["'" + i.replace("'", "''") + "'" for i in ids]
    return [f"id IN ({', '.join(quoted[s:s + _ID_CHUNK])})" for s in range(0, len(quoted), _ID_CHUNK)]


def _embed_rows(rows: list[dict[str, Any]], embedder: Embedder, batch: int, progress: bool, label: str) -> None:
    """Fill ``vector`` on ``rows`` in place, batch by batch, optionally with a progress bar."""
    from faultline.progress import track

    rows = sorted(rows, key=lambda r: len(r["_embed"]))  # similar lengths batch with less padding
    batches = [rows[start:start + batch] for start in range(0, len(rows), batch)]
    for chunk in track(batches, description=f"embedding {len(rows)} {label} rows ({batch} a batch)",
                       enabled=progress and bool(rows)):
        for row, vec in zip(chunk, embedder.embed([r["_embed"] for r in chunk])):
            row["vector"] = vec.tolist()


def _stored_hashes(table: Any) -> dict[str, tuple[str, str]]:
    """``id -> (source_hash, embed_hash)`` of the rows already indexed."""
    if table is None:
        return {}
    have = table.search(None).select(["id", "source_hash", "embed_hash"]).limit(None).to_arrow()
    return dict(zip(have["id"].to_pylist(), zip(have["source_hash"].to_pylist(), have["embed_hash"].to_pylist())))


def open_lancedb(settings: Settings) -> Any:
    """Connect to the LanceDB folder of ``settings`` (created on first write)."""
    import lancedb

    return lancedb.connect(str(settings.lancedb_dir))


def sync_index(
    conn: duckdb.DuckDBPyConnection,
    settings: Settings,
    kind: Kind,
    embedder: Embedder,
    progress: bool = False,
    rebuild: bool = False,
) -> IndexStats:
    """Bring the Lance table for ``kind`` in line with the warehouse; see the module docstring.

    The native FTS index on ``text`` is rebuilt whenever rows changed (or it is missing); the ANN
    vector index is built, refreshed, retrained or dropped by the table's size (``ann.sync_vector_index``).
    A warehouse table with no rows drops the Lance table, so searches then say to ingest.
    ``rebuild`` first removes the Lance table (also a damaged one) and indexes every row from scratch; a
    damaged table met without it raises `DamagedState` naming the missing file and ``--rebuild``.
    """
    from faultline.damage import damaged_index

    if rebuild:
        _remove_table(settings, TABLE_NAMES[kind])
    try:
        return _sync(conn, settings, kind, embedder, progress)
    except (OSError, RuntimeError, ValueError) as exc:
        damaged = damaged_index(exc, settings.lancedb_dir, kind)
        if damaged is None:
            raise
        raise damaged from exc


def _remove_table(settings: Settings, name: str) -> None:
    """Drop the Lance table ``name``; when Lance cannot (its files are damaged), remove its folder."""
    import shutil

    db = open_lancedb(settings)
    try:
        if name in db.list_tables().tables:
            db.drop_table(name)
    except (OSError, RuntimeError, ValueError):
        pass  # the folder removal below is the fallback
    shutil.rmtree(settings.lancedb_dir / f"{name}.lance", ignore_errors=True)


def _sync(conn: duckdb.DuckDBPyConnection, settings: Settings, kind: Kind, embedder: Embedder,
          progress: bool) -> IndexStats:
    from lancedb.index import FTS

    started = time.perf_counter()
    name = TABLE_NAMES[kind]
    rows = _read_source(conn, kind, embedder.model_name)
    db = open_lancedb(settings)
    table = db.open_table(name) if name in db.list_tables().tables else None

    if not rows:
        removed = table.count_rows() if table is not None else 0
        if table is not None:
            db.drop_table(name)
        return IndexStats(kind, 0, 0, removed, time.perf_counter() - started)

    has_vector = table is not None and "vector" in table.schema.names
    dim = getattr(table.schema.field("vector").type, "list_size", None) if has_vector else None
    if table is not None and (dim is None or _layout(table.schema) != _layout(_schema(kind, dim))):
        db.drop_table(name)  # column layout changed (older Faultline): rebuild from scratch
        table, dim = None, None
    stored = _stored_hashes(table)
    to_embed = [r for r in rows if stored.get(r["id"], ("", ""))[1] != r["embed_hash"]]
    if to_embed and dim != embedder.dim:  # the model is only loaded when something needs it
        if table is not None:
            db.drop_table(name)  # another model, another vector size: re-embed everything
        table, dim, stored, to_embed = None, embedder.dim, {}, rows
    schema = _schema(kind, dim or embedder.dim)
    reuse = [r for r in rows if r["id"] in stored and stored[r["id"]][1] == r["embed_hash"]
             and stored[r["id"]][0] != r["source_hash"]]
    gone = sorted(set(stored) - {r["id"] for r in rows})

    _embed_rows(to_embed, embedder, settings.embedding_batch_size, progress, name)
    if reuse and table is not None:
        vectors: dict[str, Any] = {}
        for where in _id_filters([r["id"] for r in reuse]):
            old = table.search(None).where(where).select(["id", "vector"]).limit(None).to_arrow()
            vectors.update(zip(old["id"].to_pylist(), old["vector"].to_pylist()))
        for row in reuse:
            row["vector"] = vectors[row["id"]]

    changed = to_embed + reuse
    if table is None:
        table = db.create_table(name, _to_arrow(rows, schema))
    else:
        if changed:
            (table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
             .execute(_to_arrow(changed, schema)))
        for where in _id_filters(gone):
            table.delete(where)
    has_fts = any(ix.index_type == "FTS" for ix in table.list_indices())
    if changed or gone or not has_fts:
        table.create_index("text", config=FTS(), replace=True)
        if stored:
            table.optimize()  # compacts, and adds changed rows to an existing ANN index
    vector_index = sync_vector_index(table, settings)
    return IndexStats(kind, len(rows), len(to_embed), len(gone), time.perf_counter() - started, vector_index)
