"""Backdate the tickets of an already generated historical corpus, as `backdate_days` in its suite now does.

The sample history was generated after the sample backlog, so its tickets were resolved after every backlog
ticket was opened and ASTRA's rule (history = tickets resolved before the incident was opened) found none.
Generation now files historical tickets `backdate_days` before the lab recorded them; this applies the same
shift to a corpus generated before that: the ticket's created/updated/resolved times and the symptom
observation times in ground_truth.json move back by N days; incident.json records the shift. Device logs keep
the lab's wall-clock time (they are evidence of the incident, not of when it was filed). Idempotent.

    .venv/bin/python scripts/backdate_tickets.py data/sample/history --days 30
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timedelta
from pathlib import Path


def _shift(value: str | None, days: int) -> str | None:
    if not value:
        return value
    moved = datetime.fromisoformat(value.replace("Z", "+00:00")) - timedelta(days=days)
    return moved.isoformat().replace("+00:00", "Z") if value.endswith("Z") else moved.isoformat()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--days", type=int, required=True)
    args = parser.parse_args()
    changed = 0
    for meta_file in sorted(args.corpus.glob("*/incident.json")):
        meta = json.loads(meta_file.read_text())
        delta = args.days - int(meta.get("backdated_days", 0))
        if delta == 0:
            continue
        folder = meta_file.parent
        ticket = json.loads((folder / "ticket.json").read_text())
        for key in ("created_at", "updated_at", "resolved_at"):
            ticket[key] = _shift(ticket.get(key), delta)
        truth = json.loads((folder / "ground_truth.json").read_text())
        for symptom in truth.get("symptoms", []):
            symptom["observed_at"] = _shift(symptom.get("observed_at"), delta)
        meta["backdated_days"] = args.days
        for path, data in ((folder / "ticket.json", ticket), (folder / "ground_truth.json", truth), (meta_file, meta)):
            path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        changed += 1
    print(f"{changed} incidents backdated to {args.days} days")


if __name__ == "__main__":
    main()
