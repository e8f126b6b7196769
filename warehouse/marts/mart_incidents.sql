-- mart_incidents: one line per incident for the dashboards - the ticket, the incident, ground truth, the verdict
-- (one answer fused from every source), ASTRA's final answer, the SADE submission and whether the two agree.
-- Grain: one row per incident: every incidents row plus any id an analysis was stored under without one
-- (a ticket-only ASTRA analysis, an MCP session). ASTRA columns come from the analyst whose final round was
-- written last (astra_analysts counts them all); SADE columns from the method 'sade' submission.
WITH ids AS (
    SELECT incident_id FROM incidents
    UNION SELECT incident_id FROM astra_rounds
    UNION SELECT incident_id FROM submissions
    UNION SELECT incident_id FROM verdicts
),
astra_final AS (
    SELECT incident_id, analyst, label, category, devices, root_cause, mean_score, created_at
    FROM astra_rounds
    WHERE is_final
    QUALIFY row_number() OVER (PARTITION BY incident_id ORDER BY created_at DESC, analyst) = 1
),
astra_counts AS (
    SELECT incident_id, count(DISTINCT analyst) AS analysts, max(round) FILTER (WHERE is_final) AS final_round
    FROM astra_rounds
    GROUP BY incident_id
),
astra_rounds_of_final AS (
    SELECT r.incident_id, count(*) AS rounds
    FROM astra_rounds r
    JOIN astra_final f USING (incident_id, analyst)
    GROUP BY r.incident_id
),
sade AS (
    SELECT * FROM submissions WHERE method = 'sade'
)
SELECT
    i.incident_id,
    coalesce(n.ticket_id, t.ticket_id) AS ticket_id,
    coalesce(t.title, n.title, i.incident_id) AS ticket_title,
    t.description AS ticket_description,
    t.status AS ticket_status,
    t.priority AS ticket_priority,
    t.created_at AS ticket_created_at,
    n.title AS incident_title,
    n.scenario,
    n.size,
    coalesce(n.is_historical, false) AS is_historical,
    n.opened_at,
    g.incident_id IS NOT NULL AS has_truth,
    g.is_faulty AS truth_is_faulty,
    g.labels AS truth_labels,
    g.devices AS truth_devices,
    g.category AS truth_category,
    g.resolution_note AS truth_resolution_note,
    a.analyst AS astra_analyst,
    coalesce(c.analysts, 0) AS astra_analysts,
    stated_label(a.label, a.root_cause) AS astra_label,
    a.category AS astra_category,
    a.devices AS astra_devices,
    ar.rounds AS astra_rounds,
    a.mean_score AS astra_judge_mean,
    ea.value AS astra_accuracy,
    s.status AS sade_status,
    s.is_anomaly AS sade_is_anomaly,
    s.labels AS sade_labels,
    s.devices AS sade_devices,
    s.probe_calls AS sade_probe_calls,
    s.tool_calls AS sade_tool_calls,
    CASE WHEN es.value >= 0 THEN es.value END AS sade_rca_f1,
    ag.agreement,
    v.status AS verdict_status,
    v.labels AS verdict_labels,
    v.category AS verdict_category,
    v.devices AS verdict_devices,
    v.interfaces AS verdict_interfaces,
    v.confidence AS verdict_confidence,
    v.rule AS verdict_rule,
    json_extract_string(v.verdict, '$.rule_text') AS verdict_rule_text,
    v.agreeing AS verdict_agreeing,
    v.disagreeing AS verdict_disagreeing,
    coalesce(len(v.disagreeing) > 0, false) AS sources_disagree,
    v.fix_known AS verdict_fix_known,
    v.without_network AS verdict_without_network,
    v.symptom AS verdict_symptom,
    v.root_cause AS verdict_root_cause,
    v.fix AS verdict_fix,
    v.verification AS verdict_verification,
    nullif(v.disagreement, '') AS verdict_disagreement,
    v.report_text AS verdict_report,
    ev.value AS verdict_accuracy,
    CASE WHEN evr.value >= 0 THEN evr.value END AS verdict_rca_f1
FROM ids i
LEFT JOIN incidents n USING (incident_id)
LEFT JOIN tickets t ON t.ticket_id = coalesce(n.ticket_id, i.incident_id)
LEFT JOIN ground_truth g ON g.incident_id = i.incident_id
LEFT JOIN astra_final a ON a.incident_id = i.incident_id
LEFT JOIN astra_counts c ON c.incident_id = i.incident_id
LEFT JOIN astra_rounds_of_final ar ON ar.incident_id = i.incident_id
LEFT JOIN evaluations ea
       ON ea.incident_id = i.incident_id AND ea.metric = 'accuracy'
      AND ea.method = CASE WHEN a.analyst = 'deterministic' THEN 'astra' ELSE 'astra:' || a.analyst END
LEFT JOIN sade s ON s.incident_id = i.incident_id
LEFT JOIN evaluations es ON es.incident_id = i.incident_id AND es.method = 'sade' AND es.metric = 'rca_f1'
LEFT JOIN verdicts v ON v.incident_id = i.incident_id
LEFT JOIN evaluations ev ON ev.incident_id = i.incident_id AND ev.method = 'verdict' AND ev.metric = 'accuracy'
LEFT JOIN evaluations evr ON evr.incident_id = i.incident_id AND evr.method = 'verdict' AND evr.metric = 'rca_f1'
LEFT JOIN mart_agreement ag ON ag.incident_id = i.incident_id AND ag.analyst = a.analyst AND ag.method = 'sade'
ORDER BY i.incident_id
