"""Network access: how any diagnoser reads a network, whatever runs it.

Devices and their directory, the runner of read-only argument vectors, the probe allowlist with its
argument validation, the parsers and typed records of every probe, the reachability matrix, and the
recording and replay of snapshots. Nothing here builds networks or injects faults (`faultline.lab`
does) and nothing here knows how a fault was caused.
"""
