"""Progress bars for long operations (rich), silent when disabled or not on a terminal."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def track(items: Iterable[T], *, description: str, enabled: bool, total: int | None = None) -> Iterator[T]:
    """Yield items, drawing a progress bar on stderr when enabled."""
    if not enabled:
        yield from items
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    items = list(items) if total is None else items
    total = total if total is not None else len(items)  # type: ignore[arg-type]
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)
