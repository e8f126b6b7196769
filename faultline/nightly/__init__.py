"""The nightly run's engine: which incidents to analyse, one unit of work per incident and method, the ledger."""
