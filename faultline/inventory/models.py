"""The inventory's typed records: resolved hosts, links, and rejected records with their reasons."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

InventoryFile = Literal["hosts.yaml", "groups.yaml", "defaults.yaml"]
INVENTORY_FILES: tuple[InventoryFile, ...] = ("hosts.yaml", "groups.yaml", "defaults.yaml")


class InventoryHost(BaseModel):
    """One host after inheritance (host > groups, depth-first in order > defaults); never a password."""

    model_config = ConfigDict(extra="forbid")

    inventory: str
    host: str = Field(description="The host's key in hosts.yaml.")
    hostname: str | None = None
    platform: str | None = None
    port: int | None = None
    username: str | None = None
    groups: list[str] = Field(default_factory=list, description="The host's own groups, in order.")
    role: str | None = None
    site: str | None = None
    addresses: list[str] = Field(default_factory=list, description="IPs without prefix length.")
    networks: list[str] = Field(default_factory=list, description="data.addresses as written (with their prefix "
                                "length where given): the device's own interface addresses, not its hostname.")
    dns_names: list[str] = Field(default_factory=list)
    interfaces: list[str] = Field(default_factory=list)
    data: dict[str, Any] = Field(default_factory=dict, description="The rest of the resolved data.")
    source_file: str = ""
    source_line: int = 0


class InventoryLink(BaseModel):
    """One direction of a link; `derived` when only the other side listed it."""

    model_config = ConfigDict(extra="forbid")

    inventory: str
    host: str
    interface: str | None
    peer: str
    peer_interface: str | None = None
    derived: bool = False
    source_file: str = ""


class InventoryReject(BaseModel):
    """A record that was not accepted: which file and line, the check it failed, why, and the record."""

    model_config = ConfigDict(extra="forbid")

    file: InventoryFile
    target_table: Literal["inventory_hosts", "inventory_links"]
    record_no: int = Field(description="1-based line of the record in its file.")
    check: str
    reason: str
    raw: str = Field(description="The record as JSON, credentials redacted.")


class FileCount(BaseModel):
    """What was read from one inventory file: records in = accepted + quarantined."""

    model_config = ConfigDict(extra="forbid")

    path: str
    records_in: int = 0
    accepted: int = 0
    quarantined: int = 0


class LoadedInventory(BaseModel):
    """A whole inventory folder, validated: what loads, what was rejected, and notes for the user."""

    model_config = ConfigDict(extra="forbid")

    name: str
    folder: str
    hosts: list[InventoryHost]
    links: list[InventoryLink]
    rejects: list[InventoryReject]
    files: dict[str, FileCount] = Field(description="Per present file (hosts.yaml, groups.yaml, defaults.yaml).")
    messages: list[str] = Field(default_factory=list)

    def host(self, name: str) -> InventoryHost | None:
        """The host called `name`, or None."""
        return next((h for h in self.hosts if h.host == name), None)
