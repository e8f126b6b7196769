#!/usr/bin/env python3
"""Lay out Faultline's external data folder from upstream snapshots (stdlib only).

    data_convert.py sources          print "owner/repo commit path..." per upstream snapshot
    data_convert.py build SRC DEST   fill DEST from SRC, which holds one plain folder per
                                     upstream repository, named owner+repo

docs/data.md describes every file and holds the checksums that scripts/fetch_data.sh checks.
"""
from __future__ import annotations

import ast
import csv
import io
import json
import re
import sys
from pathlib import Path

LOGPARSER = "logpai/logparser"
LOGHUB = "logpai/loghub"
TELEMETRY = "cisco-ie/telemetry"
JIRA = "SPEAR-SE/LogInBugReportsEmpirical_Data"
FRR = "FRRouting/frr"
RFCS = "acidvegas/rfcs"

COMMITS = {
    LOGPARSER: "db272234a0cb35422caedef30845f37db1062da9",
    LOGHUB: "dd61d0952749ee7963bde24220d1be5ede023033",
    TELEMETRY: "e2bd39fbafd0a6d716d5a34f1a2fe41e40b3bb86",
    JIRA: "ab9603c66899b48b0b86bdf63ae7f7a604212b29",
    FRR: "fbfc8222da75dff28696b0d17f257cdf0808ba21",
    RFCS: "60755ff2f1eeac434247de25dfd7e22fd15c3182",
}

RFC_NUMBERS = (791, 792, 826, 1034, 1035, 1812, 1918, 2131, 2132, 2328, 2453, 4271, 4632, 5880,
               6811, 7938)
FRR_DAEMONS = ("babeld/babel", "bgpd/bgp", "eigrpd/eigrp", "isisd/isis", "lib/lib", "nhrpd/nhrp",
               "ospfd/ospf", "pathd/path", "pimd/pim", "ripd/rip", "watchfrr/watchfrr",
               "zebra/zebra")
LOGHUB_DIR = "data/loghub_2k_corrected"
DRAIN_DIR = "logparser/Drain"

# What each snapshot must provide (git pathspecs; also valid sparse-checkout patterns).
PATHS = {
    LOGPARSER: [f"{LOGHUB_DIR}/*/*_2k.log", f"{LOGHUB_DIR}/*/*_corrected.csv",
                f"{DRAIN_DIR}/benchmark.py", f"{DRAIN_DIR}/README.md"],
    LOGHUB: ["LICENSE", "CITATION"],
    TELEMETRY: ["LICENSE.CDLA", "3/logfiles/*.log", "3/bgpclear_casedata.txt",
                "3/bgpclear_no_traffic_casedata.txt"],
    JIRA: ["bug_reports/Zookeeper/details/*.json"],
    FRR: ["doc/user/*.rst", "doc/manpages/*.rst", "debian/copyright", "doc/licenses/GPL-2.0",
          "lib/ferr.h"] + [f"{d}_errors.{ext}" for d in FRR_DAEMONS for ext in ("c", "h")],
    RFCS: [f"rfcs/rfc{n}.txt" for n in RFC_NUMBERS],
}

# --- Values and notes that exist only in this bundle, not upstream ---------------------------
# Drain3 0.9.11 grouping accuracy measured by the project; order: original ground truth,
# corrected ground truth grouped by EventTemplate, corrected ground truth grouped by EventId.
MEASURED_DRAIN3_GA = {
    "HDFS": (0.9975, 0.9975, 0.9975), "Hadoop": (0.9475, 0.9475, 0.9475),
    "Spark": (0.92, 0.92, 0.92), "Zookeeper": (0.9665, 0.9665, 0.9665),
    "BGL": (0.9625, 0.9625, 0.9625), "HPC": (0.887, 0.887, 0.887),
    "Thunderbird": (0.955, 0.955, 0.955), "Windows": (0.997, 0.997, 0.997),
    "Linux": (0.69, 0.876, 0.69), "Android": (0.831, 0.8565, 0.8565),
    "HealthApp": (0.78, 0.78, 0.78), "Apache": (1.0, 1.0, 1.0),
    "Proxifier": (0.5265, 0.5265, 0.5265), "OpenSSH": (0.7875, 0.789, 0.789),
    "OpenStack": (0.7325, 0.7325, 0.7325), "Mac": (0.7865, 0.7865, 0.7865),
}
SETTINGS_FIELD_NOTES = {
    "log_format": "logparser header template: <Field> tokens are named groups, everything else "
                  "literal; the <Content> group is the free-text message fed to the parser. "
                  "Backslashes are regex escapes as written upstream.",
    "regex": "list of Python regexes whose matches are replaced by the wildcard <*> before "
             "parsing (logparser \"rex\").",
    "st": "Drain similarity threshold (Drain3: sim_th).",
    "depth": "Drain parse-tree depth (Drain3: depth).",
    "published_drain.grouping_accuracy": "GA (\"Accuracy\" column) published for Drain on the "
                                         "ORIGINAL Loghub-2k ground truth "
                                         "(<Sys>_2k.log_structured.csv, not shipped here).",
    "published_drain.f1_measure": "F1_measure column of the same table.",
    "measured_drain3_ga": "NOT published upstream: grouping accuracy of Drain3 0.9.11 "
                          "(logpai/Drain3 snapshot) with sim_th=st, depth=depth, masking = the "
                          "regex list with mask \"*\" (tokens become <*>), fed the Content column "
                          "line by line; GA as in the logparser evaluator (a line is correct when "
                          "its predicted cluster has exactly the same line set as its "
                          "ground-truth group). on_original_gt: ground truth = original "
                          "<Sys>_2k.log_structured.csv grouped by EventId (not shipped). "
                          "on_corrected_gt_by_template: the shipped *_structured_corrected.csv "
                          "grouped by EventTemplate. on_corrected_gt_by_eventid: same file "
                          "grouped by EventId. Use by_template (see ground_truth_note).",
}
GROUND_TRUTH_NOTE = (
    "The published GA numbers were computed against the original ground truth. The files shipped "
    "here are the corrected ground truth (Khan et al., ICSE 2022). Drain3 reproduces the "
    "published GA on the original GT for 15 of 16 systems (Android: 0.831 vs 0.911 published). "
    "On the corrected GT, GA changes for Linux (0.69 -> 0.876), OpenSSH (0.7875 -> 0.789) and "
    "Android (0.8565). Upstream quirk: in Linux_2k.log_structured_corrected.csv the EventIds E17, "
    "E18 and E19 carry the same template text (E17/E19 are absent from the templates file), so "
    "grouping the corrected GT by EventId gives 0.69 for Linux, by EventTemplate 0.876. Group by "
    "EventTemplate.")
FRR_DOCS_NOTICE_HEAD = (
    "Licence notice for user/*.rst, copied verbatim from FRRouting/frr debian/copyright\n"
    "(commit {commit}). The same notice appears at the end of doc/user/index.rst.\n\n")
TICKETS_README = """\
# tickets/

Public Apache JIRA content; licence not stated by the source repository.

- Source: `{repo}`, `bug_reports/Zookeeper/details/<KEY>.json`
  (full JIRA REST issue records, comments included), commit `{commit}`.
- The source repository has no licence file. The text is public issue-tracker content from
  issues.apache.org (project ZOOKEEPER), written by its many authors. Use it for local testing
  and evaluation only. Do not copy it into the code repository or redistribute it.
- `zookeeper.jsonl`: one ticket per line ({tickets:,} tickets, all JIRA type Bug). The field list is in
  `../README.md`.
- `zookeeper_duplicates.csv`: duplicate pairs built from the JIRA "Duplicate" links. There are
  {pairs} pairs; {usable} of them have both tickets in `zookeeper.jsonl`.
"""
# JIRA accounts that only post build results, PR mirrors or review-board echoes.
BOT_ACCOUNTS = {"hadoopqa", "githubbot", "hudson", "jiraposter@reviews.apache.org"}


class Layout:
    """Resolves upstream paths inside SRC and writes files below DEST."""

    def __init__(self, src: Path, dest: Path):
        self.src, self.dest = src, dest

    def upstream(self, repo: str, path: str = "") -> Path:
        return self.src / repo.replace("/", "+") / path

    def write(self, rel: str, data: bytes | str) -> None:
        target = self.dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)

    def copy(self, repo: str, path: str, rel: str, lf: bool = False) -> None:
        data = self.upstream(repo, path).read_bytes()
        self.write(rel, data.replace(b"\r\n", b"\n") if lf else data)


def csv_text(rows: list[list]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


# --- logs/loghub2k -------------------------------------------------------------------------------

def drain_settings(benchmark_py: str) -> dict:
    """The benchmark_settings dict literal from logparser's Drain benchmark, without running it."""
    for node in ast.walk(ast.parse(benchmark_py)):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "benchmark_settings" for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit("benchmark_settings not found in logparser/Drain/benchmark.py")


def drain_published(readme: str) -> dict:
    """{system: (f1, accuracy)} from the Markdown table under '### Benchmark'."""
    table = readme.split("### Benchmark", 1)[1]
    scores = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"[\d.]+", cells[1]) and re.fullmatch(r"[\d.]+", cells[2]):
            scores[cells[0]] = (float(cells[1]), float(cells[2]))
    return scores


def build_loghub(lay: Layout) -> None:
    bench = drain_settings(lay.upstream(LOGPARSER, f"{DRAIN_DIR}/benchmark.py").read_text("utf-8"))
    published = drain_published(lay.upstream(LOGPARSER, f"{DRAIN_DIR}/README.md").read_text("utf-8"))
    systems = {}
    for name, cfg in bench.items():
        log = cfg["log_file"]
        for rel in (log, log + "_structured_corrected.csv", log + "_templates_corrected.csv"):
            lay.copy(LOGPARSER, f"{LOGHUB_DIR}/{rel}", f"logs/loghub2k/{rel}", lf=rel == log)
        f1, accuracy = published[name]
        original, by_template, by_eventid = MEASURED_DRAIN3_GA[name]
        systems[name] = {
            "log_file": log,
            "structured_file": log + "_structured_corrected.csv",
            "templates_file": log + "_templates_corrected.csv",
            "log_format": cfg["log_format"], "regex": cfg["regex"],
            "st": cfg["st"], "depth": cfg["depth"],
            "published_drain": {"grouping_accuracy": accuracy, "f1_measure": f1},
            "measured_drain3_ga": {"on_original_gt": original,
                                   "on_corrected_gt_by_template": by_template,
                                   "on_corrected_gt_by_eventid": by_eventid},
        }
    commit = COMMITS[LOGPARSER]
    about = {
        "source_settings": f"{LOGPARSER} {DRAIN_DIR}/benchmark.py (benchmark_settings), commit {commit}",
        "source_published_accuracy": f"{LOGPARSER} {DRAIN_DIR}/README.md \"Benchmark\" table, commit {commit}",
        "fields": SETTINGS_FIELD_NOTES,
        "ground_truth_note": GROUND_TRUTH_NOTE,
    }
    lay.write("logs/loghub2k/settings.json",
              json.dumps({"_about": about, "systems": systems}, indent=2) + "\n")
    for name in ("LICENSE", "CITATION"):
        lay.copy(LOGHUB, name, f"logs/loghub2k/{name}", lf=True)


# --- logs/iosxr/bgpclear ---------------------------------------------------------------------------

def casedata_rows(text: str) -> list[dict]:
    """Rows of a pipe table as dicts keyed by header cell; the '----' rulers are skipped."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("|")]
    table = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    header, body = table[0], [r for r in table[1:] if not set("".join(r)) <= {"-"}]
    return [dict(zip(header, row)) for row in body]


def pdt(stamp: str) -> str:
    """'8/4/17 10:20' -> '2017-08-04T10:20:00-07:00' (casedata times are PDT, to the minute)."""
    day, clock = stamp.split()
    month, dom, year = (int(x) for x in day.split("/"))
    hour, minute = (int(x) for x in clock.split(":"))
    return f"{2000 + year:04d}-{month:02d}-{dom:02d}T{hour:02d}:{minute:02d}:00-07:00"


def devices(cell: str) -> list[str]:
    """'leaf1' / 'spine 2' / 'leaf 2 & leaf 8' / 'spine 1 - 3' -> device names."""
    names = []
    for part in cell.split("&"):
        kind, first, last = re.fullmatch(r"\s*([a-z]+)\s*(\d+)(?:\s*-\s*(\d+))?\s*", part).groups()
        names += [f"{kind}{n}" for n in range(int(first), int(last or first) + 1)]
    return names


def build_iosxr(lay: Layout) -> None:
    out = "logs/iosxr/bgpclear"
    lay.copy(TELEMETRY, "LICENSE.CDLA", f"{out}/LICENSE.CDLA")
    for log in sorted(lay.upstream(TELEMETRY, "3/logfiles").glob("*.log")):
        lay.copy(TELEMETRY, f"3/logfiles/{log.name}", f"{out}/logs/{log.name}")
    events = [["event_id", "event_type", "device", "remote", "start", "end", "scenario",
               "case_row", "interface", "description", "comment"]]
    for scenario in ("bgpclear", "bgpclear_no_traffic"):
        name = f"{scenario}_casedata.txt"
        lay.copy(TELEMETRY, f"3/{name}", f"{out}/{name}")
        text = lay.upstream(TELEMETRY, f"3/{name}").read_text("utf-8")
        row_no = 0
        for row in casedata_rows(text):
            if not row["Event Start (PDT)"]:  # the "Clean Base Line" row: telemetry window only
                continue
            row_no += 1
            found = devices(row["Event Device"])
            for i, device in enumerate(found):
                suffix = "abcdefghij"[i] if len(found) > 1 else ""
                events.append([f"{scenario}-{row_no:02d}{suffix}", "bgp_clear", device, "",
                               pdt(row["Event Start (PDT)"]), pdt(row["Event End (PDT)"]),
                               scenario, row_no, "", " ".join(next(iter(row.values())).split()),
                               row["Comments"]])
    lay.write(f"{out}/events.csv", csv_text(events))


# --- tickets ---------------------------------------------------------------------------------------

def jira_time(stamp: str | None) -> str | None:
    """JIRA's '+0000' offset written as '+00:00'."""
    if stamp is None:
        return None
    return re.sub(r"([+-]\d\d)(\d\d)$", r"\1:\2", stamp)


def lf(text: str | None) -> str | None:
    return None if text is None else text.replace("\r\n", "\n")


def named(value: dict | None) -> str | None:
    return None if value is None else value["name"]


def ticket(record: dict) -> dict:
    f = record["fields"]
    links = []
    for link in f.get("issuelinks") or []:
        for direction in ("outward", "inward"):
            other = link.get(f"{direction}Issue")
            if other:
                links.append({"type": link["type"]["name"], "direction": direction,
                              "key": other["key"]})
    comments = [{"author": c["author"]["displayName"], "created": jira_time(c["created"]),
                 "body": lf(c["body"])}
                for c in (f.get("comment") or {}).get("comments", [])
                if c["author"]["name"] not in BOT_ACCOUNTS]
    comments.sort(key=lambda c: c["created"])
    return {
        "key": record["key"], "project": f["project"]["key"],
        "created": jira_time(f["created"]), "resolved": jira_time(f.get("resolutiondate")),
        "status": named(f["status"]), "resolution": named(f.get("resolution")),
        "priority": named(f.get("priority")),
        "components": [c["name"] for c in f.get("components") or []],
        "versions": [v["name"] for v in f.get("versions") or []],
        "fix_versions": [v["name"] for v in f.get("fixVersions") or []],
        "summary": lf(f["summary"]).strip(), "description": lf(f.get("description")),
        "environment": lf(f.get("environment")),
        "links": links, "comments": comments,
    }


def duplicate_pairs(tickets: dict[str, dict]) -> list[list]:
    """One row per unordered pair joined by a Duplicate link, oriented by creation date."""
    seen: dict[frozenset, dict[str, str]] = {}  # pair -> {from_key: direction as seen from it}
    for key, t in tickets.items():
        for link in t["links"]:
            if link["type"] == "Duplicate":
                seen.setdefault(frozenset((key, link["key"])), {}).setdefault(key, link["direction"])
    flip = {"outward": "inward", "inward": "outward"}
    rows = []
    for pair, views in seen.items():
        a, b = sorted(pair)
        if a in tickets and b in tickets:
            query, target = sorted(pair, key=lambda k: tickets[k]["created"], reverse=True)
        else:
            query, target = (a, b) if a in tickets else (b, a)
        direction = views.get(query) or flip[views[target]]
        both = int(target in tickets)
        rows.append([query, target, both, tickets[query]["created"],
                     tickets[target]["created"] if both else "", direction])
    rows.sort(key=lambda r: (-r[2], r[3], r[1]))
    return [["query_key", "duplicate_key", "both_in_corpus", "query_created", "duplicate_created",
             "query_link_direction"]] + rows


def build_tickets(lay: Layout) -> None:
    folder = lay.upstream(JIRA, "bug_reports/Zookeeper/details")
    tickets = {}
    for path in sorted(folder.glob("*.json")):
        t = ticket(json.loads(path.read_text("utf-8")))
        tickets[t["key"]] = t
    ordered = sorted(tickets.values(), key=lambda t: (t["created"], t["key"]))
    lay.write("tickets/zookeeper.jsonl",
              "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in ordered))
    pairs = duplicate_pairs(tickets)
    lay.write("tickets/zookeeper_duplicates.csv", csv_text(pairs))
    lay.write("tickets/README.md", TICKETS_README.format(
        repo=JIRA, commit=COMMITS[JIRA], tickets=len(tickets), pairs=len(pairs) - 1,
        usable=sum(row[2] for row in pairs[1:])))


# --- docs ------------------------------------------------------------------------------------------

C_STRING = r'"(?:[^"\\]|\\.)*"'
C_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'", "0": "\0"}


def c_text(literals: str) -> str:
    """Adjacent C string literals joined, simple escapes decoded."""
    parts = re.findall(C_STRING, literals)
    return "".join(re.sub(r"\\(.)", lambda m: C_ESCAPES.get(m.group(1), m.group(1)), p[1:-1])
                   for p in parts)


def strip_c_comments(source: str) -> str:
    """Comments become a space; string literals (which may hold '//') are left alone."""
    return re.sub(C_STRING + r"|//[^\n]*|/\*.*?\*/",
                  lambda m: m.group(0) if m.group(0).startswith('"') else " ", source, flags=re.S)


def ferr_bases(ferr_h: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2), 0)
            for m in re.finditer(r"#define\s+(\w+_FERR_START)\s+(0[xX][0-9a-fA-F]+|\d+)", ferr_h)}


def enum_codes(header: str, bases: dict[str, int]) -> dict[str, int]:
    """Values of the EC_* members of every enum in a daemon's *_errors.h."""
    codes: dict[str, int] = {}
    for body in re.findall(r"\benum\s+\w*\s*\{(.*?)\}", strip_c_comments(header), flags=re.S):
        value = None
        for member in (m.strip() for m in body.split(",")):
            if not member:
                continue
            name, _, init = (x.strip() for x in member.partition("="))
            if init:
                value = bases[init] if init in bases else int(init, 0)
            elif value is None:
                raise SystemExit(f"enum member {name} has no base value")
            else:
                value += 1
            codes[name] = value
    return codes


TABLE_START = re.compile(r"struct\s+log_ref\s+(\w+)\s*\[\s*\]\s*=\s*\{")
BRACE_OR_STRING = re.compile(C_STRING + r"|[{}]")
TABLE_ENTRY = re.compile(r"\{((?:" + C_STRING + r"|[^{}\"])*)\}")
ENTRY_FIELD = re.compile(r"\.(\w+)\s*=\s*((?:" + C_STRING + r"|[^,\"])*)")


def log_refs(source: str):
    """(table, {field: raw C text}) for each entry of each 'struct log_ref NAME[]' table."""
    source = strip_c_comments(source)
    for table in TABLE_START.finditer(source):
        pos, depth = table.end(), 1
        while depth:  # find the table's closing brace; braces inside strings do not count
            token = BRACE_OR_STRING.search(source, pos)
            depth += {"{": 1, "}": -1}.get(token.group(0), 0)
            pos = token.end()
        for entry in TABLE_ENTRY.finditer(source, table.end(), pos - 1):
            fields = ENTRY_FIELD.findall(entry.group(1))
            yield table.group(1), {name: value.strip() for name, value in fields}


def build_docs(lay: Layout) -> None:
    for section in ("user", "manpages"):
        for page in sorted(lay.upstream(FRR, f"doc/{section}").glob("*.rst")):
            lay.copy(FRR, f"doc/{section}/{page.name}", f"docs/frr/{section}/{page.name}")
    lay.copy(FRR, "doc/licenses/GPL-2.0", "docs/frr/LICENSE-GPL-2.0.txt")
    copyright_text = lay.upstream(FRR, "debian/copyright").read_text("utf-8")
    stanza = next(s for s in re.split(r"\n\s*\n", copyright_text)
                  if s.startswith("Files: doc/user/*.rst"))
    lay.write("docs/frr/LICENSE-FRR-docs.txt",
              FRR_DOCS_NOTICE_HEAD.format(commit=COMMITS[FRR]) + stanza.strip("\n") + "\n")

    bases = ferr_bases(lay.upstream(FRR, "lib/ferr.h").read_text("utf-8"))
    entries = []
    for stem in FRR_DAEMONS:
        codes = enum_codes(lay.upstream(FRR, f"{stem}_errors.h").read_text("utf-8"), bases)
        source_file = f"{stem}_errors.c"
        for table, fields in log_refs(lay.upstream(FRR, source_file).read_text("utf-8")):
            name = fields["code"]
            if name == "END_FERR":
                continue
            entries.append({"code": codes[name], "name": name,
                            **{k: c_text(fields.get(k, "")) for k in ("title", "description", "suggestion")},
                            "source_file": source_file, "log_ref_table": table})
    lay.write("docs/frr_errors.jsonl", "".join(json.dumps(e) + "\n" for e in entries))

    for n in RFC_NUMBERS:
        lay.copy(RFCS, f"rfcs/rfc{n}.txt", f"docs/rfcs/rfc{n}.txt")


def main(argv: list[str]) -> int:
    if argv[:1] == ["sources"]:
        for repo, commit in COMMITS.items():
            print(repo, commit, *PATHS[repo])
        return 0
    if len(argv) == 3 and argv[0] == "build":
        lay = Layout(Path(argv[1]), Path(argv[2]))
        for step in (build_loghub, build_iosxr, build_tickets, build_docs):
            step(lay)
        return 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
