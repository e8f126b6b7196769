"""Reading input files safely: gzip, binary detection, UTF-8 with nothing lost.

Invalid UTF-8 bytes are decoded with ``surrogateescape`` so the exact bytes survive; ``shown()``
renders such text with ``\\xNN`` escapes for storage and messages.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from faultline.errors import FaultlineError

_BINARY_PROBE = 8192
# Control bytes that never appear in text files (tab, LF, CR, FF, ESC are allowed).
_CONTROL = set(range(0, 9)) | {11} | set(range(14, 27)) | set(range(28, 32))


@dataclass(frozen=True)
class RawFile:
    """A file's bytes (decompressed when gzipped) and identity."""

    path: Path
    data: bytes
    sha256: str
    size_bytes: int


@dataclass(frozen=True)
class Reject:
    """A record that cannot be accepted, with the check it failed and why."""

    record_no: int
    check: str
    reason: str
    raw: str


def read_file(path: Path) -> RawFile:
    """Read a file whole; ``.gz`` files are decompressed. Unreadable files raise FaultlineError."""
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise FaultlineError(f"cannot read {path}: {exc.strerror}", fix="check the path and its permissions") from exc
    sha = hashlib.sha256(blob).hexdigest()
    data = blob
    if path.suffix == ".gz" or blob[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(blob)
        except (OSError, EOFError) as exc:
            raise FaultlineError(f"{path} looks gzipped but cannot be decompressed: {exc}",
                                 fix="check the file is a complete .gz archive") from exc
    return RawFile(path=path, data=data, sha256=sha, size_bytes=len(blob))


@dataclass(frozen=True)
class FileIdentity:
    """A file's content hash and size, taken without holding the file in memory."""

    path: Path
    sha256: str
    size_bytes: int
    gzipped: bool


def identify(path: Path) -> FileIdentity:
    """Hash a file in blocks (for the unchanged-file check before any parsing)."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            head = handle.read(2)
            digest.update(head)
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
            size = handle.tell()
    except OSError as exc:
        raise FaultlineError(f"cannot read {path}: {exc.strerror}", fix="check the path and its permissions") from exc
    return FileIdentity(path, digest.hexdigest(), size, head == b"\x1f\x8b")


def line_blocks(ident: FileIdentity, size: int) -> Iterator[tuple[bytes, int]]:
    """Blocks of about `size` bytes that end at a line end, each with its first line's number.

    Gzipped files are decompressed as they stream. An empty file yields one empty block.
    """
    opener = gzip.open if ident.gzipped else open
    line_no, carry, sent = 1, b"", False
    try:
        with opener(ident.path, "rb") as handle:
            for block in iter(lambda: handle.read(size), b""):
                block = carry + block
                cut = block.rfind(b"\n") + 1
                if cut == 0:
                    carry = block
                    continue
                carry = block[cut:]
                yield block[:cut], line_no
                sent = True
                line_no += block.count(b"\n", 0, cut)
    except (OSError, EOFError) as exc:
        raise FaultlineError(f"{ident.path} cannot be read to the end: {exc}",
                             fix="check the file (a truncated .gz archive fails here)") from exc
    if carry or not sent:
        yield carry, line_no


def binary_reason(data: bytes) -> str | None:
    """Why the bytes look binary rather than text, or None when they look like text."""
    head = data[:_BINARY_PROBE]
    if not head:
        return None
    if b"\x00" in head:
        return "contains NUL bytes"
    controls = sum(1 for b in head if b in _CONTROL)
    if controls / len(head) > 0.05:
        return f"{controls} of its first {len(head)} bytes are control characters"
    return None


def shown(text: str) -> str:
    """Text safe to store: bytes that were not valid UTF-8 appear as ``\\xNN``."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def has_invalid_utf8(text: str) -> bool:
    """True when ``text`` came from bytes that were not valid UTF-8 (surrogate escapes)."""
    return any("\udc80" <= ch <= "\udcff" for ch in text)


def decode(data: bytes) -> tuple[str, bool]:
    """Decode UTF-8 (BOM dropped); return the text and whether invalid bytes were escaped."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", "surrogateescape"), True


def text_lines(data: bytes) -> pl.DataFrame:
    """Split text into non-blank lines: columns line_no (1-based), raw, decode_error, raw_bytes.

    Blank lines are not records; every other line keeps its true line number. Lines are
    decoded one by one only when the file as a whole is not valid UTF-8.
    """
    text, had_errors = decode(data)
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    if had_errors:
        escaped = [shown(p) for p in parts]
        bad = [has_invalid_utf8(p) for p in parts]
        nbytes = [len(p.encode("utf-8", "surrogateescape")) for p in parts]
        frame = pl.DataFrame({"raw": escaped, "decode_error": bad, "raw_bytes": nbytes})
    else:
        frame = pl.DataFrame({"raw": parts}, schema={"raw": pl.Utf8}).with_columns(
            pl.lit(False).alias("decode_error"), pl.col("raw").str.len_bytes().cast(pl.Int64).alias("raw_bytes")
        )
    frame = frame.with_row_index("line_no", offset=1).with_columns(
        pl.col("line_no").cast(pl.Int64), pl.col("raw").str.strip_suffix("\r")
    )
    return frame.filter(pl.col("raw").str.strip_chars().str.len_bytes() > 0)
