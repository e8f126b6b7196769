"""SADE's deep-scan functions, one module per phase: A = L2/infrastructure, B = control plane and traffic
control, C = host-local, D = service and resource. Each scan looks at one device, raises typed flags on
the session, and compares with the healthy baseline where the backend has one."""

from faultline.sade.scans import control, host, l2, service
from faultline.sade.scans.control import control_scan
from faultline.sade.scans.host import host_scan
from faultline.sade.scans.l2 import l2_scan
from faultline.sade.scans.service import service_scan

PHASE_SCANS = {"A": l2_scan, "B": control_scan, "C": host_scan, "D": service_scan}
# each phase's checks in order, one probe (rarely two) each: the policy matches after every check
PHASE_CHECKS = {"A": l2.CHECKS, "B": control.CHECKS, "C": host.CHECKS, "D": service.CHECKS}

__all__ = ["PHASE_CHECKS", "PHASE_SCANS", "control_scan", "host_scan", "l2_scan", "service_scan"]
