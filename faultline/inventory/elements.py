"""One inventory entry (host, group or defaults) checked field by field, credentials removed.

Hosts, groups and defaults share nornir's shape: hostname, port, username, password, platform,
groups (not in defaults), data, connection_options. Passwords and connection options are never
kept; the keys of `data` Faultline reads (role, site, addresses, dns_names, interfaces, links) are
type-checked on each entry's own data, so a bad value is blamed on the entry that wrote it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from faultline.inventory.yamlfile import is_credential

READ_KEYS = ("role", "site", "addresses", "dns_names", "interfaces", "links")
_FIELDS = {"hostname", "port", "username", "platform", "groups", "data"}


class Element(BaseModel):
    """The fields Faultline keeps of a host, group or defaults entry."""

    model_config = ConfigDict(extra="forbid")

    hostname: str | None = None
    port: int | None = None
    username: str | None = None
    platform: str | None = None
    groups: list[str] = []
    data: dict[str, Any] = {}


class ReadData(BaseModel):
    """The keys of `data` Faultline reads; the rest of `data` is free."""

    model_config = ConfigDict(extra="ignore")

    role: str | None = None
    site: str | None = None
    addresses: list[str] | None = None
    dns_names: list[str] | None = None
    interfaces: list[str] | None = None
    links: list[Any] | None = None

    @field_validator("addresses")
    @classmethod
    def _addresses_are_ips(cls, value: list[str] | None) -> list[str] | None:
        for item in value or []:
            try:
                ipaddress.ip_interface(item)
            except ValueError:
                raise ValueError(f"{item!r} is not an IP address or CIDR") from None
        return value


@dataclass
class Notes:
    """What was dropped or ignored while reading, for the user (never the dropped values)."""

    credentials: list[str] = field(default_factory=list)  # "host r1: password"
    ignored: list[str] = field(default_factory=list)

    def messages(self) -> list[str]:
        out = []
        if self.credentials:
            shown = ", ".join(self.credentials[:5]) + (" ..." if len(self.credentials) > 5 else "")
            out.append(f"{len(self.credentials)} credential field(s) dropped, never stored ({shown})")
        out += self.ignored
        return out


def _without_credentials(value: Any, where: str, notes: Notes) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if is_credential(key):
                notes.credentials.append(f"{where}: {key}")
                continue
            out[key] = _without_credentials(item, f"{where}.{key}", notes)
        return out
    if isinstance(value, list):
        return [_without_credentials(v, where, notes) for v in value]
    return value


def validation_reason(exc: ValidationError) -> str:
    """Pydantic's errors as `field: problem; field: problem`."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "value"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def parse_element(value: Any, where: str, notes: Notes, *, allow_groups: bool = True) -> Element | str:
    """The entry as an Element, or the reason it is malformed. `where` names it ("host 'r1'")."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        return (f"{where} must be a mapping of fields (hostname, platform, groups, data, ...), "
                f"not {type(value).__name__}")
    fields = _without_credentials(value, where, notes)
    if "connection_options" in fields:
        fields.pop("connection_options")
        notes.ignored.append(f"{where}: connection_options not stored (they may hold credentials)")
    unknown = sorted(str(k) for k in fields if k not in _FIELDS or (k == "groups" and not allow_groups))
    if unknown:
        for key in unknown:
            fields.pop(key, None)
        notes.ignored.append(f"{where}: unknown field(s) ignored: {', '.join(unknown)}")
    try:
        element = Element.model_validate(fields)
        ReadData.model_validate(element.data)
    except ValidationError as exc:
        return f"{where} has a malformed field: {validation_reason(exc)}"
    return element
