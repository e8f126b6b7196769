"""Log-engine throughput: the excerpt pipeline against a naive per-line baseline, same run.

A deterministic multi-component syslog (40 hosts, 11 programs, ~1% error lines, one chatty
component with no errors) is written to a temporary file and parsed once (`lines_from_files`,
timed apart). Then, from the same parsed lines:

- pipeline: `build_excerpt` - filter, suppression, context, templates (DRAIN3 over all lines),
  collapse/cap - each stage timed by the pipeline itself, end to end timed around the call.
  Template mining runs in a worker thread alongside filter, suppression and context (see
  faultline/logs/pipeline.py), so stage times overlap; "pipeline, no overlap" reruns the same
  work with mining done first and passed in, for the sequential figure;
- naive baseline: a Python loop over the lines running the same five level patterns with `re`
  and `drain3.TemplateMiner.add_log_message` on every message (drain3's default config, i.e.
  no masking, which only flatters the baseline). It runs on the first `--baseline-lines` lines
  (default 100,000) and is extrapolated linearly to the full count.

Peak memory is the process's peak RSS (`resource.getrusage`), read after parsing and after the
pipeline (the baseline runs last so it cannot inflate it).

    .venv/bin/python bench/log_throughput.py [--lines 1000000] [--baseline-lines 100000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TICKET = "Checkout API timeouts on web07 since 10:00, customers get 504"
SIMILAR = ["upstream timeout between nginx and app servers", "app pool exhausted on web12"]

# (weight, program, message template); {ip} {n} {ms} {hex} {eth} are filled per line
_MIX: list[tuple[float, str, str]] = [
    (30.0, "app", "GET /api/v1/items/{n} 200 {ms}ms req={hex}"),
    (4.0, "app", "POST /api/v1/checkout 201 {ms}ms req={hex}"),
    (0.45, "app", "ERROR request {hex} failed: upstream timeout after {ms} ms"),
    (0.05, "app", "java.lang.IllegalStateException: connection pool exhausted (active={n})"),
    (20.0, "lldpd", "neighbor {ip} on {eth} up, chassis {hex}"),
    (3.0, "lldpd", "MSAP has changed for port {eth}, refreshing neighbor {ip}"),
    (10.0, "dhcpd", "DHCPACK on {ip} to 3c:22:fb:{hex2}:{hex2}:{hex2} via eth0"),
    (8.0, "sshd", "Accepted publickey for deploy from {ip} port {n} ssh2: RSA SHA256:{hex}"),
    (2.0, "sshd", "Disconnected from user deploy {ip} port {n}"),
    (0.2, "sshd", "Failed password for invalid user admin from {ip} port {n} ssh2"),
    (8.0, "kernel", "[UFW AUDIT] IN=eth0 OUT= SRC={ip} DST={ip} LEN={n} PROTO=TCP SPT={n} DPT=443"),
    (0.03, "kernel", "{eth}: NIC Link is Down"),
    (0.03, "kernel", "{eth}: NIC Link is Up 10 Gbps Full Duplex"),
    (0.01, "kernel", "Out of memory: Killed process {n} (java) total-vm:{n}kB"),
    (0.15, "kernel", "blk_update_request: I/O error, dev sdb, sector {n}"),
    (5.0, "CRON", "(root) CMD (run-parts /etc/cron.hourly)"),
    (4.0, "systemd", "Started Session {n} of user deploy."),
    (3.0, "systemd", "session-{n}.scope: Succeeded."),
    (3.0, "ntpd", "adjusting local clock by 0.{n}s"),
    (1.0, "bgpd", "%ADJCHANGE: neighbor {ip} in vrf default Up"),
    (0.05, "bgpd", "%ADJCHANGE: neighbor {ip} in vrf default Down Hold Timer Expired"),
    (6.0, "nginx", "{ip} - - \"GET /static/{hex}.js HTTP/1.1\" 200 {n}"),
    (0.1, "nginx", "upstream timed out (110: Connection timed out) while reading response header from upstream"),
]
_HOSTS = [f"web{i:02d}" for i in range(1, 25)] + [f"db{i:02d}" for i in range(1, 9)] + [f"sw{i}" for i in range(1, 9)]


def generate(path: Path, lines: int, seed: int = 20240501) -> float:
    """Write `lines` RFC 3164 syslog lines to `path`; return the share of error lines."""
    rng = random.Random(seed)
    weights = [w for w, _p, _m in _MIX]
    picks = rng.choices(range(len(_MIX)), weights=weights, k=lines)
    errors = 0
    error_markers = ("ERROR", "Exception", "Failed", "Out of memory", "I/O error", "Expired", "timed out")
    with path.open("w") as out:
        for i, k in enumerate(picks):
            _w, prog, msg = _MIX[k]
            second = i // 50
            stamp = f"Nov {12 + second // 86400:2d} {second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
            text = msg.format(ip=f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
                              n=rng.randrange(1, 65535), ms=rng.randrange(1, 3000), hex=f"{rng.getrandbits(32):08x}",
                              hex2=f"{rng.randrange(256):02x}", eth=f"eth{rng.randrange(4)}")
            errors += any(m in text for m in error_markers)
            out.write(f"{stamp} {rng.choice(_HOSTS)} {prog}[{100 + k * 37}]: {text}\n")
    return errors / lines


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def naive_baseline(messages: list[str], severities: list[str | None], raws: list[str], terms: list[str]) -> float:
    """Seconds for the per-line loop: five levels with Python `re`, then drain3 on every line."""
    from drain3 import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig

    from faultline.logs.vocab import default_vocab, terms_pattern

    vocab = default_vocab()

    def compiled(patterns: list[str | None]) -> list[re.Pattern[str]]:
        return [re.compile(p) for p in patterns if p]

    l1 = vocab.levels["L1"]
    l1_raw = compiled([*l1.regexes])
    severe = set(l1.severities)
    levels = [compiled([terms_pattern(list(vocab.levels[n].terms)), *vocab.levels[n].regexes])
              for n in ("L2", "L3", "L4")]
    l5 = compiled([terms_pattern(terms)])
    miner = TemplateMiner(config=TemplateMinerConfig())
    began = time.perf_counter()
    kept = 0
    for message, severity, raw in zip(messages, severities, raws, strict=True):
        fired = [severity in severe or any(p.search(raw) for p in l1_raw)]
        fired += [any(p.search(message) for p in pats) for pats in (*levels, l5)]
        kept += any(fired)
        miner.add_log_message(message)
    return time.perf_counter() - began


def run(lines: int, baseline_lines: int, seed: int) -> dict[str, object]:
    """Generate, parse, run the pipeline and the baseline; return every figure."""
    from faultline.config import Settings
    from faultline.logs.filter import ticket_terms
    from faultline.logs.pipeline import build_excerpt, lines_from_files, mine_incident_templates
    from faultline.logs.vocab import default_vocab

    settings = Settings(log_default_year=2025, progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fleet.log"
        began = time.perf_counter()
        error_share = generate(path, lines, seed)
        generate_s = time.perf_counter() - began
        rss_generated = _rss_mb()
        began = time.perf_counter()
        frame = lines_from_files([path], settings, "syslog_rfc3164")
        parse_s = time.perf_counter() - began
    rss_parsed = _rss_mb()
    # warm-up on a slice: regex compilation and first-call costs are not throughput
    build_excerpt(frame.head(20_000), settings=settings, ticket_text=TICKET, similar_texts=SIMILAR, incident_id="warm")
    began = time.perf_counter()
    excerpt = build_excerpt(frame, settings=settings, ticket_text=TICKET, similar_texts=SIMILAR, incident_id="bench")
    pipeline_s = time.perf_counter() - began
    rss_pipeline = _rss_mb()
    # the same work with no overlap: mine first, then the stages (what a caller passing
    # `mined=` gets, e.g. the CLI, which stores the templates too)
    began = time.perf_counter()
    mined = mine_incident_templates(frame)
    mine_s = time.perf_counter() - began
    build_excerpt(frame, settings=settings, ticket_text=TICKET, similar_texts=SIMILAR, incident_id="bench", mined=mined)
    sequential_s = time.perf_counter() - began
    sample = frame.head(min(baseline_lines, frame.height))
    terms = ticket_terms(TICKET, SIMILAR, default_vocab())
    baseline_sample_s = naive_baseline(sample.get_column("message").to_list(), sample.get_column("severity").to_list(),
                                       sample.get_column("raw").to_list(), terms)
    baseline_s = baseline_sample_s * frame.height / sample.height
    stages = {name: {"seconds": s, "lines_per_s": round(frame.height / s) if s else None}
              for name, s in excerpt.timings.items()}
    return {
        "lines": frame.height, "error_share": round(error_share, 4), "cpus": os.cpu_count(),
        "generate_seconds": round(generate_s, 3),
        "parse": {"seconds": round(parse_s, 3), "lines_per_s": round(frame.height / parse_s)},
        "stages": stages,
        "pipeline": {"seconds": round(pipeline_s, 3), "lines_per_s": round(frame.height / pipeline_s)},
        "pipeline_sequential": {"seconds": round(sequential_s, 3), "mining_seconds": round(mine_s, 3),
                                "lines_per_s": round(frame.height / sequential_s),
                                "speedup": round(baseline_s / sequential_s, 1)},
        "baseline": {"sample_lines": sample.height, "sample_seconds": round(baseline_sample_s, 3),
                     "extrapolated_seconds": round(baseline_s, 3),
                     "lines_per_s": round(sample.height / baseline_sample_s)},
        "speedup": round(baseline_s / pipeline_s, 1),
        "peak_rss_mb": {"after_generate": round(rss_generated), "after_parse": round(rss_parsed),
                        "after_pipeline": round(rss_pipeline)},
        "excerpt": {"lines": len(excerpt.lines), "level_counts": excerpt.level_counts,
                    "suppressed": [(c.component, c.lines) for c in excerpt.suppressed],
                    "collapsed_lines": excerpt.collapsed_lines, "truncated": excerpt.truncated,
                    "truncated_lines": excerpt.truncated_lines},
        "goals": {"pipeline_20x_baseline": baseline_s / pipeline_s >= 20,
                  "filter_1M_lines_per_s": frame.height / excerpt.timings["filter"] >= 1_000_000},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--baseline-lines", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=20240501)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from faultline.offline import apply_offline_env

    apply_offline_env()
    result = run(args.lines, args.baseline_lines, args.seed)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    n = result["lines"]
    print(f"{n:,} syslog lines ({result['error_share']:.2%} errors), {result['cpus']} CPUs; "
          f"generated in {result['generate_seconds']} s")
    print(f"{'stage':<30}{'seconds':>10}{'lines/s':>14}")
    parse = result["parse"]
    print(f"{'(parse, not counted)':<30}{parse['seconds']:>10.3f}{parse['lines_per_s']:>14,}")  # type: ignore[index]
    for name, fig in result["stages"].items():  # type: ignore[union-attr]
        label = f"{name} (overlapped)" if name == "templates_mining" else name
        print(f"{label:<30}{fig['seconds']:>10.3f}{fig['lines_per_s']:>14,}")
    pipe, base, seq = result["pipeline"], result["baseline"], result["pipeline_sequential"]
    print(f"{'pipeline end to end':<30}{pipe['seconds']:>10.3f}{pipe['lines_per_s']:>14,}")  # type: ignore[index]
    print(f"{'pipeline, no overlap':<30}{seq['seconds']:>10.3f}{seq['lines_per_s']:>14,}"  # type: ignore[index]
          f"   (mining first: {seq['mining_seconds']} s)")  # type: ignore[index]
    print(f"{'naive baseline':<30}{base['extrapolated_seconds']:>10.3f}{base['lines_per_s']:>14,}"  # type: ignore[index]
          f"   (measured on {base['sample_lines']:,} lines in {base['sample_seconds']} s, extrapolated)")  # type: ignore[index]
    print(f"speedup: {result['speedup']}x (no overlap: {seq['speedup']}x)   "  # type: ignore[index]
          f"peak RSS MB: {result['peak_rss_mb']}")
    print(f"excerpt: {result['excerpt']}")
    print(f"goals: {result['goals']}")


if __name__ == "__main__":
    main()
