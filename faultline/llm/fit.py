"""Prompts that fit the model: its context window, the prompt's size, the cut that makes it fit, the timeout.

A prompt is rendered from its file and variables; when it and the output limit exceed the window, the longest
variable loses lines from its end (ranked inputs put the least relevant last) until the prompt fits, and the
variables cut are recorded on the call. Sizes are exact for the local model and estimated at four characters a
token otherwise (no tokenizer download). docs/llm.md#prompts-that-fit.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from faultline.llm import local
from faultline.llm.prompts import Prompt, as_text

if TYPE_CHECKING:
    from faultline.config import Settings

CHARS_PER_TOKEN = 4
REASK_NOTE_CHARS = 400  # the most of a rejection's reason a re-ask repeats to the model
# tokens the chat template and a re-ask's note may add (error text runs at about 2 characters a token)
_MARGIN = 32 + REASK_NOTE_CHARS // 2
_speeds: dict[str, float] = {}  # tokens handled per second, per model, from this process's timed calls
_speed_lock = threading.Lock()


@dataclass
class CallSizes:
    """What a call asks of the model: prompt size, window, output limit, timeout and what was cut to fit."""

    prompt_tokens: int
    context_tokens: int | None
    max_output_tokens: int
    timeout_s: float
    cut: list[str] = field(default_factory=list)


def count_tokens(model: str, messages: list[dict[str, Any]]) -> int:
    """The prompt's size in tokens: exact for the local model, estimated for any other."""
    if local.is_local(model):
        return local.count_tokens(model, messages)
    return sum(len(str(m.get("content") or "")) for m in messages) // CHARS_PER_TOKEN + 4 * len(messages)


def context_window(settings: Settings, model: str) -> int | None:
    """The model's context window: the setting, else the local model's own, else litellm's table, else None."""
    if settings.llm_context_tokens:
        return settings.llm_context_tokens
    if local.is_local(model):
        return local.context_tokens(model)
    try:
        import litellm

        info = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises for models it has no entry for: the window is unknown
        return None
    window = info.get("max_input_tokens") or info.get("max_tokens")
    return int(window) if window else None


def fit(prompt: Prompt, variables: dict[str, Any], *, model: str, window: int | None, max_output: int,
        keep: frozenset[str] = frozenset(), suffix: str = "") -> tuple[list[dict[str, str]], int, list[str]]:
    """Render ``prompt`` so that it and ``max_output`` fit ``window``; returns messages, tokens, variables cut.

    ``suffix`` is added to the last message. Variables in ``keep`` are never cut. When no cut can make it fit,
    the last rendering is returned and the caller's model refuses it (a context-exceeded error with its own fix).
    """
    values = dict(variables)

    def render(values: dict[str, Any]) -> list[dict[str, str]]:
        messages = prompt.render(values)
        messages[-1] = {**messages[-1], "content": messages[-1]["content"] + suffix}
        return messages

    messages = render(values)
    tokens = count_tokens(model, messages)
    cut: list[str] = []
    if window is None:
        return messages, tokens, cut
    budget = window - max_output - _MARGIN
    for _ in range(12):
        if tokens <= budget:
            break
        texts = {k: as_text(v) for k, v in values.items() if k not in keep}
        name = max(texts, key=lambda k: len(texts[k]), default=None)
        if name is None or len(texts[name]) < 200:
            break
        chars_over = (tokens - budget) * max(1, sum(len(m["content"]) for m in messages) // max(tokens, 1))
        values[name] = _shorten(texts[name], chars_over + 200)
        if name not in cut:
            cut.append(name)
        messages = render(values)
        tokens = count_tokens(model, messages)
    return messages, tokens, cut


def _shorten(text: str, chars: int) -> str:
    """``text`` less about ``chars`` characters from its end, whole lines where it has them, saying so."""
    target = max(0, len(text) - chars)
    lines = text.splitlines()
    if len(lines) > 1:
        kept, size = [], 0
        for line in lines:
            if size + len(line) + 1 > target:
                break
            kept.append(line)
            size += len(line) + 1
        dropped = len(lines) - len(kept)
        return "\n".join(kept + [f"[{dropped} more lines cut to fit the model's context window]"])
    return text[:target] + " [cut to fit the model's context window]"


def timeout_for(settings: Settings, model: str, prompt_tokens: int, max_output: int) -> float:
    """The call's timeout: the base, plus twice what its tokens take at the model's measured speed."""
    with _speed_lock:
        speed = _speeds.get(model, settings.llm_assumed_tokens_per_s)
    return round(settings.llm_timeout_s + 2 * (prompt_tokens + max_output) / speed, 3)


def observe_speed(model: str, tokens: int, seconds: float) -> None:
    """Fold one timed call into the model's speed (a moving average; calls under 0.2 s say nothing)."""
    if seconds < 0.2 or tokens <= 0:
        return
    rate = tokens / seconds
    with _speed_lock:
        old = _speeds.get(model)
        _speeds[model] = rate if old is None else 0.7 * old + 0.3 * rate


def forget_speeds() -> None:
    """Drop the speeds measured so far (a new run, or a test that sets its own timeouts)."""
    with _speed_lock:
        _speeds.clear()
