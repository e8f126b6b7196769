-- Issue 41: what each model call asked for, so a user can see why a call was slow, cut or refused.
-- Grain unchanged: one row per attempt of one model call.
--   prompt_tokens      the prompt's size before sending (exact for the local model, else estimated at 4 characters a token)
--   context_tokens     the model's context window the prompt was fitted to (NULL: unknown, not fitted)
--   max_output_tokens  the output-token limit sent with the call
--   timeout_s          the timeout the call was given (scaled with the prompt and the model's measured speed)
--   cut                the prompt variables cut to fit the window, comma-separated ('' when none)
--   attempt            1 for the first ask, 2.. for re-asks and retries
ALTER TABLE llm_calls ADD COLUMN prompt_tokens INTEGER;
ALTER TABLE llm_calls ADD COLUMN context_tokens INTEGER;
ALTER TABLE llm_calls ADD COLUMN max_output_tokens INTEGER;
ALTER TABLE llm_calls ADD COLUMN timeout_s DOUBLE;
ALTER TABLE llm_calls ADD COLUMN cut VARCHAR;
ALTER TABLE llm_calls ADD COLUMN attempt INTEGER;
