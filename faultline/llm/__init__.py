"""The LLM gateway used by ASTRA and SADE: litellm, prompt files by name + hash, validated JSON, logged calls.

`complete_json` and `complete_text` ask a model with a prompt file and raise `LLMError` when the attempts run
out (every attempt is a row in ``llm_calls``); retries, backoff, timeout and temperature come from
``settings.llm_*``. The model ``local`` runs in this process (`faultline.llm.local`). Tests use the scripted fake
(`faultline.llm.fake`) and, where marked ``local_model``, the small local model; never a hosted one. docs/llm.md.
"""

from faultline.llm.gateway import (
    InvalidOutput,
    LLMError,
    complete_json,
    complete_text,
    model_failure,
    parse_json,
    record_call,
)
from faultline.llm.prompts import Prompt, load_prompt, prompts_dir

__all__ = ["InvalidOutput", "LLMError", "Prompt", "complete_json", "complete_text", "load_prompt",
           "model_failure", "parse_json", "prompts_dir", "record_call"]
