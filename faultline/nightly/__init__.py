"""The nightly run's engine: the corpus it ingests, which incidents to analyse, one unit of work per incident and
method, the ledger, and the run's bookkeeping (`night.Night`) and summary."""
