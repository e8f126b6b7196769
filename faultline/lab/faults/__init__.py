"""Verified fault injection for the network lab, labelled with NIKA's v1 root-cause names.

`inject` puts a fault on the lab and records it, `verify` checks its artifact and symptom through the probes,
`recover` undoes every fault, `ground_truth` gives NIKA's v1 and v2 truth, and `applicable` / `label_scenarios`
say where a label can go; the lifecycle: docs/lab.md#fault-lifecycle.
"""

from faultline.lab.faults.applicability import applicable, label_scenarios
from faultline.lab.faults.base import Fault, FaultError, FaultNotVerified, FaultRecord
from faultline.lab.faults.registry import (
                                           FAULTS,
                                           choose_mechanism,
                                           choose_target,
                                           fault_class,
                                           fault_labels,
                                           ground_truth,
                                           inject,
                                           plan_target,
                                           records,
                                           recover,
                                           verify,
)

__all__ = ["FAULTS", "Fault", "FaultError", "FaultNotVerified", "FaultRecord", "applicable", "choose_mechanism",
           "choose_target",
           "fault_class", "fault_labels", "ground_truth", "inject", "label_scenarios", "plan_target", "records",
           "recover", "verify"]
