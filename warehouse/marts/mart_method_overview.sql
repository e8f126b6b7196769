-- mart_method_overview: per analysis method, how many incidents it analysed and how well it scored.
-- Grain: one row per method (astra, astra:<analyst>, sade, flat, mcp, ...), as named in mart_cost and
-- evaluations; 'verdict' is the answer fused from both. The headline score is ASTRA's rubric accuracy (0-5), or a
-- diagnosis' or verdict's v1 RCA F1 (0-1, a missing submission counted as 0 as SADE's convention has it); the
-- verdict is scored both ways, so it also fills the rubric columns; detection applies to diagnoses and verdicts.
WITH cost AS (
    SELECT method, any_value(method_family) AS method_family,
           count(DISTINCT incident_id) AS analysed,
           sum(llm_calls) AS llm_calls,
           sum(total_tokens) AS total_tokens,
           sum(probe_calls) AS probe_calls,
           avg(analysis_s) AS mean_analysis_s
    FROM mart_cost
    GROUP BY method
),
scores AS (
    SELECT method,
           count(DISTINCT incident_id) FILTER (WHERE metric IN ('accuracy', 'rca_f1')) AS scored,
           avg(value) FILTER (WHERE metric = 'accuracy') AS mean_accuracy,
           avg(CASE WHEN value >= 3 THEN 1.0 ELSE 0.0 END) FILTER (WHERE metric = 'accuracy') AS share_accuracy_ge3,
           avg(greatest(value, 0)) FILTER (WHERE metric = 'rca_f1') AS mean_rca_f1,
           avg(greatest(value, 0)) FILTER (WHERE metric = 'detection') AS mean_detection
    FROM evaluations
    GROUP BY method
),
unanswered AS (
    SELECT method, count(*) FILTER (WHERE status <> 'submitted') AS not_submitted
    FROM submissions
    GROUP BY method
)
SELECT
    c.method,
    c.method_family,
    c.analysed,
    coalesce(s.scored, 0) AS scored,
    CASE WHEN c.method_family = 'astra' THEN 'accuracy' ELSE 'rca_f1' END AS score_metric,
    CASE WHEN c.method_family = 'astra' THEN s.mean_accuracy ELSE s.mean_rca_f1 END AS mean_score,
    s.share_accuracy_ge3,
    s.mean_accuracy,
    s.mean_rca_f1,
    s.mean_detection,
    coalesce(u.not_submitted, 0) AS not_submitted,
    c.llm_calls,
    c.total_tokens,
    c.probe_calls,
    c.mean_analysis_s
FROM cost c
LEFT JOIN scores s USING (method)
LEFT JOIN unanswered u USING (method)
ORDER BY c.method_family, c.method
