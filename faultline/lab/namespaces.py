"""Names of what the lab creates: every namespace (and so every leftover) carries the lab prefix.

Several labs can run on one machine when each has its own prefix (`lab_prefix` setting, `fl-` by
default) and its own run dir. The prefix is all that tells labs apart on the machine: namespaces
(`<prefix><device>`, and a link fault's parking namespace `<prefix>park-<id>`), the FRR pathspace
and router dirs (named after the namespace) and `/etc/netns/<namespace>`. Interfaces need no prefix:
they are created inside the lab's own namespaces (`eth<k>`, `br<k>`, `br<k>p<i>`, `br<k>s<i>`, at
most 9 characters), never in the root namespace, so they cannot clash with another lab's.

The lab code names namespaces with `namespace_name(device)` without passing the prefix around: the
prefix of the lab being worked on is process-wide, set by `lab up`, `lab down`, `status` and
`probe_context` from the settings or the lab's state. A process works on one lab at a time; parallel
corpus generation runs one worker process per lab.
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
