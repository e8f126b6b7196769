"""The network lab: NIKA-shaped scenarios built in Linux network namespaces, and the faults injected into them.

Topologies and scenarios, the builder, FRR and the services, the lab state and teardown, readiness,
and the fault injectors (`faultline.lab.faults`). The lab is one user of the network-access layer
(`faultline.network`); diagnosers reach a running lab only through `faultline.lab.access`.
"""
