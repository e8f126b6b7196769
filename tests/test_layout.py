"""The engine stays importable and usable without Prefect; Prefect lives in flows/ and tasks/."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import faultline
from tests.conftest import REPO


def test_engine_imports_without_prefect():
    modules = [m.name for m in pkgutil.walk_packages(faultline.__path__, "faultline.")]
    script = (
        "import sys\n"
        "sys.modules['prefect'] = None  # any `import prefect` now raises ImportError\n"
        f"for name in {modules!r}:\n"
        "    __import__(name)\n"
        "print(len(sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(modules) > 20


def test_engine_source_never_imports_prefect():
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "faultline").rglob("*.py")
                 if "import prefect" in p.read_text() or "from prefect" in p.read_text()]
    assert offenders == []
