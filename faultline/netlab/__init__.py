"""The network lab: NIKA-shaped scenarios in Linux network namespaces, faults, and read-only probes."""
