"""Great Expectations suites per ingested table, declared in `warehouse/expectations/<table>.yml`.

Each expectation names a GX expectation type, its arguments, and the reason shown to the user
when a record fails it. Argument values written ``$name`` are taken from the settings
(e.g. ``$max_line_bytes``). Validation runs on the pandas engine: GX through SQLAlchemy on
DuckDB silently fails every expectation (docs/dependencies.md#great-expectations-on-duckdb).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.resources import read_yaml, warehouse_dir


@dataclass(frozen=True)
class ExpectationSpec:
    """One expectation of a suite, as declared in YAML."""

    type: str
    kwargs: dict[str, Any]
    reason: str

    @property
    def label(self) -> str:
        """Short name stored in quarantine.expectation, e.g. ``expect_column_values_to_not_be_null(ticket_id)``."""
        cols = self.kwargs.get("column") or ",".join(self.kwargs.get("column_list", []))
        return f"{self.type}({cols})" if cols else self.type


@dataclass(frozen=True)
class SuiteSpec:
    """The expectations for one table."""

    table: str
    expectations: list[ExpectationSpec] = field(default_factory=list)


def load_suite(table: str, settings: Settings, folder: Path | None = None) -> SuiteSpec:
    """Read the suite for ``table``, resolving ``$setting`` values."""
    path = (folder or warehouse_dir() / "expectations") / f"{table}.yml"
    if not path.is_file():
        raise FaultlineError(f"no expectation suite for table {table} at {path}",
                             fix="add warehouse/expectations/<table>.yml")
    data = read_yaml(path) or {}
    specs = []
    for item in data.get("expectations", []):
        kwargs = {k: _resolve(v, settings) for k, v in (item.get("kwargs") or {}).items()}
        specs.append(ExpectationSpec(type=item["type"], kwargs=kwargs, reason=str(item.get("reason", ""))))
    return SuiteSpec(table=table, expectations=specs)


def _resolve(value: Any, settings: Settings) -> Any:
    if isinstance(value, str) and value.startswith("$"):
        return getattr(settings, value[1:])
    return value


def _class_name(type_name: str) -> str:
    return "".join(part.capitalize() for part in type_name.split("_"))


@lru_cache(maxsize=1)
def _batch_definition() -> Any:
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    asset = context.data_sources.add_pandas("faultline").add_dataframe_asset("records")
    return asset.add_batch_definition_whole_dataframe("whole")


def build_gx_suite(spec: SuiteSpec) -> Any:
    """The GX ExpectationSuite for a spec (unknown expectation types are a clear error)."""
    import great_expectations as gx
    import great_expectations.expectations as gxe

    suite = gx.ExpectationSuite(name=spec.table)
    for index, exp in enumerate(spec.expectations):
        cls = getattr(gxe, _class_name(exp.type), None)
        if cls is None:
            raise FaultlineError(f"unknown expectation type {exp.type} in the {spec.table} suite",
                                 fix="use a Great Expectations core expectation name in snake_case")
        # meta carries the spec's position so results map back even if GX reorders them
        suite.add_expectation(cls(**exp.kwargs, meta={"faultline_index": index}))
    return suite


def validate_frame(frame: Any, spec: SuiteSpec) -> dict[int, list[ExpectationSpec]]:
    """Validate a pandas frame; return failed expectations per row position (0-based).

    The frame must have a default RangeIndex. Rows not in the result passed every expectation.
    """
    failures: dict[int, list[ExpectationSpec]] = {}
    if len(frame) == 0 or not spec.expectations:
        return failures
    batch_definition = _batch_definition()  # creates the GX context suites need
    suite = build_gx_suite(spec)
    batch = batch_definition.get_batch(batch_parameters={"dataframe": frame})
    result = batch.validate(suite, result_format={"result_format": "COMPLETE"})
    for res in result.results:
        exp_spec = spec.expectations[int(res.expectation_config.meta["faultline_index"])]
        if res.success:
            continue
        info = res.exception_info or {}
        if info.get("raised_exception"):
            raise FaultlineError(
                f"expectation {exp_spec.label} on {spec.table} could not run: {info.get('exception_message')}",
                fix=f"fix warehouse/expectations/{spec.table}.yml",
            )
        for idx in res.result.get("unexpected_index_list") or []:
            failures.setdefault(int(idx), []).append(exp_spec)
    return failures
