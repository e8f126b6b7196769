"""Static dashboards built from the warehouse marts (`build_dashboards`); see `dashboards/build.py`."""

from dashboards.build import BuildResult, build_dashboards

__all__ = ["BuildResult", "build_dashboards"]
