"""A suite's syslog archive: every incident's collector lines on the suite's own timeline, per device and day.

`stage_incident` stages one incident's lines, shifted into its slot; `assemble_archive` merges every staged
incident into `<out>/archive/<device>/<YYYY-MM-DD>.log.gz`, the same lines giving the same bytes. How and why:
docs/lab.md#corpus-timeline.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from faultline.corpus.spec import Suite

ARCHIVE = "archive"
STAGED = ".syslog.jsonl.gz"
MAX_DEVICE_BYTES = 512 * 1024  # per device and incident: the end of the incident is what matters
_LINE = re.compile(r"^(?P<pri><\d{1,3}>)?(?P<ts>\d{4}-\d\d-\d\dT\S+) (?P<rest>.*)$")
# time stamps nginx writes into its own messages (error log, combined access log) move with the line
_NGINX_ERROR = re.compile(r"\b(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d)\b")
_NGINX_ERROR_FORMAT = "%Y/%m/%d %H:%M:%S"
_NGINX_ACCESS = re.compile(r"\[(\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4})\]")
_NGINX_ACCESS_FORMAT = "%d/%b/%Y:%H:%M:%S %z"


@dataclass(frozen=True)
class ArchiveLine:
    """One collector line of one device, at its (shifted) time."""

    device: str
    time: datetime
    line: str


@dataclass
class ArchiveReport:
    """What `assemble_archive` wrote."""

    files: int = 0
    lines: int = 0
    staged: list[str] | None = None  # incidents whose staged lines went in
    carried: list[str] | None = None  # incidents whose lines were kept from the existing archive


def line_time(line: str) -> datetime | None:
    """The RFC 3339 time a collector line starts with (after an optional <PRI>), in UTC; None if none."""
    m = _LINE.match(line)
    if not m:
        return None
    try:
        ts = datetime.fromisoformat(m["ts"])
    except ValueError:
        return None
    return ts.astimezone(UTC) if ts.tzinfo else ts.replace(tzinfo=UTC)


def shift_line(line: str, delta: timedelta) -> str | None:
    """`line` with its time stamp (and nginx's own stamps in the message) moved by `delta`; None if it has none."""
    m = _LINE.match(line)
    when = line_time(line)
    if m is None or when is None:
        return None
    rest = m["rest"]
    if delta:
        rest = _shift_first(_NGINX_ERROR, rest, delta, _NGINX_ERROR_FORMAT)
        rest = _shift_first(_NGINX_ACCESS, rest, delta, _NGINX_ACCESS_FORMAT)
    return f"{m['pri'] or ''}{(when + delta).isoformat(timespec='microseconds')} {rest}"


def _shift_first(pattern: re.Pattern[str], text: str, delta: timedelta, fmt: str) -> str:
    m = pattern.search(text)
    if not m:
        return text
    try:
        moved = (datetime.strptime(m[1], fmt) + delta).strftime(fmt)
    except ValueError:
        return text
    return text[:m.start(1)] + moved + text[m.end(1):]


def stage_incident(lines: Iterable[tuple[str, str]], folder: Path, *, start: datetime, end: datetime,
                   delta: timedelta, max_device_bytes: int = MAX_DEVICE_BYTES) -> dict[str, int]:
    """Write the (device, line) pairs received in [start, end] to `folder/.syslog.jsonl.gz`, moved by `delta`.

    A device that sent more than `max_device_bytes` keeps its last lines within that. Returns counts:
    lines staged, lines outside the span or without a time, lines cut by the size bound.
    """
    per_device: dict[str, list[str]] = defaultdict(list)
    skipped = 0
    for device, line in lines:
        when = line_time(line)
        if when is None or not start <= when <= end:
            skipped += 1
            continue
        shifted = shift_line(line, delta)
        if shifted is not None:
            per_device[device].append(shifted)
    cut = 0
    records = []
    for device in sorted(per_device):
        kept, size = [], 0
        for line in reversed(per_device[device]):
            size += len(line.encode()) + 1
            if size > max_device_bytes:
                break
            kept.append(line)
        cut += len(per_device[device]) - len(kept)
        records += [{"device": device, "line": line} for line in reversed(kept)]
    write_staged(folder / STAGED, records)
    return {"syslog_lines": len(records), "syslog_lines_outside_span": skipped, "syslog_lines_cut": cut}


def write_staged(path: Path, records: list[dict[str, str]]) -> None:
    """Write staged records (`{"device", "line"}`) as gzipped JSON lines."""
    data = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records).encode()
    path.write_bytes(gzip.compress(data, mtime=0))


def read_staged(path: Path) -> Iterator[ArchiveLine]:
    """The lines of one staged incident."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for raw in fh:
            record = json.loads(raw)
            when = line_time(record["line"])
            if when is not None:
                yield ArchiveLine(record["device"], when, record["line"])


def read_archive(archive: Path) -> Iterator[ArchiveLine]:
    """Every line of an archive folder (`<device>/<date>.log.gz`)."""
    for path in sorted(archive.glob("*/*.log.gz")):
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
            for raw in fh:
                line = raw.rstrip("\n")
                when = line_time(line)
                if when is not None:
                    yield ArchiveLine(path.parent.name, when, line)


def assemble_archive(out: Path, suite: Suite) -> ArchiveReport:
    """Rebuild `out/archive/` from every incident of `suite`: staged lines first, else the archive's own.

    Lines of incidents no longer in the suite (outside every slot) are dropped. The staged files are
    removed once the archive is written.
    """
    archive = out / ARCHIVE
    slots = [(incident_id, suite.slot_start(k), suite.slot_start(k + 1))
             for k, incident_id in enumerate(suite.incident_ids())]
    staged = [(i, out / i / STAGED) for i, _, _ in slots if (out / i / STAGED).is_file()]
    staged_ids = {i for i, _ in staged}
    report = ArchiveReport(staged=sorted(staged_ids), carried=[])
    lines: list[ArchiveLine] = []
    carried: set[str] = set()
    if archive.is_dir():
        for item in read_archive(archive):
            owner = next((i for i, start, end in slots if start <= item.time < end), None)
            if owner is not None and owner not in staged_ids:
                lines.append(item)
                carried.add(owner)
    for _, path in staged:
        lines.extend(read_staged(path))
    report.carried = sorted(carried)
    files: dict[tuple[str, str], list[ArchiveLine]] = defaultdict(list)
    for item in lines:
        files[(item.device, item.time.date().isoformat())].append(item)
    tmp = out / f".{ARCHIVE}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for (device, day), items in sorted(files.items()):
        items.sort(key=lambda x: x.time)  # stable: lines of one instant keep the collector's order
        target = tmp / device / f"{day}.log.gz"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.compress("".join(x.line + "\n" for x in items).encode(), mtime=0))
        report.files += 1
        report.lines += len(items)
    shutil.rmtree(archive, ignore_errors=True)
    if tmp.is_dir():
        tmp.rename(archive)
    for _, path in staged:
        path.unlink()
    return report
