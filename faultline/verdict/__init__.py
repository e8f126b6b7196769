"""The verdict: one answer per incident, fused from ASTRA's sources and the network diagnosis (docs/verdict.md).

`unit.run_verdict` runs it for one incident: `sources` reads the stored analyses, `rules` weighs them by the table in
`rules.yml`, `evidence` and `fixes` gather what each statement cites, `report` writes it (`engine.build`: one
round), `refine` asks the network about what the logs point at and fuses again, `store` keeps it, `evaluate`
scores it.
"""
