"""The nightly run's engine: the corpus it ingests, which incidents to analyse, one unit of work per incident and
method, the ledger, and the run's bookkeeping (`run.NightlyRun`) and summary; how it works: docs/nightly.md."""
