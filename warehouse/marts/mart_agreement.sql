-- mart_agreement: does ASTRA (from the ticket and logs) agree with a network diagnosis (from probes)?
-- Grain: one row per incident, ASTRA analyst and diagnosis method, for every incident either side answered
-- (analysts and methods are those present anywhere in astra_rounds / submissions).
-- ASTRA's answer is its final round's label (else the first taxonomy label its root cause names, as the
-- rubric reads it) or, without a label, its category. Levels, first match wins: one_side_missing (no
-- final ASTRA round, or no submitted diagnosis), both_no_fault, disagree (only one side names a fault),
-- exact_label (ASTRA's label is among the submitted labels), same_family, same_domain (rubric.yml,
-- an ASTRA category that is a family or domain name counts as that family or domain), disagree.
WITH astra AS (
    SELECT incident_id, analyst, round AS astra_rounds, stated_label(label, root_cause) AS label, category, devices
    FROM astra_rounds
    WHERE is_final
),
sade AS (
    SELECT incident_id, method, status, is_anomaly, coalesce(labels, []) AS labels, coalesce(devices, []) AS devices
    FROM submissions
),
pairs AS (
    SELECT i.incident_id, a.analyst, m.method
    FROM (SELECT incident_id FROM astra UNION SELECT incident_id FROM sade) i
    CROSS JOIN (SELECT DISTINCT analyst FROM astra_rounds) a
    CROSS JOIN (SELECT DISTINCT method FROM submissions) m
),
joined AS (
    SELECT p.incident_id, p.analyst, p.method,
           x.incident_id IS NOT NULL AS astra_answered,
           coalesce(s.status = 'submitted', false) AS sade_answered,
           x.label AS astra_label,
           x.category AS astra_category,
           x.devices AS astra_devices,
           coalesce(tl.family, CASE WHEN x.label IS NULL AND lower(x.category) IN (SELECT family FROM taxonomy_labels)
                                    THEN lower(x.category) END) AS astra_family,
           coalesce(tl.domain,
                    CASE WHEN x.label IS NULL THEN
                         coalesce((SELECT any_value(domain) FROM taxonomy_labels WHERE family = lower(x.category)),
                                  CASE WHEN lower(x.category) IN (SELECT domain FROM taxonomy_labels)
                                       THEN lower(x.category) END)
                    END) AS astra_domain,
           x.label IS NOT NULL
             OR (x.category IS NOT NULL AND lower(x.category) NOT IN (SELECT word FROM taxonomy_no_fault))
             AS astra_names_fault,
           s.status AS sade_status,
           s.is_anomaly AS sade_is_anomaly,
           s.labels AS sade_labels,
           s.devices AS sade_devices,
           coalesce(s.is_anomaly, false) OR len(coalesce(s.labels, [])) > 0 AS sade_names_fault,
           coalesce((SELECT list(DISTINCT family) FROM taxonomy_labels t WHERE list_contains(s.labels, t.label)), [])
             AS sade_families,
           coalesce((SELECT list(DISTINCT domain) FROM taxonomy_labels t WHERE list_contains(s.labels, t.label)), [])
             AS sade_domains
    FROM pairs p
    LEFT JOIN astra x ON x.incident_id = p.incident_id AND x.analyst = p.analyst
    LEFT JOIN sade s ON s.incident_id = p.incident_id AND s.method = p.method
    LEFT JOIN taxonomy_labels tl ON tl.label = x.label
    WHERE x.incident_id IS NOT NULL OR s.incident_id IS NOT NULL
),
leveled AS (
    SELECT *,
           CASE
               WHEN NOT astra_answered OR NOT sade_answered THEN 'one_side_missing'
               WHEN NOT astra_names_fault AND NOT sade_names_fault THEN 'both_no_fault'
               WHEN NOT astra_names_fault OR NOT sade_names_fault THEN 'disagree'
               WHEN astra_label IS NOT NULL AND list_contains(sade_labels, astra_label) THEN 'exact_label'
               WHEN astra_family IS NOT NULL AND list_contains(sade_families, astra_family) THEN 'same_family'
               WHEN astra_domain IS NOT NULL AND list_contains(sade_domains, astra_domain) THEN 'same_domain'
               ELSE 'disagree'
           END AS agreement
    FROM joined
)
SELECT
    l.incident_id,
    l.analyst,
    l.method,
    l.agreement,
    l.agreement IN ('exact_label', 'same_family', 'same_domain', 'both_no_fault') AS agrees,
    l.astra_answered,
    l.astra_label,
    l.astra_category,
    l.astra_family,
    l.astra_domain,
    l.astra_devices,
    l.sade_answered,
    l.sade_status,
    l.sade_is_anomaly,
    l.sade_labels,
    l.sade_families,
    l.sade_devices,
    g.incident_id IS NOT NULL AS has_truth,
    g.is_faulty AS truth_is_faulty,
    g.labels AS truth_labels,
    g.devices AS truth_devices,
    g.category AS truth_category,
    CASE WHEN g.incident_id IS NULL OR NOT l.astra_answered THEN NULL
         WHEN g.is_faulty THEN coalesce(list_contains(g.labels, l.astra_label), false)
         ELSE NOT l.astra_names_fault END AS astra_label_right,
    CASE WHEN g.incident_id IS NULL OR NOT l.sade_answered THEN NULL
         WHEN g.is_faulty THEN len(list_intersect(g.labels, l.sade_labels)) > 0
         ELSE NOT l.sade_names_fault END AS sade_label_right,
    ea.value AS astra_accuracy,
    CASE WHEN es.value >= 0 THEN es.value END AS sade_rca_f1
FROM leveled l
LEFT JOIN ground_truth g USING (incident_id)
LEFT JOIN evaluations ea
       ON ea.incident_id = l.incident_id AND ea.metric = 'accuracy'
      AND ea.method = CASE WHEN l.analyst = 'deterministic' THEN 'astra' ELSE 'astra:' || l.analyst END
LEFT JOIN evaluations es ON es.incident_id = l.incident_id AND es.method = l.method AND es.metric = 'rca_f1'
ORDER BY l.incident_id, l.analyst, l.method
