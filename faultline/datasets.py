"""Where the public data sets are: the `data_dir` setting, and a clear error when they are not there.

The data sets (Loghub-2k, IOS-XR router logs, ZooKeeper tickets, FRR docs and error catalogue, RFCs)
are never part of the repository; `scripts/fetch_data.sh` fetches them from their public sources and
`docs/data.md` lists each file with its source, licence and checksum.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from faultline.config import Settings
from faultline.errors import FaultlineError

FETCH_HINT = "set FAULTLINE_DATA_DIR (the data_dir setting) to a folder filled by scripts/fetch_data.sh (docs/data.md)"


def data_path(settings: Settings, *parts: str) -> Path:
    """`data_dir/parts...`, which must exist; FaultlineError naming the setting and the script otherwise."""
    if settings.data_dir is None:
        raise FaultlineError("the public data sets are not configured", fix=FETCH_HINT)
    path = Path(settings.data_dir).joinpath(*parts)
    if not path.exists():
        raise FaultlineError(f"{path} does not exist", fix=FETCH_HINT)
    return path


def configured_path(*parts: str, settings: Settings | None = None) -> Path | None:
    """`data_dir/parts...` when the data sets are configured (it may not exist yet), else None.

    For command-line defaults: the command says what is missing when the user gave no path either.
    """
    data_dir = (settings or Settings()).data_dir
    return None if data_dir is None else Path(data_dir).joinpath(*parts)


def require_paths(parser: argparse.ArgumentParser, args: argparse.Namespace, *names: str) -> None:
    """Stop a command (argparse's usage error) for each path option that is still None: not given, no data_dir."""
    for name in names:
        if getattr(args, name) is None:
            parser.error(f"--{name.replace('_', '-')} not given and the public data sets are not configured: "
                         f"{FETCH_HINT}")
