-- mart_sade_metrics: NIKA scores of the network-diagnosis methods (sade, flat, mcp, ...) by group.
-- Grain: one row per method, grouping (overall, label, family, scenario, size) and group.
-- Built from `evaluations` (rows of methods that write a detection metric; ASTRA's are excluded) with
-- SADE's convention: a missing submission scores -1 and counts as 0 in every mean. By label, a
-- multi-fault incident counts in each of its labels' groups and healthy controls form the group
-- "healthy" (as faultline.sade.scoring.summarize does). Probe and tool calls come from `submissions`.
WITH scored AS (
    SELECT incident_id, method,
           any_value(attributes) AS attributes,
           max(value) FILTER (WHERE metric = 'submitted') AS submitted,
           max(greatest(value, 0)) FILTER (WHERE metric = 'detection') AS detection,
           max(greatest(value, 0)) FILTER (WHERE metric = 'loc_precision') AS loc_precision,
           max(greatest(value, 0)) FILTER (WHERE metric = 'loc_recall') AS loc_recall,
           max(greatest(value, 0)) FILTER (WHERE metric = 'loc_f1') AS loc_f1,
           max(greatest(value, 0)) FILTER (WHERE metric = 'rca_precision') AS rca_precision,
           max(greatest(value, 0)) FILTER (WHERE metric = 'rca_recall') AS rca_recall,
           max(greatest(value, 0)) FILTER (WHERE metric = 'rca_f1') AS rca_f1,
           max(greatest(value, 0)) FILTER (WHERE metric = 'v2_f1') AS v2_f1,
           max(greatest(value, 0)) FILTER (WHERE metric = 'v2_loc_f1') AS v2_loc_f1,
           max(greatest(value, 0)) FILTER (WHERE metric = 'v2_type_f1') AS v2_type_f1
    FROM evaluations
    WHERE method <> 'astra' AND method NOT LIKE 'astra:%'
    GROUP BY incident_id, method
    HAVING count(*) FILTER (WHERE metric = 'detection') > 0
),
keyed AS (
    SELECT s.*,
           coalesce(CAST(json_extract_string(s.attributes, '$.labels[*]') AS VARCHAR[]), []) AS labels,
           json_extract_string(s.attributes, '$.family') AS family,
           json_extract_string(s.attributes, '$.scenario') AS scenario,
           json_extract_string(s.attributes, '$.size') AS size,
           b.probe_calls,
           b.tool_calls,
           b.elapsed_s
    FROM scored s
    LEFT JOIN submissions b USING (incident_id, method)
),
grouped AS (
    SELECT 'overall' AS grouping, 'all' AS group_name, * FROM keyed
    UNION ALL BY NAME
    SELECT 'label' AS grouping,
           unnest(CASE WHEN len(labels) = 0 THEN ['healthy'] ELSE list_distinct(labels) END) AS group_name, *
    FROM keyed
    UNION ALL BY NAME
    SELECT 'family' AS grouping,
           coalesce(family, CASE WHEN len(labels) = 0 THEN 'healthy' END, '(unknown)') AS group_name, *
    FROM keyed
    UNION ALL BY NAME
    SELECT 'scenario' AS grouping, coalesce(scenario, '(unknown)') AS group_name, * FROM keyed
    UNION ALL BY NAME
    SELECT 'size' AS grouping, coalesce(size, '(unknown)') AS group_name, * FROM keyed
)
SELECT
    method,
    grouping,
    group_name,
    count(*) AS n,
    count(*) FILTER (WHERE submitted = 0) AS no_submission,
    avg(CASE WHEN submitted = 0 THEN 1.0 ELSE 0.0 END) AS no_submission_rate,
    avg(detection) AS detection,
    avg(loc_precision) AS loc_precision,
    avg(loc_recall) AS loc_recall,
    avg(loc_f1) AS loc_f1,
    avg(rca_precision) AS rca_precision,
    avg(rca_recall) AS rca_recall,
    avg(rca_f1) AS rca_f1,
    avg(v2_f1) AS v2_f1,
    avg(v2_loc_f1) AS v2_loc_f1,
    avg(v2_type_f1) AS v2_type_f1,
    median(probe_calls) AS median_probe_calls,
    avg(probe_calls) AS mean_probe_calls,
    median(tool_calls) AS median_tool_calls,
    avg(elapsed_s) AS mean_elapsed_s
FROM grouped
GROUP BY method, grouping, group_name
ORDER BY method, grouping, group_name
