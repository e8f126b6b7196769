"""Errors a user can hit: each names what was wrong and how to fix it."""


class FaultlineError(Exception):
    """An expected failure, printed to the user without a traceback."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        super().__init__(message if fix is None else f"{message}\n  fix: {fix}")
