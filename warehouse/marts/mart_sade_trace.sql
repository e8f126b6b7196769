-- mart_sade_trace: every step of every network diagnosis, in order, with the answer it ended in.
-- Grain: one row per incident, method and step. The submission's columns repeat on each step row; a
-- submission stored without steps (an MCP session, an error before the first probe) keeps one row with
-- the step columns null, and steps whose submission is missing keep theirs with the submission columns null.
WITH steps AS (
    SELECT incident_id, method, seq, phase, tool, CAST(args AS VARCHAR) AS args, flags, probe_calls,
           elapsed_ms, note
    FROM sade_steps
),
keys AS (
    SELECT DISTINCT incident_id, method FROM steps
    UNION SELECT incident_id, method FROM submissions
)
SELECT
    k.incident_id,
    k.method,
    st.seq,
    st.phase,
    st.tool,
    st.args,
    st.flags,
    st.probe_calls,
    st.elapsed_ms,
    st.note,
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
    s.probe_calls AS total_probe_calls,
    s.tool_calls AS total_tool_calls,
    s.elapsed_s AS total_elapsed_s,
    s.error
FROM keys k
LEFT JOIN steps st USING (incident_id, method)
LEFT JOIN submissions s USING (incident_id, method)
ORDER BY k.incident_id, k.method, st.seq
