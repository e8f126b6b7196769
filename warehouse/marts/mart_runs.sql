-- mart_runs: every Faultline run with its duration, counts and how many failures it recorded.
-- Grain: one row per run. Seconds run to finished_at, or to now() for a run still marked running.
SELECT
    r.run_id,
    r.kind,
    r.status,
    r.started_at,
    r.finished_at,
    date_diff('millisecond', r.started_at, coalesce(r.finished_at, now())) / 1000.0 AS seconds,
    r.finished_at IS NULL AS is_open,
    CAST(r.stats AS VARCHAR) AS stats,
    r.error,
    r.prefect_flow_run_id,
    (SELECT count(*) FROM run_failures f WHERE f.run_id = r.run_id) AS failures,
    (SELECT count(DISTINCT f.incident_id) FROM run_failures f WHERE f.run_id = r.run_id) AS failed_incidents,
    (SELECT count(*) FROM llm_calls c WHERE c.run_id = r.run_id) AS llm_calls
FROM runs r
ORDER BY r.started_at DESC, r.run_id
