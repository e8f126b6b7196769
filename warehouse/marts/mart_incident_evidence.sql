-- mart_incident_evidence: every claim behind ASTRA's final report of each incident, with its evidence.
-- Grain: one row per incident, analyst and claim (claims of rounds up to the final one). The report itself is
-- in mart_incident_reports (one row per incident and analyst), so its text is stored once, not on every claim.
-- Evidence is the claim's own agent output (evidence.source = claims.agent); should a claim ever carry
-- several sources, the best-supported one is kept (VERIFIED first, then confidence, then overlap).
WITH final AS (
    SELECT incident_id, analyst, round AS final_round
    FROM astra_rounds
    WHERE is_final
),
best_evidence AS (
    SELECT *
    FROM evidence
    QUALIFY row_number() OVER (
        PARTITION BY incident_id, analyst, claim_id
        ORDER BY status = 'VERIFIED' DESC,
                 CASE confidence WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 ELSE 0 END DESC,
                 overlap DESC, source) = 1
)
SELECT
    f.incident_id,
    f.analyst,
    c.claim_id,
    c.seq AS claim_seq,
    c.round AS claim_round,
    c.agent,
    c.tag,
    c.text AS claim_text,
    e.source AS evidence_source,
    e.quote AS evidence_quote,
    e.method AS evidence_method,
    e.overlap AS evidence_overlap,
    e.confidence,
    e.status AS evidence_status
FROM final f
JOIN claims c ON c.incident_id = f.incident_id AND c.analyst = f.analyst AND c.round <= f.final_round
LEFT JOIN best_evidence e ON e.incident_id = c.incident_id AND e.analyst = c.analyst AND e.claim_id = c.claim_id
ORDER BY f.incident_id, f.analyst, c.seq
