"""Embedding batch size: seconds and memory for embedding tickets at each `embedding_batch_size`.

The first `--tickets-n` tickets of the ZooKeeper export (the text the index embeds for a ticket,
`ticket_texts`, sorted by length as the index sorts them) are embedded by the product's `Embedder`, in
batches of each `--batch` asked for, each size in a fresh process (its own peak): seconds, the
process's resident memory after the model's load, its peak while embedding and the rise between.
torch uses its default threads, as the flow's index stage does. The rise is mostly the attention of
one batch (batch x 12 heads x tokens x tokens floats); figures are ratios within one run.

    .venv/bin/python bench/embed_batch.py [--tickets FILE] [--batch 16 --batch 64] [--tickets-n 1024] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from faultline.datasets import configured_path, require_paths  # noqa: E402

_CHILD = r"""
import json, resource, sys, time
from faultline.config import Settings
from faultline.offline import apply_offline_env
from faultline.retrieval.embed import Embedder
from faultline.retrieval.index import ticket_texts

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024

apply_offline_env()
path, n, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
texts = []
with open(path) as handle:
    for line in handle:
        ticket = json.loads(line)
        texts.append(ticket_texts(ticket.get("summary"), ticket.get("description"), ticket.get("environment"),
                                  ticket.get("components")).embed)
        if len(texts) == n:
            break
texts.sort(key=len)
embedder = Embedder(Settings(embedding_batch_size=batch))
embedder.embed(["warm up", "the model"])
before = rss_mb()
floor = max(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
started = time.perf_counter()
embedder.embed(texts)
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(json.dumps({"batch": batch, "texts": len(texts), "seconds": round(seconds, 2), "rss_after_load_mb": before,
                  "peak_rss_mb": peak, "rise_mb": peak - floor}))
"""


def run_once(tickets: Path, n: int, batch: int) -> dict[str, Any]:
    """One batch size in a fresh process."""
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tickets), str(n), str(batch)], cwd=REPO,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"batch {batch} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=Path, default=configured_path("tickets", "zookeeper.jsonl"))
    parser.add_argument("--batch", type=int, action="append", help="batch size (repeatable; default 16 and 64)")
    parser.add_argument("--tickets-n", type=int, default=1024, help="tickets embedded per batch size")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    require_paths(parser, args, "tickets")
    runs = [run_once(args.tickets, args.tickets_n, batch) for batch in args.batch or [16, 64]]
    if args.json:
        print(json.dumps({"runs": runs}, indent=2))
        return
    for r in runs:
        print(f"batch {r['batch']:>4}: {r['texts']} texts in {r['seconds']:.1f} s, RSS {r['rss_after_load_mb']} MB "
              f"after the model's load, peak {r['peak_rss_mb']} MB (+{r['rise_mb']} MB)")


if __name__ == "__main__":
    main()
