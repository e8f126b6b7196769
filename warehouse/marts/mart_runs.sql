-- mart_runs: every Faultline run with its duration, counts, how many failures it recorded, and where it sits
-- among the runs started inside one another (runs.parent_run_id).
-- Grain: one row per run. Seconds run to finished_at, or to now() for a run still marked running.
-- A run whose parent row is missing counts as top-level, so no run falls off the overview.
WITH RECURSIVE
placed AS (
    SELECT r.*, r.parent_run_id IS NULL OR p.run_id IS NULL AS is_top_level
    FROM runs r LEFT JOIN runs p ON p.run_id = r.parent_run_id
),
-- every (ancestor, run) pair, at any depth; the depth bound only stops a cycle no writer makes
under (ancestor_id, run_id, depth) AS (
    SELECT parent_run_id, run_id, 1 FROM placed WHERE NOT is_top_level
    UNION ALL
    SELECT p.parent_run_id, u.run_id, u.depth + 1
    FROM under u JOIN placed p ON p.run_id = u.ancestor_id
    WHERE NOT p.is_top_level AND u.depth < 32
),
tops AS (
    SELECT u.run_id, u.ancestor_id AS top_run_id
    FROM under u JOIN placed a ON a.run_id = u.ancestor_id
    WHERE a.is_top_level
),
below AS (
    SELECT u.ancestor_id AS run_id,
           count(*) AS sub_runs,
           count(*) FILTER (WHERE s.status = 'failed') AS failed_sub_runs,
           count(*) FILTER (WHERE s.status = 'completed_with_failures') AS sub_runs_with_failures,
           count(*) FILTER (WHERE s.finished_at IS NULL) AS open_sub_runs
    FROM under u JOIN runs s ON s.run_id = u.run_id
    GROUP BY u.ancestor_id
)
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
    (SELECT count(*) FROM llm_calls c WHERE c.run_id = r.run_id) AS llm_calls,
    r.parent_run_id,
    r.is_top_level,
    coalesce(t.top_run_id, r.run_id) AS top_run_id,
    coalesce(b.sub_runs, 0) AS sub_runs,
    coalesce(b.failed_sub_runs, 0) AS failed_sub_runs,
    coalesce(b.sub_runs_with_failures, 0) AS sub_runs_with_failures,
    coalesce(b.open_sub_runs, 0) AS open_sub_runs
FROM placed r
LEFT JOIN tops t ON t.run_id = r.run_id
LEFT JOIN below b ON b.run_id = r.run_id
ORDER BY r.started_at DESC, r.run_id
