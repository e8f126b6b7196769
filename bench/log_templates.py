"""Grouping accuracy of Faultline's DRAIN3 templates on the Loghub-2k systems.

Each system's raw `<System>_2k.log` goes through the product path: `text_lines` -> `parse_lines`
(format auto-detected) -> `message` -> `mine_templates` with ONE configuration for every system
(`default_miner_config()`; only the mask file's per-format rules differ). Grouping accuracy (GA)
is the logparser definition: a line is right when its predicted group holds exactly the lines of
its ground-truth group; the ground truth is grouped by `EventTemplate` of the structured file.

    .venv/bin/python bench/log_templates.py [--data DIR] [--per-system-drain] [--json]

`--data` takes any folder laid out like `$FAULTLINE_DATA_DIR/logs/loghub2k/` (docs/data.md) (`settings.json` plus
per-system folders). `--per-system-drain` uses each system's published Drain `st`/`depth` instead
(the per-system setup behind the published numbers), with the same masks.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from faultline.datasets import configured_path, require_paths  # noqa: E402

ANCHOR_MEAN_GA = 0.865  # published Drain mean GA over the 16 systems (logparser README)


@dataclass(frozen=True)
class SystemResult:
    """GA and counts for one system."""

    system: str
    detected_format: str
    lines: int
    gt_groups: int
    predicted_groups: int
    ga: float
    published_ga: float | None
    mine_seconds: float
    sim_th: float
    depth: int

    @property
    def delta(self) -> float | None:
        return None if self.published_ga is None else self.ga - self.published_ga


def grouping_accuracy(predicted: pl.Series, truth: pl.Series) -> float:
    """Share of lines whose predicted group has exactly the line set of their true group."""
    frame = pl.DataFrame({"p": predicted, "t": truth})
    scored = frame.with_columns(
        pl.len().over("p").alias("np"), pl.len().over("t").alias("nt"), pl.len().over("p", "t").alias("nb")
    )
    right = scored.filter((pl.col("np") == pl.col("nb")) & (pl.col("nt") == pl.col("nb"))).height
    return right / frame.height if frame.height else 1.0


def _truth(path: Path) -> dict[int, str]:
    with path.open(newline="", encoding="utf-8") as handle:
        return {int(row["LineId"]): row["EventTemplate"] for row in csv.DictReader(handle)}


def run_system(data: Path, system: str, spec: dict, config) -> SystemResult:
    """Parse, mine and score one system."""
    from faultline.ingest.logformats import parse_lines
    from faultline.ingest.reading import read_file, text_lines
    from faultline.logs.templates import mine_templates

    lines = text_lines(read_file(data / spec["log_file"]).data)
    parsed = parse_lines(lines.select("line_no", "raw"), fmt=None, default_year=2017)
    fmt = parsed.get_column("format").mode().sort().item(0)
    formats = [f for f in parsed.get_column("format").unique().to_list() if f != "raw"]
    started = time.perf_counter()  # per-format masks apply, as in the CLI, when one format is found
    mined = mine_templates(parsed.get_column("message"), config, fmt=formats[0] if len(formats) == 1 else None)
    seconds = time.perf_counter() - started
    truth = _truth(data / spec["structured_file"])
    line_nos = parsed.get_column("line_no").to_list()
    missing = [n for n in line_nos if n not in truth]
    if missing or len(line_nos) != len(truth):
        raise SystemExit(f"{system}: {len(line_nos)} log lines vs {len(truth)} ground-truth rows")
    gt = pl.Series("t", [truth[n] for n in line_nos])
    predicted = mined.template_ids.fill_null(0)
    return SystemResult(
        system=system, detected_format=fmt, lines=len(line_nos), gt_groups=gt.n_unique(),
        predicted_groups=predicted.n_unique(), ga=grouping_accuracy(predicted, gt),
        published_ga=(spec.get("published_drain") or {}).get("grouping_accuracy"),
        mine_seconds=seconds, sim_th=config.sim_th, depth=config.depth,
    )


def run(data: Path, *, per_system_drain: bool, systems: list[str] | None = None) -> dict:
    """Score every system of the folder; returns the JSON-ready report."""
    from faultline.offline import apply_offline_env

    apply_offline_env()
    from faultline.logs.templates import default_miner_config

    settings = json.loads((data / "settings.json").read_text())["systems"]
    base = default_miner_config()
    results = []
    for system in sorted(settings):
        if systems and system not in systems:
            continue
        spec = settings[system]
        config = replace(base, sim_th=spec["st"], depth=spec["depth"]) if per_system_drain else base
        results.append(run_system(data, system, spec, config))
    published = [r.published_ga for r in results if r.published_ga is not None]
    total_lines = sum(r.lines for r in results)
    total_seconds = sum(r.mine_seconds for r in results)
    return {
        "data": str(data),
        "mode": "per-system st/depth" if per_system_drain else "one configuration",
        "miner_config": json.loads(base.as_json()),
        "systems": [asdict(r) | {"delta": r.delta} for r in results],
        "mean_ga": sum(r.ga for r in results) / len(results) if results else None,
        "mean_published_ga": sum(published) / len(published) if published else None,
        "anchor_mean_published_ga": ANCHOR_MEAN_GA,
        "mining_lines_per_second": total_lines / total_seconds if total_seconds else None,
    }


_USERS = [f"{a}{b}" for a in ("ops", "admin", "svc", "dev", "noc") for b in ("", "1", "2", "-ro", "_bk")] + [
    "root", "oracle", "postgres", "test", "guest", "ubuntu", "pi", "git", "backup", "monitor"]
_HOSTS = [f"{w}{i}.{d}" for w in ("edge", "core", "db", "web", "cache") for i in range(20)
          for d in ("example.net", "lab.local")]
_IFACES = ["GigabitEthernet0/0/{}", "TenGigE0/0/0/{}", "Bundle-Ether{}", "eth{}", "Hu0/0/0/{}", "ens{}", "veth{:x}a1"]
_STATES = ["Up", "Down", "Idle", "Active", "Established", "OpenSent"]
_TEMPLATES = [
    "%ROUTING-BGP-5-ADJCHANGE : neighbor {ip} {state} (VRF: default) (AS: {n5})",
    "%ROUTING-BGP-5-ADJCHANGE : neighbor {ip} Down - BGP Notification sent, hold time expired "
    "(VRF: default) (AS: {n5})",
    "%PKT_INFRA-LINK-3-UPDOWN : Interface {iface}, changed state to {updown}",
    "%PKT_INFRA-LINEPROTO-5-UPDOWN : Line protocol on Interface {iface}, changed state to {updown}",
    "%PKT_INFRA-FM-2-FAULT_CRITICAL : ALARM_CRITICAL :OPTICS RX POWER LOW :DECLARE :: {iface}",
    "%SECURITY-SSHD-6-INFO_USER_LOGOUT : User '{user}' from '{ip}' logged out on 'vty{n1}'",
    "Accepted publickey for {user} from {ip} port {port} ssh2: RSA SHA256:{hex}",
    "Failed password for invalid user {user} from {ip} port {port} ssh2",
    "pam_unix(sshd:session): session opened for user {user} by (uid={n3})",
    "{iface}: link {updown}, {speed} Mbps, full duplex",
    "DHCPACK({iface}) {ip} {mac} {host}",
    "query[A] {host} from {ip}",
    "connect() failed (111: Connection refused) while connecting to upstream, client: {ip}, server: {host}, "
    "request: \"GET /api/v1/items/{n5} HTTP/1.1\"",
    "Started Session {n5} of user {user}.",
    "nbr {ip} state changed from Full to {state}: KillNbr",
    "OSPF: Neighbor {ip} on {iface} changed from Loading to Full",
    "zebra: route {ip}/{plen} via {ip2} dev {iface} added in {ms} ms",
    "kernel: [{up}] Out of memory: Killed process {pid} ({proc}) total-vm:{kb}kB",
    "watchdog: BUG: soft lockup - CPU#{n1} stuck for {n2}s! [{proc}:{pid}]",
    "job {uuid} finished in {secs} seconds with status {status}",
    "cache {host} hit ratio {ratio} after {n5} requests",
    "queue {proc}-{n1} overflow: dropped {n3} packets on {iface}",
    "config commit {n5} by {user} at {ts}",
    "health check to {host}:{port} timed out after {ms} ms",
]


def synthetic_messages(lines: int, seed: int = 11) -> list[str]:
    """Deterministic syslog/IOS-XR-like messages: 24 templates, moderate value cardinality."""
    import random
    import uuid

    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(lines):
        template = _TEMPLATES[min(int(rng.expovariate(0.25)), len(_TEMPLATES) - 1)]
        out.append(template.format(
            ip=f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
            ip2=f"172.16.{rng.randrange(256)}.{rng.randrange(1, 255)}", plen=rng.choice((24, 30, 32)),
            state=rng.choice(_STATES), updown=rng.choice(("up", "down")), user=rng.choice(_USERS),
            host=rng.choice(_HOSTS), iface=rng.choice(_IFACES).format(rng.randrange(48)),
            n1=rng.randrange(10), n2=rng.randrange(100), n3=rng.randrange(1000), n5=rng.randrange(100000),
            port=rng.randrange(1024, 65536), hex=f"{rng.getrandbits(64):016x}", speed=rng.choice((1000, 10000)),
            mac=":".join(f"{rng.randrange(256):02x}" for _ in range(6)), ms=rng.randrange(5000),
            up=f"{rng.uniform(0, 1e6):.6f}", pid=rng.randrange(100, 99999), kb=rng.randrange(10**6),
            proc=rng.choice(("bgpd", "ospfd", "nginx", "java", "python3", "sshd")),
            uuid=uuid.UUID(int=rng.getrandbits(128)), secs=f"{rng.uniform(0, 300):.2f}",
            status=rng.choice(("ok", "failed", "timeout")), ratio=f"{rng.random():.3f}",
            ts=f"2024-05-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:00Z",
        ))
    return out


def throughput(lines: int) -> dict:
    """Time `mine_templates` (and masking alone) on `lines` synthetic messages."""
    import resource

    from faultline.logs.masking import mask_messages
    from faultline.logs.templates import default_miner_config, mine_templates

    messages = pl.Series("message", synthetic_messages(lines))
    config = default_miner_config()
    started = time.perf_counter()
    masked = mask_messages(messages, config.mask_set().rules_for(None))
    mask_seconds = time.perf_counter() - started
    started = time.perf_counter()
    mined = mine_templates(messages, config)
    seconds = time.perf_counter() - started
    return {
        "lines": lines, "distinct_messages": messages.n_unique(), "distinct_masked": masked.n_unique(),
        "mined_messages": mined.mined_messages, "templates": mined.templates.height,
        "seconds": seconds, "lines_per_second": lines / seconds,
        "mask_all_lines_seconds": mask_seconds,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _print(report: dict) -> None:
    header = f"{'system':<12} {'format':<19} {'lines':>5} {'GT':>4} {'pred':>4} {'GA':>7} {'Drain':>7} {'delta':>7}"
    print(f"Loghub-2k grouping accuracy — {report['mode']} ({report['miner_config']['masks']})")
    print(header)
    for r in report["systems"]:
        pub = "" if r["published_ga"] is None else f"{r['published_ga']:.4f}"
        delta = "" if r["delta"] is None else f"{r['delta']:+.4f}"
        print(f"{r['system']:<12} {r['detected_format']:<19} {r['lines']:>5} {r['gt_groups']:>4} "
              f"{r['predicted_groups']:>4} {r['ga']:>7.4f} {pub:>7} {delta:>7}")
    mean, pub = report["mean_ga"], report["mean_published_ga"]
    print(f"{'mean':<12} {'':<19} {'':>5} {'':>4} {'':>4} {mean:>7.4f} {pub:>7.4f} {mean - pub:>+7.4f}")
    print(f"mining: {report['mining_lines_per_second']:,.0f} lines/s (mask + mine + map, all systems)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=configured_path("logs", "loghub2k"),
                        help="folder with settings.json (default: $FAULTLINE_DATA_DIR/logs/loghub2k)")
    parser.add_argument("--per-system-drain", action="store_true", help="use each system's st/depth")
    parser.add_argument("--system", action="append", help="only this system (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--throughput", type=int, metavar="LINES",
                        help="instead: time mining on LINES generated syslog-like messages")
    args = parser.parse_args(argv)
    if not args.throughput:
        require_paths(parser, args, "data")
    if args.throughput:
        figures = throughput(args.throughput)
        print(json.dumps(figures, indent=2) if args.json else "\n".join(
            f"{k:>24}: {v:,.2f}" if isinstance(v, float) else f"{k:>24}: {v:,}" for k, v in figures.items()))
        return
    if not (args.data / "settings.json").is_file():
        raise SystemExit(f"{args.data} has no settings.json; pass --data DIR")
    report = run(args.data, per_system_drain=args.per_system_drain, systems=args.system)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)


if __name__ == "__main__":
    main()
