-- mart_cost: what each analysis of an incident cost: LLM calls and tokens, probe calls, time.
-- Grain: one row per incident and method. Methods: ASTRA analyses as in evaluations (astra for the
-- deterministic analyst, astra:<analyst> otherwise; time = sum of the rounds' elapsed_s) and every
-- submissions row (sade, flat, mcp; time = elapsed_s). LLM calls are the llm_calls rows of the same
-- incident whose stage belongs to the method (astra.* or sade.*) and whose model is the analyst's or
-- policy's model (llm:<model>); when the analysis was stored with a run_id only that run's calls count,
-- so earlier re-runs are not added in. A deterministic analysis has no LLM calls. Verdicts (method verdict) cost
-- only their own time: the analyses they fuse are counted under their own methods.
WITH analyses AS (
    SELECT incident_id,
           CASE WHEN analyst = 'deterministic' THEN 'astra' ELSE 'astra:' || analyst END AS method,
           'astra' AS family,
           analyst AS driver,
           any_value(run_id) AS run_id,
           count(*) AS rounds,
           CAST(0 AS INTEGER) AS probe_calls,
           CAST(NULL AS INTEGER) AS tool_calls,
           sum(elapsed_s) AS analysis_s
    FROM astra_rounds
    GROUP BY incident_id, analyst
    UNION ALL
    SELECT incident_id, method, 'sade' AS family, coalesce(policy, 'deterministic') AS driver, run_id,
           CAST(NULL AS BIGINT) AS rounds, probe_calls, tool_calls, elapsed_s AS analysis_s
    FROM submissions
    UNION ALL
    SELECT incident_id, 'verdict' AS method, 'verdict' AS family, 'rules' AS driver, run_id,
           CAST(NULL AS BIGINT) AS rounds, 0 AS probe_calls, CAST(NULL AS INTEGER) AS tool_calls,
           elapsed_s AS analysis_s
    FROM verdicts
),
calls AS (
    SELECT a.incident_id, a.method,
           count(c.call_id) AS llm_calls,
           count(c.call_id) FILTER (WHERE c.error IS NOT NULL) AS llm_errors,
           CAST(coalesce(sum(c.input_tokens), 0) AS BIGINT) AS prompt_tokens,
           CAST(coalesce(sum(c.output_tokens), 0) AS BIGINT) AS completion_tokens,
           coalesce(sum(c.duration_ms), 0) / 1000.0 AS llm_s,
           sum(c.cost_usd) AS cost_usd
    FROM analyses a
    LEFT JOIN llm_calls c
           ON c.incident_id = a.incident_id
          AND split_part(c.stage, '.', 1) = a.family
          AND a.driver = 'llm:' || c.model
          AND (a.run_id IS NULL OR c.run_id = a.run_id)
    GROUP BY a.incident_id, a.method
)
SELECT
    a.incident_id,
    a.method,
    a.family AS method_family,
    a.driver,
    a.run_id,
    a.rounds,
    c.llm_calls,
    c.llm_errors,
    c.prompt_tokens,
    c.completion_tokens,
    c.prompt_tokens + c.completion_tokens AS total_tokens,
    c.llm_s,
    c.cost_usd,
    a.probe_calls,
    a.tool_calls,
    a.analysis_s
FROM analyses a
JOIN calls c USING (incident_id, method)
ORDER BY a.incident_id, a.method
