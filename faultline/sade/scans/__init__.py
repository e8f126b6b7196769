"""SADE's deep-scan functions, one module per phase: A = L2/infrastructure, B = control plane and traffic
control, C = host-local, D = service and resource. Each scan looks at one device, raises typed flags on
the session, and compares with the healthy baseline where the backend has one. `run_check` runs one check by
the name skills use."""

from faultline.sade.scans import answers, control, daemons, host, l2, service
from faultline.sade.session import Session

PHASES = ("A", "B", "C", "D")  # the deep scan's phases, bottom-up
# each phase's checks in order, one probe (rarely two) each: the policy matches after every check
PHASE_CHECKS = {"A": l2.CHECKS, "B": control.CHECKS + daemons.CHECKS, "C": host.CHECKS,
                "D": service.CHECKS + answers.CHECKS}


def _phase_scan(phase: str):
    def scan(session: Session, dev) -> None:
        for check in PHASE_CHECKS[phase]:
            check(session, dev)
    scan.__doc__ = f"Every check of phase {phase} on one device."
    return scan


PHASE_SCANS = {phase: _phase_scan(phase) for phase in PHASES}

__all__ = ["CHECKS_BY_NAME", "PHASES", "PHASE_CHECKS", "PHASE_SCANS", "run_check", "scan_phase"]


def scan_phase(session: Session, phase: str) -> None:
    """Every check of `phase` on every device of the network."""
    session.phase = phase
    for dev in session.devices():
        PHASE_SCANS[phase](session, dev)

# every check by name (the names skills use in their `probes:`), with the phase it belongs to
CHECKS_BY_NAME = {
    "interfaces": ("A", l2._interfaces), "filters": ("A", l2._filters), "neighbours": ("A", l2._neighbours),
    "link_counters": ("A", l2._link_counters),
    "frr_config": ("B", control._frr), "qdiscs": ("B", control._qdiscs),
    "kernel_routes": ("B", control._kernel_blackholes), "routing_daemons": ("B", daemons._routing_daemons),
    "default_route": ("C", host._default_route), "resolver": ("C", host._resolver), "dhcp_lease": ("C", host._dhcp),
    "processes": ("D", service._processes), "dns_records": ("D", service._dns_records),
    "dhcp_config": ("D", service._dhcp_config), "web_config": ("D", service._web_config),
    "cpu_throttled": ("D", service._cpu_throttled), "access_log": ("D", service._access_log),
    "service_answers": ("D", answers._service_answers),
}


def run_check(session: Session, check: str, device: str, note: str) -> bool:
    """Run one named check on one device, in its phase; its new steps carry `note` (why it ran). Whether it
    asked the network anything new."""
    phase, func = CHECKS_BY_NAME[check]
    session.phase = phase
    before = session.probe_calls
    func(session, session.device(device))
    if session.probe_calls > before:
        for step in session.steps[before - session.probe_calls:]:
            step.note = f"{note}: {check}" if not step.note else f"{note}: {step.note}"
    return session.probe_calls > before
