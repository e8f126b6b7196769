-- mart_failures: the failure taxonomy - what failed where, how often, and the latest message.
-- Grain: one row per source, stage and error type. Sources: run_failures (a failed incident or input
-- at a pipeline stage, error type = exception class), submissions (a diagnosis that ended without an
-- answer: stage diagnose.<method>, error type = status no_submission or error) and llm_calls (a model
-- call that failed: its stage, error type = the text before the first colon of its error).
WITH events AS (
    SELECT 'run_failures' AS source, stage, error_type, incident_id, run_id, message, created_at
    FROM run_failures
    UNION ALL
    SELECT 'submissions' AS source, 'diagnose.' || method AS stage, status AS error_type, incident_id, run_id,
           coalesce(error, summary, status) AS message, created_at
    FROM submissions
    WHERE status <> 'submitted'
    UNION ALL
    SELECT 'llm_calls' AS source, stage, trim(split_part(error, ':', 1)) AS error_type, incident_id, run_id,
           error AS message, created_at
    FROM llm_calls
    WHERE error IS NOT NULL
)
SELECT
    source,
    stage,
    error_type,
    count(*) AS failures,
    count(DISTINCT incident_id) AS incidents,
    count(DISTINCT run_id) AS runs,
    arg_max(message, created_at) AS last_message,
    arg_max(incident_id, created_at) AS last_incident,
    min(created_at) AS first_seen,
    max(created_at) AS last_seen
FROM events
GROUP BY source, stage, error_type
ORDER BY failures DESC, source, stage, error_type
