"""Which device a log line belongs to, when nothing tags it with an incident: the hostname the line names.

When it names none, or a node inside a chassis (IOS-XR's `RP/0/RP0/CPU0`), the device its file is filed under, as
collectors file per device (`<archive>/<device>/<date>.log.gz`, `/var/log/remote/<device>/messages`) or name
files after it (`leaf1.bgpclear.log`).
"""

from __future__ import annotations

import re
from pathlib import PurePath

import polars as pl

# file names a collector gives every device's file alike: the device is then the folder
_GENERIC_STEM = re.compile(
    r"^(?:\d{4}-?\d\d-?\d\d(?:[T_-]?\d\d)?|messages|syslog|all|current|log|logs|remote|kern|daemon|user|local\d)$",
    re.IGNORECASE)
_SUFFIXES = (".gz", ".log", ".txt", ".out")


def file_device(source_file: str) -> str | None:
    """The device a log file is filed under: its name's first part, or its folder for generic names.

    ``leaf1.bgpclear.log`` -> leaf1; ``archive/core_router_1/2026-11-30.log.gz`` -> core_router_1;
    ``/var/log/remote/spine2/messages.1.gz`` -> spine2.
    """
    path = PurePath(source_file)
    name = path.name
    for _ in range(3):  # messages.1.gz, x.log.gz
        for suffix in _SUFFIXES:
            name = name.removesuffix(suffix)
        name = re.sub(r"\.\d+$", "", name)
    stem = name.split(".", 1)[0]
    if stem and not _GENERIC_STEM.match(stem):
        return stem
    parent = path.parent.name
    return parent or None


def device_expr(source_file: str, owner: str | None = None) -> pl.Expr:
    """Polars expression for the `device` column of one file's lines.

    `owner`: the device the whole file belongs to (a lab incident's `logs/<device>/` folder).
    """
    if owner is not None:
        return pl.lit(owner, dtype=pl.Utf8).alias("device")
    fallback = file_device(source_file)
    host = pl.col("host")
    return (pl.when(host.is_not_null() & ~host.str.contains("/", literal=True) & (host != ""))
            .then(host).otherwise(pl.lit(fallback, dtype=pl.Utf8)).alias("device"))
