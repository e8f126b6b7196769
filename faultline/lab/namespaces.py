"""Names of what the lab creates: every namespace (and so every leftover) carries the lab prefix."""

from __future__ import annotations

LAB_PREFIX = "fl-"


def namespace_name(device: str, prefix: str = LAB_PREFIX) -> str:
    """The network namespace of a lab device (lab-prefixed, so leftovers are always found)."""
    return f"{prefix}{device}"
