"""The network inventory: SimpleInventory folders loaded, validated, stored as snapshots; the lab's own inventory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from faultline.errors import FaultlineError
from faultline.ingest.inventory import ingest_inventory
from faultline.inventory.load import load_inventory
from faultline.inventory.store import read_inventory, read_links
from faultline.lab import builder
from faultline.lab.inventory import lab_links, write_lab_inventory
from faultline.lab.namespaces import namespace_name
from faultline.lab.scenarios import SIZES, build_topology, scenario_names

PLANTED = "Pl4nted-S3cret-77"

GROUPS = """\
all_devices:
  platform: linux
  data: {site: hq, owner: noc, tier: 3}
core:
  groups: [all_devices]
  platform: frr
  data: {role: core, tier: 1}
edge:
  groups: [all_devices]
  data: {tier: 2}
"""
DEFAULTS = """\
port: 22
username: netops
data: {site: default-site, vendor_support: none}
"""
HOSTS = """\
r1:
  hostname: 10.255.0.1
  groups: [core]
  data:
    role: spine
    addresses: [10.0.0.0/31, 10.1.0.1/24]
    dns_names: [r1.lab.example]
    links:
      - {interface: eth0, peer: r2, peer_interface: eth0}
      - {interface: eth1, peer: web1, peer_interface: eth0}
r2:
  hostname: r2.lab.example
  groups: [edge, core]
  data:
    addresses: [10.0.0.1/31]
    links:
      - {interface: eth0, peer: r1, peer_interface: eth0}
web1:
  data:
    role: web
    addresses: [10.1.0.10/24]
    site: branch
"""


def _folder(root: Path, hosts: str = HOSTS, groups: str | None = GROUPS, defaults: str | None = DEFAULTS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hosts.yaml").write_text(hosts)
    for name, text in (("groups.yaml", groups), ("defaults.yaml", defaults)):
        if text is None:
            (root / name).unlink(missing_ok=True)
        else:
            (root / name).write_text(text)
    return root


def _balanced(conn, report):
    """accepted + quarantined = records in, in the report, the ledger and the quarantine table."""
    for f in report.files:
        assert f.accepted + f.quarantined == f.records_in, f
        row = conn.execute("SELECT records_in, accepted, quarantined FROM ingest_files "
                           "WHERE kind = 'inventory' AND source_file = ?", [f.path]).fetchone()
        assert row == (f.records_in, f.accepted, f.quarantined)
        stored = conn.execute("SELECT count(*) FROM quarantine WHERE source_file = ?", [f.path]).fetchone()[0]
        assert stored == f.quarantined


def _reasons(conn) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for check, reason in conn.execute("SELECT expectation, reason FROM quarantine ORDER BY record_no").fetchall():
        out.setdefault(check, []).append(reason)
    return out


def test_inheritance_host_over_groups_over_defaults_round_trips_through_the_warehouse(conn, settings, tmp_path):
    folder = _folder(tmp_path / "noc")
    report = ingest_inventory(conn, settings, folder)
    assert report.totals()["quarantined"] == 0 and report.totals()["failed_files"] == 0
    _balanced(conn, report)
    hosts = {h.host: h for h in read_inventory(conn, "noc")}
    assert list(hosts) == ["r1", "r2", "web1"]
    r1, r2, web1 = hosts["r1"], hosts["r2"], hosts["web1"]
    # host data beats the group's, the group's beats the defaults', parents of a group come after it
    assert r1.role == "spine" and r1.site == "hq" and r1.platform == "frr" and r1.data["tier"] == 1
    assert r1.data["owner"] == "noc" and r1.data["vendor_support"] == "none"
    assert r1.port == 22 and r1.username == "netops"
    # r2 lists edge first: edge's tier wins, edge's parent (all_devices) comes before core
    assert r2.data["tier"] == 2 and r2.platform == "linux" and r2.role == "core"
    assert r2.groups == ["edge", "core"]
    assert web1.site == "branch" and web1.platform is None and web1.hostname is None
    assert r1.addresses == ["10.255.0.1", "10.0.0.0", "10.1.0.1"]
    assert r2.addresses == ["10.0.0.1"] and r2.hostname == "r2.lab.example"
    assert r1.dns_names == ["r1.lab.example"] and r1.interfaces == ["eth0", "eth1"]
    assert web1.interfaces == ["eth0"]  # named only by r1's link: the derived reverse names it
    assert "links" not in r1.data and "addresses" not in r1.data
    links = {(lk.host, lk.interface, lk.peer, lk.peer_interface, lk.derived) for lk in read_links(conn, "noc")}
    assert links == {("r1", "eth0", "r2", "eth0", False), ("r2", "eth0", "r1", "eth0", False),
                     ("r1", "eth1", "web1", "eth0", False), ("web1", "eth0", "r1", "eth1", True)}
    assert [lk.peer for lk in read_links(conn, "noc", host="web1")] == ["r1"]


BAD_GROUPS = GROUPS + """\
orphan:
  groups: [missing_parent]
child_of_orphan:
  groups: [orphan]
"""
BAD_HOSTS = HOSTS + """\
r1:
  hostname: 192.0.2.99
lonely:
  groups: [nosuchgroup]
  hostname: 10.9.9.9
adopted:
  groups: [child_of_orphan]
  hostname: 10.9.9.8
ghost:
  data: {role: host}
badport:
  hostname: 10.9.9.7
  port: twenty-two
badaddr:
  hostname: 10.9.9.6
  data: {addresses: [10.0.0.300]}
twice:
  hostname: 10.9.9.5
  hostname: 10.9.9.4
listy: [not, a, mapping]
dangling:
  hostname: 10.9.9.3
  data:
    links:
      - {interface: eth0, peer: nowhere}
      - {interface: eth1, peer: ghost}
      - {interface: eth2}
      - {interface: eth3, peer: r1, peer_interface: eth9}
"""


def test_each_bad_record_is_quarantined_with_its_reason_and_the_rest_loads(conn, settings, tmp_path):
    folder = _folder(tmp_path / "noc", hosts=BAD_HOSTS, groups=BAD_GROUPS)
    report = ingest_inventory(conn, settings, folder)
    _balanced(conn, report)
    hosts = {h.host: h for h in read_inventory(conn, "noc")}
    assert set(hosts) == {"r1", "r2", "web1", "dangling"}
    assert hosts["r1"].hostname == "10.255.0.1"  # the first definition is kept
    reasons = _reasons(conn)
    assert any("'r1'" in r and "defined again (first at line 1)" in r for r in reasons["duplicate_host"])
    unknown = " | ".join(reasons["unknown_group"])
    assert "group 'orphan'" in unknown and "'missing_parent' not defined in groups.yaml" in unknown
    assert "group 'child_of_orphan'" in unknown and "'orphan' that were quarantined" in unknown
    assert "host 'lonely'" in unknown and "'nosuchgroup'" in unknown and "host 'adopted'" in unknown
    assert any("'ghost'" in r and "has no address" in r for r in reasons["no_address"])
    malformed = " | ".join(reasons["malformed"])
    assert "'badport'" in malformed and "port" in malformed
    assert "'badaddr'" in malformed and "10.0.0.300" in malformed
    assert "'twice'" in malformed and "written twice" in malformed
    assert "'listy'" in malformed and "must be a mapping" in malformed
    # a bad link is its own record: the host stays, the link goes to quarantine
    peers = " | ".join(reasons["unknown_peer"])
    assert "peer 'nowhere' is not in the inventory" in peers and "peer 'ghost' was quarantined" in peers
    assert any("'dangling'" in r and "peer" in r for r in reasons["malformed_link"])
    assert "conflicting_link" not in reasons  # r1 does not list dangling's eth3 link: its reverse is derived
    dangling_links = read_links(conn, "noc", host="dangling")
    assert [(lk.interface, lk.peer, lk.peer_interface) for lk in dangling_links] == [("eth3", "r1", "eth9")]
    targets = dict(conn.execute("SELECT target_table, count(*) FROM quarantine GROUP BY ALL").fetchall())
    assert targets == {"inventory_hosts": 10, "inventory_links": 3}
    assert report.totals()["quarantined"] == 13


def test_two_sides_that_disagree_on_a_link_keep_the_first_and_quarantine_the_second(tmp_path):
    hosts = """\
a:
  hostname: 10.0.0.1
  data: {links: [{interface: eth0, peer: b, peer_interface: eth1}]}
b:
  hostname: 10.0.0.2
  data: {links: [{interface: eth1, peer: a, peer_interface: eth7}]}
"""
    loaded = load_inventory(_folder(tmp_path / "x", hosts=hosts, groups=None, defaults=None))
    assert [r.check for r in loaded.rejects] == ["conflicting_link"]
    assert "host 'b' link eth1 -> 'a' eth7 contradicts 'a' eth0 -> 'b' eth1" in loaded.rejects[0].reason
    assert {(lk.host, lk.interface, lk.peer, lk.peer_interface, lk.derived) for lk in loaded.links} == {
        ("a", "eth0", "b", "eth1", False), ("b", "eth1", "a", "eth0", True)}


def test_a_group_cycle_fails_the_inventory_naming_the_file_and_keeps_the_previous_snapshot(conn, settings, tmp_path):
    folder = _folder(tmp_path / "noc")
    ingest_inventory(conn, settings, folder)
    cyclic = GROUPS.replace("all_devices:\n  platform: linux", "all_devices:\n  groups: [edge]\n  platform: linux")
    (folder / "groups.yaml").write_text(cyclic)
    with pytest.raises(FaultlineError, match=r"groups\.yaml: groups inherit from each other in a cycle"):
        load_inventory(folder)
    report = ingest_inventory(conn, settings, folder)
    assert report.files[0].status == "failed" and "cycle" in report.files[0].error
    assert "all_devices -> edge -> all_devices" in report.files[0].error
    assert len(read_inventory(conn, "noc")) == 3
    failure = conn.execute("SELECT stage, incident_id FROM run_failures").fetchone()
    assert failure == ("ingest_inventory", str(folder.resolve()))


def test_unreadable_yaml_fails_with_a_clear_message_and_nothing_is_lost(conn, settings, tmp_path):
    folder = _folder(tmp_path / "noc")
    ingest_inventory(conn, settings, folder)
    (folder / "hosts.yaml").write_text(HOSTS + "broken: [unclosed\n")
    report = ingest_inventory(conn, settings, folder)
    assert report.files[0].status == "failed"
    assert "hosts.yaml is not valid YAML" in report.files[0].error
    assert len(read_inventory(conn, "noc")) == 3 and len(read_links(conn, "noc")) == 4
    ledger = conn.execute("SELECT records_in FROM ingest_files WHERE source_file LIKE '%hosts.yaml'").fetchone()
    assert ledger == (6,)  # still the last good ingest's line: 3 hosts + 3 listed links


def test_reingest_replaces_the_snapshot_and_is_idempotent(conn, settings, tmp_path):
    folder = _folder(tmp_path / "noc")
    ingest_inventory(conn, settings, folder)
    again = ingest_inventory(conn, settings, folder)
    assert {f.status for f in again.files} == {"unchanged"}
    forced = ingest_inventory(conn, settings, folder, force=True)
    assert forced.totals()["accepted"] == 6 + 3 + 1
    assert conn.execute("SELECT count(*) FROM inventory_hosts").fetchone()[0] == 3
    assert conn.execute("SELECT count(*) FROM inventory_links").fetchone()[0] == 4
    # web1 leaves the network, and groups.yaml goes away: its groups' data goes with it
    without_web = HOSTS.replace("      - {interface: eth1, peer: web1, peer_interface: eth0}\n", "")
    without_web = without_web[: without_web.index("web1:")]
    _folder(folder, hosts=without_web.replace("groups: [core]", "groups: []").replace(
        "groups: [edge, core]", "groups: []"), groups=None)
    ingest_inventory(conn, settings, folder)
    hosts = {h.host: h for h in read_inventory(conn)}
    assert set(hosts) == {"r1", "r2"} and hosts["r1"].site == "default-site" and hosts["r1"].platform is None
    assert {(lk.host, lk.peer) for lk in read_links(conn)} == {("r1", "r2"), ("r2", "r1")}
    files = {r[0] for r in conn.execute("SELECT source_file FROM ingest_files").fetchall()}
    assert not any(f.endswith("groups.yaml") for f in files)
    # a second inventory is stored beside the first, not over it
    ingest_inventory(conn, settings, _folder(tmp_path / "branch"))
    assert {h.inventory for h in read_inventory(conn)} == {"noc", "branch"}


def test_a_password_never_reaches_the_warehouse(conn, settings, tmp_path):
    hosts = HOSTS.replace("r1:\n  hostname: 10.255.0.1\n", f"r1:\n  hostname: 10.255.0.1\n  password: {PLANTED}\n")
    hosts += f"""\
broken:
  hostname: 10.9.9.1
  password: {PLANTED}
  port: not-a-port
dup:
  password: {PLANTED}
  password: {PLANTED}
withopts:
  hostname: 10.9.9.2
  connection_options:
    netmiko: {{password: {PLANTED}, extras: {{secret: {PLANTED}}}}}
  data: {{snmp: {{community: public, auth_password: {PLANTED}}}}}
"""
    groups = GROUPS + f"core_creds:\n  password: {PLANTED}\n  data: {{enable_secret: {PLANTED}}}\n"
    defaults = DEFAULTS + f"password: {PLANTED}\n"
    report = ingest_inventory(conn, settings, _folder(tmp_path / "noc", hosts, groups, defaults))
    assert report.totals()["quarantined"] == 2  # broken (port) and dup (a key written twice)
    assert any("credential field(s) dropped" in m for m in report.files[0].messages)
    assert PLANTED not in str(report.as_dict())
    tables = [r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()]
    for table in tables:
        for row in conn.execute(f"SELECT * FROM {table}").fetchall():
            assert PLANTED not in str(row), f"the planted password reached {table}"
    withopts = {h.host: h for h in read_inventory(conn)}["withopts"]
    assert withopts.data["snmp"] == {"community": "public"}


def test_cli_ingests_an_inventory_and_reports_quarantine(run_cli, capsys, tmp_path, conn):
    folder = _folder(tmp_path / "noc", hosts=BAD_HOSTS, groups=BAD_GROUPS)
    run_cli("ingest", "inventory", str(folder), "--name", "hq")
    out = capsys.readouterr().out
    assert "inventory 'hq': 4 host(s)" in out and "13 quarantined" in out
    (folder / "groups.yaml").write_text("a:\n  groups: [b]\nb:\n  groups: [a]\n")
    run_cli("ingest", "inventory", str(folder), "--name", "hq", expect_exit=1)
    assert "groups inherit from each other in a cycle: a -> b -> a" in capsys.readouterr().out
    run_cli("ingest", "inventory", str(tmp_path), expect_exit=2)
    assert "has no hosts.yaml" in capsys.readouterr().err


def _built_veths(topo, monkeypatch) -> set[tuple[str, str, str, str]]:
    """The veth pairs the lab builder would create for `topo` (its `ip` commands captured, nothing run)."""
    lines: list[str] = []
    monkeypatch.setattr(builder, "ip_batch", lambda batch, namespace=None: lines.extend(
        batch if namespace is None else []))
    monkeypatch.setattr(builder, "run", lambda *a, **k: None)
    builder.build_network(topo, lambda ns: None)
    prefix = re.escape(namespace_name(""))  # the lab prefix this process uses
    pattern = re.compile(rf"link add (\S+) netns {prefix}(\S+) type veth peer name (\S+) netns {prefix}(\S+)")
    pairs = set()
    for line in lines:
        match = pattern.fullmatch(line)
        if match:
            a_if, a, b_if, b = match.groups()
            pairs.add((a, a_if, b, b_if))
    return pairs


@pytest.mark.parametrize("scenario", scenario_names())
def test_lab_inventory_loads_without_rejections_and_matches_the_topology(scenario, tmp_path, monkeypatch):
    for size in SIZES:
        topo = build_topology(scenario, size)
        folder = tmp_path / f"{scenario}_{size}"
        write_lab_inventory(topo, folder)
        loaded = load_inventory(folder)
        assert loaded.rejects == [] and loaded.messages == []
        assert {h.host for h in loaded.hosts} == set(topo.nodes)
        veths = _built_veths(topo, monkeypatch)
        assert set(lab_links(topo)) == veths
        expected = veths | {(b, b_if, a, a_if) for a, a_if, b, b_if in veths}
        assert {(lk.host, lk.interface, lk.peer, lk.peer_interface) for lk in loaded.links} == expected
        assert not any(lk.derived for lk in loaded.links)
        by_name = {h.host: h for h in loaded.hosts}
        for name, node in topo.nodes.items():
            host = by_name[name]
            assert host.role == node.role and host.site == scenario
            assert host.platform == ("frr" if node.role == "router" else "linux")
            assert host.addresses == [a.split("/")[0] for a in node.addresses]
        for _, records in topo.zones.values():
            for fqdn, node_name in records.items():
                assert fqdn in by_name[node_name].dns_names


def test_lab_inventory_command_writes_a_folder_that_ingests(run_cli, capsys, tmp_path, conn):
    out = tmp_path / "labinv"
    run_cli("lab", "inventory", "--scenario", "dc_clos_service", "--size", "s", "--out", str(out))
    assert "wrote the inventory of dc_clos_service (s): 8 hosts" in capsys.readouterr().out
    run_cli("ingest", "inventory", str(out))
    hosts = read_inventory(conn, "labinv")
    assert len(hosts) == 8 and {h.site for h in hosts} == {"dc_clos_service"}
    assert any(h.dns_names for h in hosts)
