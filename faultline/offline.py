"""Settings that keep every library from phoning home.

Set before the libraries are imported (their switches are read at import time). Values the
user has already exported win, so a user can opt back in to anything.
"""

from __future__ import annotations

import os

OFFLINE_ENV: dict[str, str] = {
    # sentence-transformers / transformers: never try the model hub (a hub id without this
    # stalls ~98 s on DNS retries before failing).
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    # litellm fetches its model cost map from GitHub at import unless told not to.
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_OFFLINE_MODE": "true",
    # Prefect: server telemetry heartbeat and client analytics.
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    # Prefect's ephemeral API needs more than the default 20 s to start on 2 cores with a fresh DB.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    # Great Expectations usage statistics.
    "GX_ANALYTICS_ENABLED": "false",
    # tokenizers forks a thread pool that warns after fork; not needed for our batch sizes.
    "TOKENIZERS_PARALLELISM": "false",
}


def apply_offline_env(environ: dict[str, str] | None = None) -> None:
    """Set the no-phone-home switches unless the user already chose a value."""
    env = os.environ if environ is None else environ
    for key, value in OFFLINE_ENV.items():
        env.setdefault(key, value)
