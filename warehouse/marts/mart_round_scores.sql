-- mart_round_scores: every ASTRA round's scores, one criterion per row - what the refinement marts pair up.
-- Grain: one row per incident, analyst, round and criterion: the five judge criteria (1-5), their mean
-- `judge_mean`, and the rubric `accuracy` (0-5) of that round's report against the ground truth (only
-- for incidents with ground truth).
SELECT incident_id, analyst, round, criterion, CAST(score AS DOUBLE) AS score
FROM judge_scores
UNION ALL
SELECT incident_id, analyst, round, 'judge_mean' AS criterion, avg(score) AS score
FROM judge_scores
GROUP BY incident_id, analyst, round
UNION ALL
SELECT r.incident_id, r.analyst, r.round, 'accuracy' AS criterion,
       CAST(rubric_accuracy(r.label, r.category, r.devices, r.root_cause, g.is_faulty, g.labels, g.devices)
            AS DOUBLE) AS score
FROM astra_rounds r
JOIN ground_truth g ON g.incident_id = r.incident_id
