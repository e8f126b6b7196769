"""The probe API: the only way diagnosis code touches a device.

A registry (an allowlist) of read-only probes by name: `run_probe(ctx, "ping", src="h1", dst_ip="10.0.2.2")`
validates every argument, runs one argument vector through the `Runner` and returns a typed record plus the raw
text; anything refused raises `ProbeError` first. The probes: docs/lab.md#the-probe-api.
"""

from __future__ import annotations

import inspect
from typing import Any

# imported for their registrations: every built-in probe is in the registry once this module is loaded
from faultline.network import device_probes, reachability  # noqa: F401
from faultline.network.records import NotRecordedResult
from faultline.network.registry import (
    ProbeContext,
    ProbeOutput,
    register,
    registered,
    registered_names,
)
from faultline.network.runner import NotRecorded
from faultline.network.validate import ProbeError

__all__ = ["ProbeContext", "ProbeError", "ProbeOutput", "probe_names", "register", "run_probe"]


def probe_names() -> list[str]:
    """Every registered probe name, sorted."""
    return registered_names()


def run_probe(ctx: ProbeContext, name: str, /, **args: Any) -> ProbeOutput:
    """Validate and run probe `name`; ProbeError for unknown probes, unknown arguments or bad values."""
    func = registered(name) if isinstance(name, str) else None
    if func is None:
        raise ProbeError(f"unknown probe {name!r}", fix=f"available probes: {', '.join(probe_names())}")
    params = [p for p in inspect.signature(func).parameters if p != "ctx"]
    unknown = sorted(set(args) - set(params))
    if unknown:
        raise ProbeError(f"probe {name!r} has no argument(s) {', '.join(unknown)}",
                         fix=f"arguments: {', '.join(params)}")
    try:
        return _unreached(func(ctx, **args))
    except TypeError as exc:  # a required argument is missing
        raise ProbeError(f"probe {name!r}: {exc}", fix=f"arguments: {', '.join(params)}") from None
    except NotRecorded as exc:
        # a recorded snapshot lacks a command this call needs: say so, never invent an answer
        device = args.get("dev", args.get("src"))
        record = NotRecordedResult(probe=name, args=_jsonable(args), missing=exc.argv)
        return ProbeOutput(probe=name, device=device if isinstance(device, str) else None, args=_jsonable(args),
                           record=record, raw=f"not recorded: {' '.join(exc.argv)}", result=None)


def _unreached(out: ProbeOutput) -> ProbeOutput:
    """A probe whose command never reached its device says so: an error, never a network symptom (a ping that
    could not be sent is not a ping that got no reply)."""
    problem = out.result.transport_error if out.result is not None else None
    if problem is None:
        return out
    fields = type(out.record).model_fields
    update: dict[str, Any] = {}
    if "error" in fields:
        update["error"] = f"device not reached: {problem}"
    if "status" in fields:
        update["status"] = "error"
    record = out.record.model_copy(update=update) if update else out.record
    return out.model_copy(update={"record": record})


def _jsonable(args: dict[str, Any]) -> dict[str, Any]:
    return {k: (list(v_) if isinstance(v_, tuple) else v_) for k, v_ in args.items()}
