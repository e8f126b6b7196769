"""Traffic shaping: `link_bandwidth_throttling`, a 30 kbit/s shaper on the host's interface, loaded by a ping flood.

Mechanism `standard` is NIKA's tbf; mechanism `htb` is the class-based shaper an operator configures for a rate
limit (root htb, one default class at 30 kbit/s whose queue holds what the rate lets wait: it queues, then drops).

iperf3 is not in this stack, so 1,200-byte pings from another host fill the target's bucket; the recipe:
docs/lab.md#traffic-and-load-faults.
"""

from __future__ import annotations

import os
import random
import subprocess
from typing import ClassVar

from faultline.lab import teardown
from faultline.lab.faults.base import Fault, FaultError, FaultRecord, in_ns, reachability_problem, sh
from faultline.lab.faults.interfaces import pick_interface
from faultline.lab.state import LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe
from faultline.network.reachability import main_ip

TBF = ("rate", "30kbit", "burst", "64kb", "limit", "500kb")
HTB_ROOT = ("handle", "1:", "htb", "default", "10")
HTB_CLASS = ("parent", "1:", "classid", "1:10", "htb", "rate", "30kbit", "ceil", "30kbit")


def shaper_steps(ifname: str, mechanism: str) -> list[list[str]]:
    """The tc commands that put the mechanism's shaper on `ifname`."""
    if mechanism == "htb":
        return [["tc", "qdisc", "replace", "dev", ifname, "root", *HTB_ROOT],
                ["tc", "class", "add", "dev", ifname, *HTB_CLASS]]
    return [["tc", "qdisc", "replace", "dev", ifname, "root", "tbf", *TBF]]


class TbfThrottle(Fault):
    """`link_bandwidth_throttling`: root tbf at 30 kbit/s on the host's eth0, loaded from another host."""

    label = "link_bandwidth_throttling"
    roles = ("host",)
    symptom_timeout = 15.0
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "tc tbf rate 30kbit burst 64kb limit 500kb as the root qdisc (NIKA's)",
        "htb": "tc htb root with one default class at rate 30kbit ceil 30kbit (a class-based rate limit)",
    }

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        ifname = pick_interface(topo, rec.target, rng)
        ns = state.device(rec.target).namespace
        steps = shaper_steps(ifname, rec.mechanism_id)
        for step in steps:
            sh(in_ns(ns, *step), "shaper")
        kind = "htb" if rec.mechanism_id == "htb" else "tbf"
        others = sorted(d.name for d in state.devices() if d.role == "host" and d.name != rec.target)
        target_ip = main_ip(state.device(rec.target))
        rec.params = {"ifname": ifname, "kind": kind, "loader": None, "loader_pid": None}
        if others and target_ip:
            loader = rng.choice(others)
            # a process of its own session: survives this CLI call, killed by PID on recover
            proc = subprocess.Popen(
                in_ns(state.device(loader).namespace, "ping", "-q", "-n", "-i", "0.01", "-s", "1200", target_ip),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)
            rec.params.update(loader=loader, loader_pid=proc.pid)
        rec.resource_id = f"interface/{rec.target}/{ifname}"
        shaper = "; ".join(" ".join(step) for step in steps)
        rec.mechanism = (f"{shaper} on {rec.target}; load: 100 pps of 1200-byte pings "
                         f"from {rec.params['loader']} (substitute for NIKA's iperf3 UDP senders)")

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        qdiscs = run_probe(ctx, "tc_qdisc", dev=rec.target).record.qdiscs
        kind = rec.params.get("kind", "tbf")
        if not any(q.dev == rec.params["ifname"] and q.kind == kind and q.root for q in qdiscs):
            return f"no root {kind} on {rec.target} {rec.params['ifname']}"
        pid = rec.params.get("loader_pid")
        if pid is not None and not teardown.alive(pid):
            return f"the load generator (pid {pid} on {rec.params['loader']}) is not running"
        return None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        return reachability_problem(ctx, rec.target)

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        pid = rec.params.get("loader_pid")
        if pid is not None and teardown.alive(pid) and teardown.comm(pid) in ("ping", "ip"):
            teardown.kill_pids([pid])
        _reap(pid)
        ns = state.device(rec.target).namespace
        proc = sh(in_ns(ns, "tc", "qdisc", "del", "dev", rec.params["ifname"], "root"), "shaper delete", check=False)
        if proc.returncode != 0 and "No such file" not in proc.stderr and "Cannot delete" not in proc.stderr:
            raise FaultError(f"removing the shaper on {rec.target}: {proc.stderr.strip()[:200]}")


def _reap(pid: int | None) -> None:
    """Collect the exit status when the load generator is our own child (inject and recover in one process)."""
    if pid is None:
        return
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
