-- mart_verdict_evidence: every statement of every verdict report, with the quote it rests on and where from.
-- Grain: one row per incident and statement (incident_id, seq), in report order; the verdict's own columns
-- (status, labels, rule, confidence) repeated on each row so a reader can filter on them; the report's Markdown is
-- mart_incidents.verdict_report, once per incident.
SELECT
    c.incident_id,
    c.seq,
    c.section,
    c.text,
    c.quote,
    c.source,
    c.ref,
    c.device,
    c.detail,
    c.status,
    c.source IN ('ticket', 'network', 'logs') AS about_this_incident,
    v.status AS verdict_status,
    v.labels AS verdict_labels,
    v.rule AS verdict_rule,
    v.confidence AS verdict_confidence
FROM verdict_claims c
JOIN verdicts v ON v.incident_id = c.incident_id
ORDER BY c.incident_id, c.seq
