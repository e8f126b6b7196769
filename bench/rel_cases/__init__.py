"""Cases of `bench/reliability.py`: one module per case (see `common.py` for what a case provides)."""
