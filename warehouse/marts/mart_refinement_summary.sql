-- mart_refinement_summary: what refinement changed, per ASTRA analyst and criterion.
-- Grain: one row per analyst and criterion. Every incident is compared with itself from its own
-- first stored round to its own last (no pairing across incidents, unlike mart_refinement_rounds);
-- only incidents with two or more rounds count in the deltas and shares, single-round ones are counted.
WITH per_round AS (
    SELECT incident_id, analyst, round, criterion, score FROM mart_round_scores
),
ends AS (
    SELECT incident_id, analyst, criterion,
           count(*) AS n_rounds,
           arg_min(score, round) AS first_score,
           arg_max(score, round) AS last_score
    FROM per_round
    GROUP BY incident_id, analyst, criterion
)
SELECT
    analyst,
    criterion,
    count(*) FILTER (WHERE n_rounds >= 2) AS n_incidents,
    count(*) FILTER (WHERE n_rounds = 1) AS n_single_round,
    avg(n_rounds) AS mean_rounds,
    avg(first_score) FILTER (WHERE n_rounds >= 2) AS mean_first,
    avg(last_score) FILTER (WHERE n_rounds >= 2) AS mean_last,
    avg(last_score - first_score) FILTER (WHERE n_rounds >= 2) AS delta_first_last,
    avg(CASE WHEN last_score > first_score THEN 1.0 ELSE 0.0 END) FILTER (WHERE n_rounds >= 2) AS share_improved,
    avg(CASE WHEN last_score < first_score THEN 1.0 ELSE 0.0 END) FILTER (WHERE n_rounds >= 2) AS share_degraded,
    avg(CASE WHEN last_score = first_score THEN 1.0 ELSE 0.0 END) FILTER (WHERE n_rounds >= 2) AS share_unchanged
FROM ends
GROUP BY analyst, criterion
ORDER BY analyst, criterion
