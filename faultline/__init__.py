"""Faultline: evidence-backed root-cause analysis over network ticket backlogs.

The engine (this package) is plain typed Python with no Prefect imports; `flows/` and `tasks/`
wrap it for orchestration. Nothing here reads configuration at import time.
"""

__version__ = "0.1.0"
