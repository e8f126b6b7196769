-- mart_incident_reports: ASTRA's final report of each incident, with how many claims back it.
-- Grain: one row per incident and ASTRA analyst (the round marked final). An analysis that stored no claim
-- has claims = 0; its claims, when it has some, are the rows of mart_incident_evidence with the same key.
WITH claim_counts AS (
    SELECT incident_id, analyst, count(*) AS claims,
           count(*) FILTER (WHERE evidence_status = 'VERIFIED') AS verified_claims,
           count(*) FILTER (WHERE tag = 'CAUSAL') AS causal_claims
    FROM mart_incident_evidence
    GROUP BY incident_id, analyst
)
SELECT
    r.incident_id,
    r.analyst,
    r.round AS final_round,
    stated_label(r.label, r.root_cause) AS label,
    r.category,
    r.devices,
    r.symptom,
    r.root_cause,
    r.fix,
    r.verification,
    r.report_text,
    r.mean_score AS judge_mean,
    coalesce(n.claims, 0) AS claims,
    coalesce(n.verified_claims, 0) AS verified_claims,
    coalesce(n.causal_claims, 0) AS causal_claims
FROM astra_rounds r
LEFT JOIN claim_counts n ON n.incident_id = r.incident_id AND n.analyst = r.analyst
WHERE r.is_final
ORDER BY r.incident_id, r.analyst
