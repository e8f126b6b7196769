"""What the network-lab tests share: one lab at a time, always torn down, and offline lab states.

A fixture made with `lab_fixture` (or `module_lab` / `lab_holder`, which use it) drives the real lab;
conftest refuses, at collection, a test that uses one without `@pytest.mark.lab`, and skips marked
tests when not root. Pure tests in the same modules use `offline_state` and need neither.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_DRIVES_THE_LAB = "_faultline_drives_the_lab"


def lab_fixture(func: Callable | None = None, *, scope: str = "module"):
    """`pytest.fixture` for a fixture that needs root and the lab; its users must be marked `lab`."""

    def make(f: Callable):
        setattr(f, _DRIVES_THE_LAB, True)
        return pytest.fixture(scope=scope)(f)

    return make(func) if func is not None else make


def drives_the_lab(func: Callable) -> bool:
    """Whether a fixture's function was made by `lab_fixture` (conftest's marker check)."""
    return bool(getattr(func, _DRIVES_THE_LAB, False))


# --- the machine ----------------------------------------------------------------------------------


def lab_namespaces() -> set[str]:
    """Every `fl-*` network namespace on the machine."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    return {line.split()[0] for line in out.splitlines() if line.startswith("fl-")}


def root_routes() -> str:
    """The root namespace's routing tables, to prove the lab never touches them."""
    return subprocess.run(["ip", "route", "show", "table", "all"], capture_output=True, text=True, check=False).stdout


def wait_until_no_lab(timeout: float = 180.0) -> None:
    """Only one lab fits on a machine (shared `fl-` prefix): wait for another one to finish."""
    deadline = time.monotonic() + timeout
    while lab_namespaces() and time.monotonic() < deadline:
        time.sleep(1)
    assert not lab_namespaces(), f"another lab is still up: {sorted(lab_namespaces())}"


def lab_dir(tag: str) -> Path:
    """A lab folder for this test process under /tmp.

    FRR runs as user frr, so every parent of the folder must be searchable by others: not pytest's
    tmp dir (0700), nor the checkout (CI may clone under a 0700 home). /tmp is 1777.
    """
    return Path(f"/tmp/faultline-lab-{tag}-{os.getpid()}")


def settings_for(folder: Path):
    """Settings of a lab kept in `folder`, without progress output."""
    from faultline.config import Settings

    return Settings(lab_dir=folder, progress=False)


# --- labs from topologies alone -------------------------------------------------------------------


def scenario_namespaces(scenario: str, size: str = "s") -> set[str]:
    """The namespaces a lab of `scenario` would create."""
    from faultline.lab.namespaces import namespace_name
    from faultline.lab.scenarios import build_topology

    return {namespace_name(n) for n in build_topology(scenario, size).nodes}


def offline_state(scenario: str, size: str = "s"):
    """A LabState of `scenario` built from its topology, with no lab behind it (for pure tests)."""
    from faultline.lab.namespaces import namespace_name
    from faultline.lab.scenarios import build_topology
    from faultline.lab.state import LabState
    from faultline.network.devices import Device

    topo = build_topology(scenario, size)
    state = LabState(scenario=scenario, size=size, run_dir="/nonexistent", started_at="", status="healthy")
    state.device_list = [Device(n.name, n.role, namespace_name(n.name), n.addresses) for n in topo.nodes.values()]
    return state


# --- real labs ------------------------------------------------------------------------------------


@contextlib.contextmanager
def running_lab(scenario: str, settings, *, size: str = "s", timeout: float = 60.0) -> Iterator[tuple]:
    """(state, probe context) of a lab brought up once no other lab is left.

    On exit it is taken down by its state file (another lab on the machine is left alone) and its
    namespaces must be gone, whatever happened inside.
    """
    from faultline.lab import lifecycle

    wait_until_no_lab()
    try:
        state = lifecycle.up(scenario, size, settings, timeout=timeout)
        yield state, lifecycle.probe_context(state, settings)
    finally:
        lifecycle.down(settings)
        left = lab_namespaces() & scenario_namespaces(scenario, size)
        assert not left, f"lab down left namespaces behind: {sorted(left)}"


def module_lab(scenario: str | None, folder: Path, *, timeout: float, after_down: Callable[[], None] | None = None):
    """A module-scoped lab fixture yielding (state, probe context) of one `scenario` lab (size s).

    `scenario=None` takes the scenario from the fixture's indirect parameter. `after_down` runs the
    module's own checks once the lab is down (e.g. no helper process left).
    """

    @lab_fixture
    def lab(request):
        with running_lab(scenario or request.param, settings_for(folder), timeout=timeout) as up:
            yield up
        if after_down is not None:
            after_down()

    return lab


class Labs:
    """At most one lab up (one fits on a machine): asking for another scenario tears the current one down."""

    def __init__(self, folder: Path, timeout: float = 60.0) -> None:
        self.settings = settings_for(folder)
        self.timeout = timeout
        self.scenario: str | None = None
        self._current: tuple | None = None
        self._up = contextlib.ExitStack()

    def get(self, scenario: str) -> tuple:
        """(state, probe context) of a healthy lab of `scenario` (size s)."""
        if scenario != self.scenario:
            self.close()
            self._current = self._up.enter_context(running_lab(scenario, self.settings, timeout=self.timeout))
            self.scenario = scenario
        assert self._current is not None
        return self._current

    def close(self) -> None:
        """Tear the current lab down, if any, and check its namespaces are gone."""
        self.scenario, self._current = None, None
        self._up.close()


def lab_holder(folder: Path, *, timeout: float = 60.0):
    """A module-scoped fixture yielding a `Labs`; whatever lab is up at the end is torn down."""

    @lab_fixture
    def labs():
        holder = Labs(folder, timeout)
        try:
            yield holder
        finally:
            holder.close()

    return labs


FAILURES_DIR = Path(os.environ.get("FAULTLINE_LAB_FAILURES", "/tmp/faultline-lab-failures"))


def _lab_state(funcargs: dict) -> object | None:
    """The LabState a failed test was using: from a `Labs` holder or a (state, context) lab fixture."""
    from faultline.lab.state import LabState

    for value in funcargs.values():
        if isinstance(value, Labs) and value._current is not None:
            return value._current[0]
        if isinstance(value, tuple) and value and isinstance(value[0], LabState):
            return value[0]
    return None


def lab_at_failure(funcargs: dict, name: str) -> str:
    """What a failed lab test leaves for whoever reads the log: each recorded process alive or not, the last
    lines of the services' own output and the device log of each device whose process is gone; the lab's
    service and syslog folders are copied under FAILURES_DIR/<name> (the lab is torn down with its fixture)."""
    import shutil

    from faultline.lab.teardown import alive, comm

    state = _lab_state(funcargs)
    if state is None:
        return ""
    run_dir = Path(state.run_dir)
    lines = [f"lab {state.scenario} at {run_dir}; processes:"]
    gone = set()
    for proc in state.processes:
        if not alive(proc.pid):
            gone.add(proc.device)
        lines.append(f"  {proc.device} {proc.name}[{proc.pid}]: "
                     + (f"alive ({comm(proc.pid)})" if alive(proc.pid) else "GONE"))
    outs = sorted(run_dir.glob("svc/*/*.out"), key=lambda p: p.stat().st_mtime)[-6:]
    logs = [run_dir / "syslog" / device / "messages" for device in sorted(gone)]
    for path, count in [*((p, 4) for p in outs), *((p, 12) for p in logs if p.is_file())]:
        tail = path.read_text(errors="replace").splitlines()[-count:]
        lines += [f"-- {path.relative_to(run_dir)}"] + [f"   {t}" for t in tail]
    kept = FAILURES_DIR / "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:120]
    for part in ("svc", "syslog"):
        if (run_dir / part).is_dir():
            shutil.rmtree(kept / part, ignore_errors=True)
            shutil.copytree(run_dir / part, kept / part,  # the devices' /dev/log sockets cannot be copied
                            ignore=lambda d, names: [n for n in names if (Path(d) / n).is_socket()])
    lines.append(f"copied to {kept}")
    return "\n".join(lines)
