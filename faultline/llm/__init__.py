"""The LLM gateway used by ASTRA and SADE: litellm, prompt files by name + hash, validated JSON, logged calls.

Example (a prompt file ``prompts/astra/claims.md`` with ``{{ agent_output }}`` in it)::

    from pydantic import BaseModel, ConfigDict
    from faultline.llm import complete_json, LLMError

    class Claims(BaseModel):
        model_config = ConfigDict(extra="forbid")
        claims: list[str]

    try:
        answer = complete_json(settings, conn, model="openai/gpt-4o-mini", prompt="astra/claims",
                               variables={"agent_output": text}, schema=Claims,
                               stage="astra.claims", incident_id=incident.incident_id, run_id=run_id)
    except LLMError as exc:          # attempts exhausted: every attempt is already in llm_calls
        ...                          # -> a failure row for this incident; the batch goes on
    answer["claims"]                 # validated: a dict shaped like Claims

In tests, never a real model: a scripted fake runs through the real litellm path::

    from faultline.llm.fake import scripted_model, TRANSPORT_ERROR
    with scripted_model("claims", ["not json", '{"claims": ["a"]}']) as fake:
        complete_json(..., model=fake.model, ...)   # retried once with the JSON error, then valid
        fake.requests                               # the messages the model saw, per attempt

Retries, backoff, timeout and temperature come from ``settings.llm_*``.
"""

from faultline.llm.gateway import (
    InvalidOutput,
    LLMError,
    complete_json,
    complete_text,
    parse_json,
    record_call,
)
from faultline.llm.prompts import Prompt, load_prompt, prompts_dir

__all__ = ["InvalidOutput", "LLMError", "Prompt", "complete_json", "complete_text", "load_prompt",
           "parse_json", "prompts_dir", "record_call"]
