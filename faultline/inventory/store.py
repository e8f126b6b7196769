"""The inventory in the warehouse: replacing one inventory's snapshot, and reading hosts and links back."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import duckdb

from faultline.inventory.models import InventoryHost, InventoryLink, LoadedInventory

_HOST_COLUMNS = ("inventory", "host", "hostname", "platform", "port", "username", "groups", "role", "site",
                 "addresses", "dns_names", "interfaces", "data", "source_folder", "source_file", "source_line",
                 "ingested_at")
_LINK_COLUMNS = ("inventory", "host", "interface", "peer", "peer_interface", "derived", "source_file",
                 "ingested_at")

INSERT_HOST_SQL = (f"INSERT INTO inventory_hosts ({', '.join(_HOST_COLUMNS)}) "
                   f"VALUES ({', '.join('?' for _ in _HOST_COLUMNS)})")
INSERT_LINK_SQL = (f"INSERT INTO inventory_links ({', '.join(_LINK_COLUMNS)}) "
                   f"VALUES ({', '.join('?' for _ in _LINK_COLUMNS)})")
READ_HOSTS_SQL = """
SELECT inventory, host, hostname, platform, port, username, groups, role, site, addresses, dns_names,
       interfaces, data, source_file, source_line
FROM inventory_hosts
WHERE ($inventory IS NULL OR inventory = $inventory)
ORDER BY inventory, source_line, host
"""
READ_LINKS_SQL = """
SELECT inventory, host, interface, peer, peer_interface, derived, source_file
FROM inventory_links
WHERE ($inventory IS NULL OR inventory = $inventory) AND ($host IS NULL OR host = $host)
ORDER BY inventory, host, derived, interface NULLS LAST, peer
"""


def replace_inventory(conn: duckdb.DuckDBPyConnection, loaded: LoadedInventory,
                      ingested_at: datetime | None = None) -> dict[str, int]:
    """Replace every stored row of `loaded.name` with `loaded` (the caller holds the transaction)."""
    now = ingested_at or datetime.now(UTC)
    removed = conn.execute("SELECT count(*) FROM inventory_hosts WHERE inventory = ?", [loaded.name]).fetchone()[0]
    conn.execute("DELETE FROM inventory_links WHERE inventory = ?", [loaded.name])
    conn.execute("DELETE FROM inventory_hosts WHERE inventory = ?", [loaded.name])
    if loaded.hosts:
        conn.executemany(INSERT_HOST_SQL, [
            [h.inventory, h.host, h.hostname, h.platform, h.port, h.username, h.groups, h.role, h.site,
             h.addresses, h.dns_names, h.interfaces, json.dumps(h.data, default=str), loaded.folder,
             h.source_file, h.source_line, now] for h in loaded.hosts])
    if loaded.links:
        conn.executemany(INSERT_LINK_SQL, [
            [lk.inventory, lk.host, lk.interface, lk.peer, lk.peer_interface, lk.derived, lk.source_file, now]
            for lk in loaded.links])
    return {"hosts": len(loaded.hosts), "links": len(loaded.links), "replaced_hosts": removed}


def stored_folder(conn: duckdb.DuckDBPyConnection, inventory: str) -> str | None:
    """The folder the stored inventory `inventory` was ingested from, if it is stored."""
    row = conn.execute("SELECT any_value(source_folder) FROM inventory_hosts WHERE inventory = ?",
                       [inventory]).fetchone()
    return row[0] if row else None


def read_inventory(conn: duckdb.DuckDBPyConnection, inventory: str | None = None) -> list[InventoryHost]:
    """Stored hosts of `inventory` (every inventory when None), in file order."""
    rows = conn.execute(READ_HOSTS_SQL, {"inventory": inventory}).fetchall()
    keys = ("inventory", "host", "hostname", "platform", "port", "username", "groups", "role", "site",
            "addresses", "dns_names", "interfaces", "data", "source_file", "source_line")
    hosts = []
    for row in rows:
        record = dict(zip(keys, row))
        record["data"] = json.loads(record["data"]) if record["data"] else {}
        hosts.append(InventoryHost.model_validate(record))
    return hosts


def read_links(conn: duckdb.DuckDBPyConnection, inventory: str | None = None,
               host: str | None = None) -> list[InventoryLink]:
    """Stored links (both directions) of `inventory` (every inventory when None), optionally from `host` only."""
    rows = conn.execute(READ_LINKS_SQL, {"inventory": inventory, "host": host}).fetchall()
    keys = ("inventory", "host", "interface", "peer", "peer_interface", "derived", "source_file")
    return [InventoryLink.model_validate(dict(zip(keys, row))) for row in rows]
