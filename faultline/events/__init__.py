"""The vendor event catalogue: what network devices' log messages mean, as data (classes.yml, vendors/*.yml)."""
