"""The nightly run's engine: the corpus it ingests, the backlog and its ledger, running each unit on a copy of the
warehouse (`units`, with what the night lends it: `lent`), storing what units bring back (`persist`), and the
run's bookkeeping (`run.NightlyRun`) and summary; how it works: docs/nightly.md."""
