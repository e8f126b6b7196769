"""Names of what the lab creates: every namespace (and so every leftover) carries the lab's prefix.

The prefix of the lab being worked on is process-wide, set from the settings or the lab's state; what it governs,
and why interfaces need none: docs/lab.md#several-labs-at-once.
"""

from __future__ import annotations

from faultline.config import LAB_PREFIX_PATTERN, LAB_PREFIX_RULE

LAB_PREFIX = "fl-"

_active = LAB_PREFIX


def check_prefix(prefix: str) -> str:
    """`prefix` if it is a valid lab prefix; ValueError saying the rule otherwise."""
    if not LAB_PREFIX_PATTERN.fullmatch(prefix):
        raise ValueError(f"lab prefix {prefix!r} is invalid: {LAB_PREFIX_RULE}")
    return prefix


def use_prefix(prefix: str) -> None:
    """Make `prefix` the prefix of the lab this process works on (see the module docstring)."""
    global _active
    _active = check_prefix(prefix)


def active_prefix() -> str:
    """The prefix of the lab this process works on (`fl-` until a lab's settings or state set it)."""
    return _active


def namespace_name(device: str, prefix: str | None = None) -> str:
    """The network namespace of a lab device (lab-prefixed, so leftovers are always found)."""
    return f"{prefix or _active}{device}"


def is_lab_namespace(name: str, prefix: str) -> bool:
    """Whether namespace `name` belongs to the lab with `prefix` (never to a lab with another prefix)."""
    return name.startswith(prefix) and len(name) > len(prefix)


def worker_prefix(base: str, worker: int) -> str:
    """The prefix of parallel worker `worker` (1, 2, ...) of a run whose own prefix is `base`: fl- -> fl1-."""
    return check_prefix(f"{base[:-1]}{worker}-")
