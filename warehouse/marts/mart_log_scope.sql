-- mart_log_scope: which log lines each ASTRA round read for an incident, and why (log_scopes in reading order).
-- Grain: one row per incident, round and scope entry; note rows (window, no device matched) first, then devices
-- by how they entered the scope. `widened` marks a round whose window is wider than its incident's first round's.
WITH firsts AS (
    SELECT incident_id, min(round) AS first_round FROM log_scopes GROUP BY incident_id
), first_windows AS (
    SELECT s.incident_id, min(s.window_start) AS window_start, max(s.window_end) AS window_end
    FROM log_scopes s JOIN firsts f ON f.incident_id = s.incident_id AND s.round = f.first_round
    GROUP BY s.incident_id
)
SELECT
    s.incident_id,
    s.round,
    row_number() OVER (PARTITION BY s.incident_id, s.round ORDER BY
        s.device IS NOT NULL, list_position(['window', 'no_match', 'out_of_window', 'incident_id', 'named', 'address',
                                              'interface', 'role', 'service', 'neighbour', 'fleet'], s.kind),
        s.device) AS entry_seq,
    s.device,
    s.kind,
    s.reason,
    s.matched,
    s.window_start,
    s.window_end,
    s.clock_offset_s,
    s.lines_in_scope,
    s.round = f.first_round AS is_first_round,
    coalesce(s.window_start < w.window_start OR s.window_end > w.window_end, false) AS widened
FROM log_scopes s
JOIN firsts f ON f.incident_id = s.incident_id
LEFT JOIN first_windows w ON w.incident_id = s.incident_id
ORDER BY s.incident_id, s.round, entry_seq
