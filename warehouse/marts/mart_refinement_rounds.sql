-- mart_refinement_rounds: ASTRA's refinement loop round by round (the paper's Table 2).
-- Grain: one row per analyst, round and criterion (the five judge criteria, their mean `judge_mean`
-- and the rubric `accuracy` against ground truth, recomputed for every round's report).
-- Pairing rule: per analyst, R = the deepest round any incident reached; the paired set is the
-- incidents whose stored rounds are exactly 1..R, so the same incidents are tracked through every
-- round (pairing = 'all_rounds'). When no incident has rounds 1..R (rounds missing from the store),
-- each incident with at least two rounds is paired with itself first -> last instead
-- (pairing = 'first_last': round 1 is each incident's first stored round, round 2 its last).
WITH per_round AS (
    SELECT incident_id, analyst, round, criterion, score FROM mart_round_scores
),
stored AS (
    SELECT incident_id, analyst, min(round) AS first_round, max(round) AS last_round,
           count(DISTINCT round) AS n_rounds
    FROM astra_rounds
    GROUP BY incident_id, analyst
),
depth AS (
    SELECT analyst, max(last_round) AS deepest_round, count(*) AS analysed_incidents
    FROM stored
    GROUP BY analyst
),
complete AS (
    SELECT s.incident_id, s.analyst
    FROM stored s
    JOIN depth d USING (analyst)
    WHERE s.first_round = 1 AND s.last_round = d.deepest_round AND s.n_rounds = d.deepest_round
),
paired AS (
    SELECT p.analyst, 'all_rounds' AS pairing, p.round, 'R' || p.round AS round_label, p.incident_id,
           p.criterion, p.score
    FROM per_round p
    JOIN complete c USING (incident_id, analyst)
    UNION ALL
    SELECT p.analyst, 'first_last' AS pairing,
           CASE WHEN p.round = s.first_round THEN 1 ELSE 2 END AS round,
           CASE WHEN p.round = s.first_round THEN 'first' ELSE 'last' END AS round_label,
           p.incident_id, p.criterion, p.score
    FROM per_round p
    JOIN stored s USING (incident_id, analyst)
    WHERE p.analyst NOT IN (SELECT analyst FROM complete)
      AND s.n_rounds >= 2
      AND p.round IN (s.first_round, s.last_round)
),
scored AS (
    SELECT *, first_value(score) OVER (PARTITION BY analyst, incident_id, criterion ORDER BY round) AS first_score
    FROM paired
)
SELECT
    s.analyst,
    s.pairing,
    s.round,
    s.round_label,
    s.criterion,
    d.deepest_round,
    d.analysed_incidents,
    count(DISTINCT s.incident_id) AS n_incidents,
    avg(s.score) AS mean_score,
    avg(s.score - s.first_score) AS delta_from_first,
    avg(CASE WHEN s.score > s.first_score THEN 1.0 ELSE 0.0 END) AS share_improved,
    avg(CASE WHEN s.score < s.first_score THEN 1.0 ELSE 0.0 END) AS share_degraded,
    avg(CASE WHEN s.score = s.first_score THEN 1.0 ELSE 0.0 END) AS share_unchanged
FROM scored s
JOIN depth d USING (analyst)
GROUP BY ALL
ORDER BY s.analyst, s.criterion, s.round
