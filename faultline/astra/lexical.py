"""Words, sentences and technical identifiers of free text: the lexical ground the deterministic analyst stands on.

Claims, evidence, the report writer and the judge all tokenise here, so a word the evidence check finds in a
source is the same word the judge looks for in a report. What a technical identifier is: docs/astra.md#identifiers.
"""

from __future__ import annotations

import re
from functools import cache

_WORD = re.compile(r"[A-Za-z0-9]+(?:[._:/-][A-Za-z0-9]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z\[(\"'`])")
_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?$")
_MAC = re.compile(r"^[0-9a-f]{2}(?:[:-][0-9a-f]{2}){5}$")
_FRR_ID = re.compile(r"\[([A-Z0-9]{5}-[A-Z0-9]{5})\]|\bEC (\d{6,})")
_NOT_IDENTIFIERS = frozenset({"ipv4", "ipv6", "l2", "l3", "l4", "l7", "tcp4", "tcp6", "udp4", "udp6", "4xx", "5xx",
                              "2xx", "3xx", "http2", "x86_64", "utf-8", "1st", "2nd", "3rd"})
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}:\d{2}\b")
_TIME = re.compile(r"^\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?$|^\d{4}[/-]\d{2}[/-]\d{2}")


def words(text: str) -> list[str]:
    """Lower-cased word tokens; dotted, slashed and dashed runs (``10.0.0.1/24``, ``eth0.100``) stay one token."""
    return [w.lower() for w in _WORD.findall(text)]


@cache
def stopwords() -> frozenset[str]:
    """English function words and generic ticket words (the log pipeline's Level-5 stoplist)."""
    from faultline.logs.vocab import default_vocab

    return default_vocab().stopwords


def content_words(text: str) -> list[str]:
    """Words that carry meaning: no stopwords, no bare numbers or times, at least three characters or a digit."""
    stop = stopwords()
    kept = []
    for word in words(text):
        if word in stop or word.isdigit() or _TIME.match(word):
            continue
        if len(word) < 3 and not any(c.isdigit() for c in word):
            continue
        kept.append(word)
    return kept


def _continues(line: str, following: str) -> bool:
    """Whether a wrapped prose line goes on in the next line (log records never do: they carry a clock time)."""
    line, following = line.strip(), following.strip()
    if not line or not following or line.endswith((".", "!", "?", ":", ";")):
        return False
    if _CLOCK.search(line) or _CLOCK.search(following):
        return False
    return following[0].islower() or following[0] in "(`'\""


def _paragraph_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each logical line: physical lines, with wrapped prose lines joined."""
    spans: list[tuple[int, int]] = []
    offset, previous = 0, ""
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if spans and _continues(previous, body):
            spans[-1] = (spans[-1][0], offset + len(body))
        else:
            spans.append((offset, offset + len(body)))
        offset += len(line)
        previous = body
    return spans


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of `text`: logical lines split further at sentence ends.

    Offsets point into `text` itself, so ``text[start:end]`` is always a verbatim passage; leading
    list markers and surrounding blanks are left out of the span. Wrapped prose lines (no sentence
    end, next line starting in lower case, no clock time in either) are read as one line.
    """
    spans: list[tuple[int, int]] = []
    for begin, finish in _paragraph_lines(text):
        body = text[begin:finish]
        cursor = 0
        for piece in _SENTENCE_END.split(body):
            start = body.index(piece, cursor)
            cursor = start + len(piece)
            stripped = piece.lstrip(" \t-*#>").rstrip()
            if stripped:
                lead = len(piece) - len(piece.lstrip(" \t-*#>"))
                spans.append((begin + start + lead, begin + start + lead + len(stripped)))
    return spans


def sentences(text: str) -> list[str]:
    """The sentences of `text` (see `sentence_spans`), whitespace squeezed."""
    return [" ".join(text[a:b].split()) for a, b in sentence_spans(text)]


def is_identifier(token: str) -> bool:
    """True for a technical identifier token (docs/astra.md#identifiers); `token` is one `words()` token."""
    t = token.lower()
    if t in _NOT_IDENTIFIERS or _TIME.match(t):
        return False
    if _IPV4.match(t) or _MAC.match(t):
        return True
    has_alpha = any(c.isalpha() for c in t)
    has_digit = any(c.isdigit() for c in t)
    if "_" in t and has_alpha:
        return True
    return has_alpha and has_digit and len(t) >= 2


def identifiers(text: str) -> set[str]:
    """The technical identifiers in `text`, lower-cased (FRR ids such as ``[HZN6M-XRM1G]`` included)."""
    found = {w for w in words(text) if is_identifier(w)}
    for match in _FRR_ID.finditer(text):
        found.add((match.group(1) or f"ec {match.group(2)}").lower())
    return found


def fault_terms_pattern() -> re.Pattern[str]:
    """The log filter's fault, state-change and anomaly vocabulary (levels L2-L4) as one regex."""
    return _fault_pattern()


@cache
def _fault_pattern() -> re.Pattern[str]:
    from faultline.logs.vocab import default_vocab, terms_pattern

    levels = default_vocab().levels
    parts = [terms_pattern(levels[name].terms) for name in ("L2", "L3", "L4")]
    bodies = [p.removeprefix("(?i)") for p in parts if p]
    return re.compile("|".join(f"(?:{b})" for b in bodies), re.IGNORECASE)


def normalise(text: str) -> str:
    """Lower-case words joined by single spaces: the key under which two texts count as the same."""
    return " ".join(words(text))
