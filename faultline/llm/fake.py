"""A scripted fake model that runs through litellm's real code path, for tests and dry runs.

``faultline-fake/<script>`` (a litellm custom provider) answers from the script installed under that name:
reply strings, callables of the messages, or ``TRANSPORT_ERROR``; every request is kept in
``ScriptedModel.requests``. No network. An example: docs/llm.md#models-for-tests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

PROVIDER = "faultline-fake"
TRANSPORT_ERROR = "<transport error>"
Step = str | Callable[[list[dict[str, Any]]], str]

_lock = threading.Lock()
_scripts: dict[str, ScriptedModel] = {}
_handler: list[Any] = []


@dataclass
class ScriptedModel:
    """The replies of one fake model, in order; ``repeat_last`` keeps answering with the last step."""

    name: str
    steps: list[Step]
    repeat_last: bool = False
    requests: list[list[dict[str, Any]]] = field(default_factory=list)

    @property
    def model(self) -> str:
        """The litellm model string that reaches this script."""
        return f"{PROVIDER}/{self.name}"

    def next_reply(self, messages: list[dict[str, Any]]) -> Step:
        with _lock:
            self.requests.append([dict(m) for m in messages])
            if not self.steps:
                raise RuntimeError(f"fake model {self.name!r} has no scripted reply left")
            return self.steps[0] if (self.repeat_last and len(self.steps) == 1) else self.steps.pop(0)


def _ensure_provider() -> None:
    """Register the custom provider with litellm once per process."""
    import litellm
    from litellm import CustomLLM
    from litellm.llms.custom_llm import CustomLLMError

    if _handler:
        return

    class _Fake(CustomLLM):
        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            name = model.split("/", 1)[-1]
            script = _scripts.get(name)
            if script is None:
                raise CustomLLMError(status_code=404, message=f"no fake script named {name!r}")
            step = script.next_reply(messages)
            if step == TRANSPORT_ERROR:
                raise CustomLLMError(status_code=503, message="fake provider: service unavailable")
            text = step(messages) if callable(step) else step
            words_in = sum(len(str(m.get("content", "")).split()) for m in messages)
            return litellm.ModelResponse(
                model=model,
                choices=[{"index": 0, "finish_reason": "stop",
                          "message": {"role": "assistant", "content": text}}],
                usage={"prompt_tokens": words_in, "completion_tokens": len(text.split()),
                       "total_tokens": words_in + len(text.split())},
            )

    _handler.append(_Fake())
    litellm.custom_provider_map = [m for m in litellm.custom_provider_map if m["provider"] != PROVIDER]
    litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": _handler[0]})
    from litellm.utils import custom_llm_setup

    custom_llm_setup()


def install(name: str, steps: list[Step], *, repeat_last: bool = False) -> ScriptedModel:
    """Install (or replace) the script ``name``; returns it (its ``model`` goes to the gateway)."""
    _ensure_provider()
    script = ScriptedModel(name, list(steps), repeat_last)
    with _lock:
        _scripts[name] = script
    return script


def uninstall(name: str) -> None:
    """Remove the script ``name``; later calls to its model fail with a provider error."""
    with _lock:
        _scripts.pop(name, None)


@contextmanager
def scripted_model(name: str, steps: list[Step], *, repeat_last: bool = False) -> Iterator[ScriptedModel]:
    """``install`` for the length of a ``with`` block."""
    script = install(name, steps, repeat_last=repeat_last)
    try:
        yield script
    finally:
        uninstall(name)
