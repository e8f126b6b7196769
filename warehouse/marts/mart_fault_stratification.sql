-- mart_fault_stratification: ASTRA accuracy stratified by fault type (the paper's §5.3-5.4).
-- Grain: one row per analyst, grouping and stratum. Two groupings of the faulty incidents with ground
-- truth: `category` (ground_truth.category, the NIKA category; a multi-category incident is its own
-- stratum) and `domain` (the rubric domain of the truth labels from faultline/astra/rubric.yml).
-- Per stratum: n, mean, t-based 95% CI, share >= 3, the accuracy histogram, Cohen's d of the stratum
-- against all other incidents (pooled SD) and, repeated on each row, the Kruskal-Wallis H (tie
-- corrected), df and p across the strata of the grouping. Healthy controls are left out (not a fault type).
WITH accuracy AS (
    SELECT e.incident_id,
           CASE WHEN e.method = 'astra' THEN 'deterministic' ELSE substr(e.method, 7) END AS analyst,
           e.value AS accuracy,
           g.category,
           g.labels
    FROM evaluations e
    JOIN ground_truth g USING (incident_id)
    WHERE e.metric = 'accuracy' AND (e.method = 'astra' OR e.method LIKE 'astra:%') AND g.is_faulty
),
label_domains AS (
    SELECT a.incident_id, a.analyst,
           coalesce(array_to_string(list_sort(list_distinct(list(t.domain))), ','), '(unknown)') AS domain
    FROM (SELECT incident_id, analyst, unnest(labels) AS label FROM accuracy) a
    LEFT JOIN taxonomy_labels t USING (label)
    GROUP BY a.incident_id, a.analyst
),
observations AS (
    SELECT 'category' AS grouping, analyst, coalesce(category, '(unknown)') AS stratum, incident_id, accuracy
    FROM accuracy
    UNION ALL
    SELECT 'domain' AS grouping, a.analyst, coalesce(nullif(d.domain, ''), '(unknown)') AS stratum, a.incident_id,
           a.accuracy
    FROM accuracy a
    LEFT JOIN label_domains d USING (incident_id, analyst)
),
ranked AS (
    SELECT *,
           rank() OVER (PARTITION BY analyst, grouping ORDER BY accuracy)
             + (count(*) OVER (PARTITION BY analyst, grouping, accuracy) - 1) / 2.0 AS avg_rank
    FROM observations
),
strata AS (
    SELECT analyst, grouping, stratum,
           count(*) AS n,
           avg(accuracy) AS mean_accuracy,
           median(accuracy) AS median_accuracy,
           stddev_samp(accuracy) AS sd_accuracy,
           sum(accuracy) AS sum_acc,
           sum(accuracy * accuracy) AS sumsq_acc,
           sum(avg_rank) AS rank_sum,
           avg(CASE WHEN accuracy >= 3 THEN 1.0 ELSE 0.0 END) AS share_ge3,
           avg(CASE WHEN accuracy >= 4 THEN 1.0 ELSE 0.0 END) AS share_ge4,
           avg(CASE WHEN accuracy <= 2 THEN 1.0 ELSE 0.0 END) AS share_le2,
           count(*) FILTER (WHERE accuracy = 0) AS n_acc_0,
           count(*) FILTER (WHERE accuracy = 1) AS n_acc_1,
           count(*) FILTER (WHERE accuracy = 2) AS n_acc_2,
           count(*) FILTER (WHERE accuracy = 3) AS n_acc_3,
           count(*) FILTER (WHERE accuracy = 4) AS n_acc_4,
           count(*) FILTER (WHERE accuracy = 5) AS n_acc_5
    FROM ranked
    GROUP BY analyst, grouping, stratum
),
ties AS (
    SELECT analyst, grouping, sum(t * t * t - t) AS tie_term
    FROM (SELECT analyst, grouping, accuracy, CAST(count(*) AS DOUBLE) AS t
          FROM observations GROUP BY analyst, grouping, accuracy)
    GROUP BY analyst, grouping
),
totals AS (
    SELECT s.analyst, s.grouping,
           CAST(sum(s.n) AS DOUBLE) AS big_n,
           count(*) AS k,
           sum(s.sum_acc) AS sum_all,
           sum(s.sumsq_acc) AS sumsq_all,
           sum(s.rank_sum * s.rank_sum / s.n) AS rank_term
    FROM strata s
    GROUP BY s.analyst, s.grouping
),
kruskal AS (
    SELECT t.analyst, t.grouping, t.k, t.big_n,
           CASE WHEN t.k >= 2 AND 1 - x.tie_term / (t.big_n * t.big_n * t.big_n - t.big_n) > 0
                THEN greatest(0.0, (12.0 / (t.big_n * (t.big_n + 1)) * t.rank_term - 3 * (t.big_n + 1))
                     / (1 - x.tie_term / (t.big_n * t.big_n * t.big_n - t.big_n)))
           END AS kw_h
    FROM totals t
    JOIN ties x USING (analyst, grouping)
),
effect AS (
    SELECT s.*, t.big_n, t.k,
           t.big_n - s.n AS rest_n,
           (t.sum_all - s.sum_acc) / nullif(t.big_n - s.n, 0) AS rest_mean,
           -- sums of squared deviations of the stratum and of the rest, for the pooled SD
           s.sumsq_acc - s.sum_acc * s.sum_acc / s.n AS ss_stratum,
           (t.sumsq_all - s.sumsq_acc)
             - (t.sum_all - s.sum_acc) * (t.sum_all - s.sum_acc) / nullif(t.big_n - s.n, 0) AS ss_rest
    FROM strata s
    JOIN totals t USING (analyst, grouping)
)
SELECT
    e.analyst,
    e.grouping,
    e.stratum,
    e.n,
    e.mean_accuracy,
    e.median_accuracy,
    e.sd_accuracy,
    CASE WHEN e.n >= 2 THEN e.mean_accuracy - t_ppf(0.975, e.n - 1) * e.sd_accuracy / sqrt(e.n) END AS ci95_low,
    CASE WHEN e.n >= 2 THEN e.mean_accuracy + t_ppf(0.975, e.n - 1) * e.sd_accuracy / sqrt(e.n) END AS ci95_high,
    e.share_ge3,
    e.share_ge4,
    e.share_le2,
    e.n_acc_0, e.n_acc_1, e.n_acc_2, e.n_acc_3, e.n_acc_4, e.n_acc_5,
    CAST(e.rest_n AS BIGINT) AS rest_n,
    e.rest_mean,
    CASE WHEN e.rest_n >= 1 AND e.big_n > 2 AND (e.ss_stratum + e.ss_rest) > 1e-12
         THEN (e.mean_accuracy - e.rest_mean) / sqrt((e.ss_stratum + e.ss_rest) / (e.big_n - 2))
    END AS cohens_d,
    CAST(k.k AS BIGINT) AS kw_groups,
    CAST(k.big_n AS BIGINT) AS kw_n,
    k.kw_h,
    CASE WHEN k.kw_h IS NOT NULL THEN k.k - 1 END AS kw_df,
    CASE WHEN k.kw_h IS NOT NULL THEN chi2_sf(k.kw_h, k.k - 1) END AS kw_p
FROM effect e
JOIN kruskal k USING (analyst, grouping)
ORDER BY e.analyst, e.grouping, e.stratum
