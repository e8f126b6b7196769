-- mart_sade_trace: every step of every network diagnosis, in order.
-- Grain: one row per incident, method and step (sade_steps). The submission each diagnosis ended in is
-- mart_sade_submissions (one row per incident and method), so its columns are stored once, not on every step.
SELECT
    incident_id,
    method,
    seq,
    phase,
    tool,
    CAST(args AS VARCHAR) AS args,
    flags,
    probe_calls,
    elapsed_ms,
    note
FROM sade_steps
ORDER BY incident_id, method, seq
