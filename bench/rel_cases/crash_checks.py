"""What must hold in a warehouse, its LanceDB folder and its dashboards after a killed run and the run after it.

Each check returns the problems it found (empty when it holds). They open the warehouse read-only or work on a
copy, so call them only when no Faultline command is running on it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from rel_cases.small_corpus import INGEST_TABLES, counts, rows

MART_TABLES_SQL = ("SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND table_name LIKE 'mart!_%' "
                   "ESCAPE '!'")  # not marts_stale
LAST_NIGHTLY_SQL = "SELECT run_id FROM rebuild.main.runs WHERE kind = 'nightly' ORDER BY started_at DESC LIMIT 1"
LAST_RUN_SQL = "SELECT status FROM runs WHERE kind = ? ORDER BY started_at DESC LIMIT 1"
# per file: what the ledger says came in, was accepted and quarantined, and the rows the tables hold for it
FILE_LEDGER_SQL = """
SELECT f.kind, f.source_file, f.records_in, f.accepted, f.quarantined,
       CASE f.kind WHEN 'logs' THEN (SELECT count(*) FROM log_lines l WHERE l.source_file = f.source_file)
                   WHEN 'tickets' THEN (SELECT count(*) FROM tickets t WHERE t.source_file = f.source_file)
       END AS stored,
       (SELECT count(*) FROM quarantine q WHERE q.source_file = f.source_file) AS held
FROM ingest_files f
"""


def ingest_problems(db: Path, reference: dict[str, int]) -> list[str]:
    """accepted + quarantined = records read for every file, the tables hold exactly what the ledger says,
    nothing twice, and the tables hold what one clean ingest leaves (`reference`: rows per ingest table)."""
    problems = []
    for kind, path, read, accepted, quarantined, stored, held in rows(db, FILE_LEDGER_SQL):
        name = Path(path).name
        if accepted + quarantined != read:
            problems.append(f"{kind} {name}: {accepted} accepted + {quarantined} quarantined != {read} read")
        if stored is not None and (stored, held) != (accepted, quarantined):
            problems.append(f"{kind} {name}: ledger {accepted}+{quarantined}, tables hold {stored}+{held}")
    (lines, distinct), = rows(db, "SELECT count(*), count(DISTINCT (source_file, line_no)) FROM log_lines")
    if lines != distinct:
        problems.append(f"log_lines: {lines} rows for {distinct} file lines")
    found = counts(db, INGEST_TABLES)
    differ = {t: (reference[t], found[t]) for t in reference if reference[t] != found[t]}
    if differ:
        problems.append("rows differ from a clean ingest (clean, found): " + str(differ))
    return problems


def index_problems(db: Path, lancedb: Path) -> list[str]:
    """The LanceDB tables hold exactly the warehouse's tickets and doc chunks, each with the hashes a sync
    compares (the row as indexed, the text embedded), a vector, and a full-text index."""
    import lancedb as lance

    from faultline.retrieval.embed import resolve_model_name
    from faultline.retrieval.index import TABLE_NAMES, _read_source

    model = resolve_model_name("")
    conn = duckdb.connect(str(db), read_only=True)
    try:
        wanted = {kind: {(r["id"], r["source_hash"], r["embed_hash"]) for r in _read_source(conn, kind, model)}
                  for kind in TABLE_NAMES}
    finally:
        conn.close()
    store = lance.connect(str(lancedb))
    problems = []
    for kind, name in TABLE_NAMES.items():
        if name not in store.list_tables().tables:
            problems.append(f"no LanceDB table {name}")
            continue
        table = store.open_table(name)
        have = table.search(None).select(["id", "source_hash", "embed_hash", "vector"]).limit(None).to_arrow()
        found = set(zip(have["id"].to_pylist(), have["source_hash"].to_pylist(), have["embed_hash"].to_pylist()))
        if len(found) != have.num_rows:
            problems.append(f"{name}: {have.num_rows} rows for {len(found)} distinct")
        if found != wanted[kind]:
            problems.append(f"{name}: {len(found - wanted[kind])} rows not as in the warehouse, "
                            f"{len(wanted[kind] - found)} warehouse rows missing")
        if have["vector"].null_count:
            problems.append(f"{name}: {have['vector'].null_count} rows without a vector")
        if not any(ix.index_type == "FTS" for ix in table.list_indices()):
            problems.append(f"{name}: no full-text index")
    return problems


def mart_problems(db: Path, scratch: Path) -> list[str]:
    """Every mart holds what a clean rebuild of the marts on a copy of the warehouse holds (row for row, the
    incremental ones too); only the row of `mart_runs` for the run that refreshed the marts differs by design (it
    was still running)."""
    from faultline.marts import refresh_marts

    copy = scratch / "rebuild.duckdb"
    copy.unlink(missing_ok=True)
    shutil.copyfile(db, copy)
    conn = duckdb.connect(str(copy))
    try:
        refresh_marts(conn, full=True)
        conn.execute(f"ATTACH '{db}' AS crashed (READ_ONLY)")
        marts = [r[0] for r in conn.execute(MART_TABLES_SQL, ["rebuild"]).fetchall()]
        crashed = {r[0] for r in conn.execute(MART_TABLES_SQL, ["crashed"]).fetchall()}
        problems = [f"{m} missing" for m in marts if m not in crashed]
        last, = conn.execute(LAST_NIGHTLY_SQL).fetchone()
        for mart in (m for m in marts if m in crashed):
            keep = ' WHERE run_id <> $last' if mart == "mart_runs" else ""
            crashed_rows = f'SELECT * FROM crashed.main."{mart}"{keep}'
            rebuilt_rows = f'SELECT * FROM rebuild.main."{mart}"{keep}'
            given = {"last": last} if keep else {}
            extra, = conn.execute(f"SELECT count(*) FROM ({crashed_rows} EXCEPT ALL {rebuilt_rows})", given).fetchone()
            lost, = conn.execute(f"SELECT count(*) FROM ({rebuilt_rows} EXCEPT ALL {crashed_rows})", given).fetchone()
            if extra or lost:
                problems.append(f"{mart}: {extra} rows not in a clean rebuild, {lost} missing")
        return problems
    finally:
        conn.close()
        copy.unlink(missing_ok=True)


def dashboard_problems(folder: Path) -> list[str]:
    """The dashboard site is whole: an index page, every page complete, no half-written file left."""
    if not (folder / "index.html").is_file():
        return [f"no {folder / 'index.html'}"]
    problems = []
    for page in folder.rglob("*"):
        if page.is_dir():
            continue
        if page.suffix not in (".html", ".css"):
            problems.append(f"left in the dashboards: {page.relative_to(folder)}")
        elif page.suffix == ".html" and not page.read_text(encoding="utf-8", errors="replace").rstrip().endswith(
                "</html>"):
            problems.append(f"half-written page {page.relative_to(folder)}")
    return problems


def leftover_problems(db: Path) -> list[str]:
    """Frozen warehouse copies or half-written files a run left beside the warehouse."""
    work = db.parent / ".faultline-work"
    left = sorted(p.name for p in work.glob("*")) if work.is_dir() else []
    return [f"left in {work.name}: {left}"] if left else []


def run_problems(db: Path, kind: str) -> list[str]:
    """The last run of `kind` completed (the one after the kill)."""
    conn = duckdb.connect(str(db), read_only=True)
    try:
        last = conn.execute(LAST_RUN_SQL, [kind]).fetchone()
    finally:
        conn.close()
    if last is None or last[0] not in ("completed", "completed_with_failures"):
        return [f"the last {kind} run is {last[0] if last else 'missing'}"]
    return []
