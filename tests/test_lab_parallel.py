"""Several labs on one machine: lab prefixes, per-prefix locks, two labs at once, and parallel generation.

Pure tests check the names a prefix governs and the locks; the tests marked `lab` (root) run two
simple_bgp labs side by side, the worker pool on its own, and a small suite with `--jobs 2`.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.lab.namespaces import is_lab_namespace, namespace_name, worker_prefix
from tests.labfixtures import lab_fixture, root_routes

REPO = Path(__file__).resolve().parents[1]


# --- names and locks (pure) ------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["FL-", "fl", "fl--", "1fl-", "fl_x-", "a-b-", "abcdefghijkl-", "-"])
def test_a_bad_lab_prefix_is_refused_with_the_rule(prefix):
    with pytest.raises(ValueError, match="lab prefix .* is invalid: 2-11 characters"):
        Settings(lab_prefix=prefix)


def test_worker_prefixes_come_from_the_run_prefix_and_never_list_each_others_namespaces():
    assert Settings().lab_prefix == "fl-"
    assert [worker_prefix("fl-", j) for j in (1, 2, 10)] == ["fl1-", "fl2-", "fl10-"]
    prefixes = ["fl-", "fl1-", "fl2-", "fl10-", "flq1-"]
    for owner in prefixes:
        names = [namespace_name(device, owner) for device in ("router1", "pc-1", "park-f1", "1x")]
        for other in prefixes:
            assert all(is_lab_namespace(n, other) == (other == owner) for n in names), (owner, other)
    with pytest.raises(ValueError, match="is invalid"):
        worker_prefix("abcdefghij-", 2)  # 12 characters


def test_interface_names_never_carry_the_prefix_and_fit_ifnamsiz_in_every_builtin_lab():
    """Interfaces are made inside the lab's namespaces, so the prefix only lengthens namespace names."""
    from faultline.lab.builder import bridge_port, switch_uplink
    from faultline.lab.scenarios import SIZES, build_topology, scenario_names

    longest = ""
    for scenario in scenario_names():
        for size in SIZES:
            topo = build_topology(scenario, size)
            names = [i.name for n in topo.nodes.values() for i in n.interfaces]
            for lan in topo.lans:
                names += [switch_uplink(lan.gateway.name, k) for k in range(len(lan.switches))]
                names += [bridge_port(lan.gateway.name, k) for k in range(len(lan.hosts))]
            longest = max([longest, *names], key=len)
    assert len(longest) <= 15, longest  # IFNAMSIZ 16 with the NUL
    assert not longest.startswith("fl")


def test_a_run_dir_too_long_for_frr_sockets_is_refused_before_anything_is_built(tmp_path):
    from faultline.lab.lifecycle import check_socket_paths
    from faultline.lab.namespaces import use_prefix
    from faultline.lab.scenarios import build_topology

    topo = build_topology("ospf_enterprise_static", "s")  # routers named up to 20 characters
    use_prefix("fl2-")
    try:
        check_socket_paths(topo, Path("/tmp/fl-lab/fl2"))  # fits: 56 bytes
        with pytest.raises(FaultlineError, match="over the 107 a unix socket path can hold") as err:
            check_socket_paths(topo, Path("/tmp") / ("x" * 70))  # 116 bytes
        assert "shorter lab_dir" in err.value.fix
        assert re.search(r"/frr/fl2-\w{20}/staticd\.vty is 116 bytes", err.value.message), err.value.message
    finally:
        use_prefix("fl-")


def test_a_lock_is_reentrant_in_its_process_and_refused_to_another(tmp_path):
    from faultline.lab import locks

    path = tmp_path / "prefix.lock"
    script = "import fcntl, sys; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)"
    probe = [sys.executable, "-c", script, str(path)]
    with locks.holding(path, wait=False):
        with locks.holding(path, wait=False):  # a worker holding its prefix lock runs `lab up`, which takes it
            pass
        assert subprocess.run(probe, capture_output=True, cwd=REPO, check=False).returncode != 0  # still held
    assert subprocess.run(probe, capture_output=True, cwd=REPO, check=False).returncode == 0  # released


def test_a_lock_held_by_a_parent_flock_is_seen_as_ours(tmp_path):
    """`flock /tmp/faultline-lab.lock faultline corpus generate ...` must not wait for itself."""
    from faultline.lab.locks import held_by_ancestor

    path = tmp_path / "machine.lock"
    path.touch()
    check = f"from faultline.lab.locks import held_by_ancestor; from pathlib import Path; " \
            f"print(held_by_ancestor(Path({str(path)!r})))"
    under_flock = subprocess.run(["flock", str(path), sys.executable, "-c", check], capture_output=True, text=True,
                                 cwd=REPO, timeout=60, check=False)
    alone = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=REPO, timeout=60,
                           check=False)
    assert (under_flock.stdout.strip(), alone.stdout.strip()) == ("True", "False"), under_flock.stderr
    assert not held_by_ancestor(path)


# --- the worker pool without labs (root: it sweeps each worker's prefix) --------------------------


def echo_work(item_id: str, action: str, *, settings: Settings) -> tuple[str, str, int]:
    """A stand-in for generate_incident run by the pool: (id, worker prefix, worker pid); may die, pause or dawdle."""
    if action == "die":
        os._exit(3)
    if action == "sleep":
        time.sleep(120)
    if action == "pause":
        time.sleep(2)
    return item_id, settings.lab_prefix, os.getpid()


def _pool_settings(tag: str) -> Settings:
    return Settings(lab_dir=Path(f"/tmp/faultline-lab-{tag}-{os.getpid()}"), lab_prefix="flq-", progress=False)


@pytest.mark.lab
def test_the_pool_spreads_items_over_prefixed_workers_and_survives_a_dead_worker():
    from faultline.corpus.parallel import run_in_labs

    # "d" holds the surviving worker for 2 s, so "e" is left for the dead worker's replacement (without the pause
    # the survivor could take both before the death is noticed)
    items = [("a", "ok"), ("b", "ok"), ("c", "die"), ("d", "pause"), ("e", "ok")]
    runs = run_in_labs(items, _pool_settings("pool"), jobs=2, work=echo_work,
                       lost=lambda item, reason: (item[0], "lost", reason), labs=[("simple_bgp", "s")])
    done = dict(runs)
    assert sorted(done) == [0, 1, 2, 3, 4]
    assert done[2][:2] == ("c", "lost") and "died with exit code 3" in done[2][2]
    ok = [done[i] for i in (0, 1, 3, 4)]
    assert [r[0] for r in ok] == ["a", "b", "d", "e"]
    assert {r[1] for r in ok} == {"flq1-", "flq2-"}  # both workers, each with its own prefix
    assert len({r[2] for r in ok}) >= 3  # the dead worker was replaced by a new process
    assert multiprocessing.active_children() == []


@pytest.mark.lab
def test_stopping_the_run_early_stops_every_worker():
    from faultline.corpus.parallel import run_in_labs

    items = [("fast", "ok"), ("slow1", "sleep"), ("slow2", "sleep")]
    runs = run_in_labs(items, _pool_settings("stop"), jobs=3, work=echo_work,
                       lost=lambda item, reason: (item[0], "lost", reason), labs=[("simple_bgp", "s")])
    t0 = time.monotonic()
    assert next(runs)[1][0] == "fast"
    runs.close()  # what Ctrl-C in the consumer does: SIGTERM to the workers still sleeping
    assert time.monotonic() - t0 < 30
    assert multiprocessing.active_children() == []


# --- two real labs at once -------------------------------------------------------------------------


def _lab_settings(tag: str, prefix: str) -> Settings:
    return Settings(lab_dir=Path(f"/tmp/faultline-lab-{tag}-{os.getpid()}"), lab_prefix=prefix, progress=False)


def _ping(namespace: str, address: str) -> bool:
    return subprocess.run(["ip", "netns", "exec", namespace, "ping", "-n", "-q", "-c", "1", "-W", "1", address],
                          capture_output=True, timeout=10, check=False).returncode == 0


def _all_namespaces() -> set[str]:
    from faultline.lab.teardown import all_namespaces

    return set(all_namespaces())


@lab_fixture
def two_labs():
    """Two simple_bgp labs (size s) up at the same time, prefixes flpa- and flpb-; both always torn down."""
    from faultline.lab import lifecycle

    first, second = _lab_settings("para", "flpa-"), _lab_settings("parb", "flpb-")
    routes_before = root_routes()
    try:
        a = lifecycle.up("simple_bgp", "s", first, timeout=60)
        b = lifecycle.up("simple_bgp", "s", second, timeout=60)
        yield (first, a), (second, b), routes_before
    finally:
        lifecycle.down(first, all=True)
        lifecycle.down(second, all=True)
        left = {n for n in _all_namespaces() if n.startswith(("flpa-", "flpb-"))}
        assert not left, f"lab down left namespaces behind: {sorted(left)}"


@pytest.mark.lab
def test_two_labs_run_side_by_side_and_one_goes_down_alone(two_labs):
    from faultline.lab import lifecycle
    from faultline.lab.readiness import routing_problems
    from faultline.lab.scenarios import build_topology

    (first, a), (second, b), routes_before = two_labs
    assert (a.status, b.status) == ("healthy", "healthy") and (a.prefix, b.prefix) == ("flpa-", "flpb-")
    assert sorted(a.namespaces) == ["flpa-pc1", "flpa-pc2", "flpa-router1", "flpa-router2"]
    assert sorted(b.namespaces) == ["flpb-pc1", "flpb-pc2", "flpb-router1", "flpb-router2"]
    assert json.loads((Path(b.run_dir) / "state.json").read_text())["prefix"] == "flpb-"
    assert {p.pid for p in a.processes}.isdisjoint(p.pid for p in b.processes)

    # same addresses in both labs, yet each lab's traffic stays inside it: with B's pc2 cut off,
    # B's pc1 loses 10.1.1.10 while A's pc1 still reaches it (A's own pc2)
    pc2 = b.device("pc2").addresses[0].split("/")[0]
    subprocess.run(["ip", "-n", "flpb-pc2", "link", "set", "eth0", "down"], check=True)
    try:
        assert not _ping("flpb-pc1", pc2)
        assert _ping("flpa-pc1", pc2)
    finally:  # link down dropped pc2's default route with it
        gateway = build_topology("simple_bgp", "s").nodes["pc2"].gateway
        subprocess.run(["ip", "-n", "flpb-pc2", "link", "set", "eth0", "up"], check=True)
        subprocess.run(["ip", "-n", "flpb-pc2", "route", "replace", "default", "via", gateway], check=True)

    # `lab down --all` of A removes A's namespaces only; B keeps routing and forwarding
    removed = lifecycle.down(first, all=True)["namespaces"]
    assert sorted(removed) == sorted(a.namespaces)
    assert not _all_namespaces() & set(a.namespaces) and set(b.namespaces) <= _all_namespaces()
    assert lifecycle.status(second) is not None  # and B's prefix is this process's lab prefix again
    deadline = time.monotonic() + 15
    while (problems := routing_problems(build_topology("simple_bgp", "s"), Path(b.run_dir))[1]) \
            and time.monotonic() < deadline:
        time.sleep(0.5)
    assert problems == []
    assert _ping("flpb-pc1", pc2)
    lifecycle.down(second)
    assert not _all_namespaces() & set(b.namespaces)
    assert root_routes() == routes_before


@pytest.mark.lab
def test_up_refuses_a_prefix_another_process_is_building():
    from faultline.lab import lifecycle, locks

    holder = subprocess.Popen(["flock", str(locks.prefix_lock("flpc-")), "sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        while not locks.prefix_lock("flpc-").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # flock(1) creates the file, then locks it
        with pytest.raises(FaultlineError, match="another process is building or tearing down the lab with prefix"):
            lifecycle.up("simple_bgp", "s", _lab_settings("parc", "flpc-"))
        assert not any(n.startswith("flpc-") for n in _all_namespaces())
    finally:
        holder.kill()
        holder.wait()


# --- a suite generated with two labs at once -------------------------------------------------------

SUITE = """suite: par
incidents:
  - {scenario: simple_bgp, size: s, seed: 1, healthy: true}
  - {scenario: simple_bgp, size: s, seed: 2, faults: [{label: link_down, target: pc1, mechanism: standard}]}
  - {scenario: simple_bgp, size: s, seed: 3, faults: [{label: bgp_acl_block}]}
"""


@pytest.mark.lab
def test_a_suite_generated_by_two_workers_comes_back_in_suite_order(tmp_path):
    from faultline.corpus.generate import generate_suite
    from faultline.corpus.spec import load_suite

    (tmp_path / "suite.yml").write_text(SUITE)
    settings = _lab_settings("pargen", "flg-")
    results = generate_suite(load_suite(tmp_path / "suite.yml"), tmp_path / "out", settings, jobs=2)
    assert [r.incident_id for r in results] == ["par-001", "par-002", "par-003"]
    assert [r.status for r in results] == ["valid"] * 3, [r.reason for r in results]
    summary = json.loads((tmp_path / "out" / "suite-par.json").read_text())
    assert [i["incident_id"] for i in summary["incidents"]] == ["par-001", "par-002", "par-003"]
    # each incident ran in one of the two workers' labs, and both labs are gone
    recorded = {json.loads((tmp_path / "out" / r.incident_id / "incident.json").read_text())["status"]
                for r in results}
    assert recorded == {"valid"}
    assert not any(n.startswith(("flg1-", "flg2-")) for n in _all_namespaces())
    assert not Path(settings.lab_dir, "flg1").exists() and not Path(settings.lab_dir, "flg2").exists()
    assert multiprocessing.active_children() == []
