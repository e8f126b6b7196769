"""Verified fault injection for the network lab, labelled with NIKA's v1 root-cause names.

`inject(state, label, target, seed)` puts a fault on the lab and records it in the lab state;
`verify(state, ctx)` checks that each fault's artifact is there and its symptom shows through the
probe API (FaultNotVerified otherwise); `recover(state)` undoes them and waits until the lab is
healthy; `ground_truth(state)` gives NIKA's v1 and v2 ground truth. `applicable(label, topology)` and
`label_scenarios(label, size)` say where a label can be injected. Every v1 label, injectable here or
not, is in the catalogue `faultline.nika.labels`.
"""

from faultline.lab.faults.applicability import applicable, label_scenarios
from faultline.lab.faults.base import Fault, FaultError, FaultNotVerified, FaultRecord
from faultline.lab.faults.registry import (FAULTS, choose_mechanism, choose_target, fault_class, fault_labels,
                                           ground_truth, inject, plan_target, records, recover, verify)

__all__ = ["FAULTS", "Fault", "FaultError", "FaultNotVerified", "FaultRecord", "applicable", "choose_mechanism",
           "choose_target",
           "fault_class", "fault_labels", "ground_truth", "inject", "label_scenarios", "plan_target", "records",
           "recover", "verify"]
