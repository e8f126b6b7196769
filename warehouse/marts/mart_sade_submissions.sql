-- mart_sade_submissions: the answer every network diagnosis ended in, with how many steps led to it.
-- Grain: one row per incident and method (submissions). Its steps are the rows of mart_sade_trace with the
-- same incident_id and method; a submission stored without steps (an MCP session, an error before the first
-- probe) has steps = 0.
WITH step_counts AS (
    SELECT incident_id, method, count(*) AS steps
    FROM sade_steps
    GROUP BY incident_id, method
)
SELECT
    s.incident_id,
    s.method,
    s.policy,
    s.backend,
    s.status,
    s.is_anomaly,
    s.labels,
    s.devices,
    s.families,
    s.fingerprints,
    s.summary,
    CAST(s.v1 AS VARCHAR) AS v1,
    CAST(s.v2 AS VARCHAR) AS v2,
    s.probe_calls,
    s.tool_calls,
    s.elapsed_s,
    s.error,
    coalesce(n.steps, 0) AS steps
FROM submissions s
LEFT JOIN step_counts n ON n.incident_id = s.incident_id AND n.method = s.method
ORDER BY s.incident_id, s.method
