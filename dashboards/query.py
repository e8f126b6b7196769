"""The dashboards' only way into the warehouse: rows of one `mart_*` table, never anything else.

Pages ask for a mart by name with equality filters and an ordering; the SQL is built here from validated
identifiers (no SQL text comes in from a page), so a page cannot read a base table, a view or a file.
A mart that has not been built yet reads as empty and is remembered, so the page can say "no data yet".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import duckdb

from faultline.errors import FaultlineError
from faultline.marts import list_marts

MART_NAME = re.compile(r"^mart_[a-z0-9_]+$")
MART_COLUMNS_SQL = ("SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class MartReader:
    """Reads rows of mart tables for the dashboard pages; refuses every other table."""

    conn: duckdb.DuckDBPyConnection
    marts: frozenset[str] = field(default_factory=lambda: frozenset(s.name for s in list_marts()))
    missing: set[str] = field(default_factory=set)
    _columns: dict[str, list[str]] = field(default_factory=dict)

    def columns(self, mart: str) -> list[str]:
        """The mart's columns ([] when it has not been built); a non-mart name is refused."""
        if not isinstance(mart, str) or not MART_NAME.match(mart) or mart not in self.marts:
            raise FaultlineError(f"the dashboards read only the marts of warehouse/marts, not {mart!r}",
                                 fix="add what the page needs to a mart under warehouse/marts and read that mart")
        if mart not in self._columns:
            self._columns[mart] = [r[0] for r in self.conn.execute(MART_COLUMNS_SQL, [mart]).fetchall()]
            if not self._columns[mart]:
                self.missing.add(mart)
        return self._columns[mart]

    def rows(self, mart: str, *, where: dict[str, Any] | None = None,
             order_by: list[str] | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Rows of `mart` as dicts; `where` is column = value (None matches NULL), `order_by` column
        names with an optional ' desc'. An unbuilt mart gives []."""
        known = self.columns(mart)
        if not known:
            return []
        clauses, params = [], []
        for column, value in (where or {}).items():
            self._check(mart, column, known)
            if value is None:
                clauses.append(f"{_quote(column)} IS NULL")
            else:
                clauses.append(f"{_quote(column)} = ?")
                params.append(value)
        order = []
        for item in order_by or []:
            column, _, direction = item.partition(" ")
            self._check(mart, column, known)
            if direction.lower() not in ("", "asc", "desc"):
                raise FaultlineError(f"bad ordering {item!r} for {mart}", fix="use 'column' or 'column desc'")
            order.append(f"{_quote(column)} {direction.upper() or 'ASC'} NULLS LAST")
        sql = f"SELECT * FROM main.{_quote(mart)}"
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        if order:
            sql += " ORDER BY " + ", ".join(order)
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        cursor = self.conn.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    @staticmethod
    def _check(mart: str, column: str, known: list[str]) -> None:
        if column not in known:
            raise FaultlineError(f"{mart} has no column {column!r}",
                                 fix=f"use one of {', '.join(known)} (see warehouse/marts/{mart}.yml)")
