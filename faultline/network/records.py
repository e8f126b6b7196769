"""Typed, closed records the probes return: one normalised shape per probe.

Every record carries an `error` field: a command that failed still yields a record (the probe ran;
the network being broken is data). Units are in the field names (`_ms`, `_s`, `_pct`). The envelope
every probe returns, `ProbeOutput`, is in `probes.py`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """Base of every probe record: closed, so a typo in a field name is an error."""

    model_config = ConfigDict(extra="forbid")


class NotRecordedResult(Record):
    """The answer of a recorded snapshot to a probe call it cannot answer: nothing was invented."""

    probe: str
    args: dict[str, Any]
    missing: list[str]  # the command the call needed
    status: Literal["not_recorded"] = "not_recorded"


PingStatus = Literal["ok", "loss", "unreachable", "timeout", "error"]


class PingResult(Record):
    """`ping -c N`: ok = all replies, loss = some, unreachable = none (or no route), timeout = killed."""

    src: str
    dst_ip: str
    tx: int = 0
    rx: int = 0
    loss_pct: float = 100.0
    rtt_min_ms: float | None = None
    rtt_avg_ms: float | None = None
    rtt_max_ms: float | None = None
    rtt_mdev_ms: float | None = None
    status: PingStatus
    error: str | None = None


class TracerouteHop(Record):
    ttl: int
    addresses: list[str]  # distinct responders at this TTL; empty when every probe was lost ("* * *")
    rtts_ms: list[float]


class TracerouteResult(Record):
    src: str
    dst_ip: str
    hops: list[TracerouteHop]
    reached: bool  # the last hop answered from dst_ip
    error: str | None = None


class Interface(Record):
    """One link from `ip -j [-s] addr|link`; `addresses` are CIDR strings (empty for `ip link`)."""

    ifname: str
    ifindex: int
    operstate: str
    flags: list[str]
    mtu: int | None = None
    mac: str | None = None
    master: str | None = None
    peer: str | None = None  # `link` of a veth ("eth0@if7" peer name or index)
    addresses: list[str] = []
    rx_packets: int | None = None
    rx_errors: int | None = None
    rx_dropped: int | None = None
    tx_packets: int | None = None
    tx_errors: int | None = None
    tx_dropped: int | None = None
    carrier_changes: int | None = None

    @property
    def up(self) -> bool:
        """Administratively up with carrier (LOWER_UP)."""
        return "UP" in self.flags and "LOWER_UP" in self.flags


class InterfaceList(Record):
    device: str
    interfaces: list[Interface]
    error: str | None = None


class Route(Record):
    dst: str  # "default" or a prefix
    gateway: str | None = None
    dev: str | None = None
    protocol: str | None = None
    scope: str | None = None
    prefsrc: str | None = None
    metric: int | None = None
    type: str | None = None  # unicast, blackhole, unreachable, prohibit, ...
    nexthops: list[str] = []  # ECMP gateways


class RouteTable(Record):
    device: str
    routes: list[Route]
    error: str | None = None


class Neighbor(Record):
    dst: str
    dev: str | None = None
    lladdr: str | None = None
    state: list[str]  # REACHABLE, STALE, PERMANENT, INCOMPLETE, FAILED, ...


class NeighborTable(Record):
    device: str
    neighbors: list[Neighbor]
    error: str | None = None


class NftRule(Record):
    family: str
    table: str
    chain: str
    handle: int | None = None
    matches: list[str]  # e.g. "tcp dport == 179", "meta l4proto == icmp"
    verdict: str | None = None  # accept, drop, reject, queue, jump X, ...
    packets: int | None = None  # from a `counter` statement
    bytes: int | None = None


class FilterRule(Record):
    """One packet-filter rule as the kernel runs it (see `faultline.network.filters`): what it does to the
    packets it matches, what it matches, and whether it applies to all of them or to a share."""

    # nft: in the nft ruleset (decoded by `iptables -S` when iptables-nft wrote it); iptables: only iptables lists it
    # (the legacy backend)
    source: Literal["nft", "iptables"]
    family: str  # ip, ip6, inet, arp, bridge, netdev
    table: str
    chain: str
    hook: str | None = None  # input, output, forward, prerouting, postrouting; None: a chain reached by jumps
    verdict: str | None = None  # accept, drop, reject, queue, jump, goto, return; None: counts, logs or marks only
    verdict_arg: str | None = None  # reject type, jump target, queue number
    protocol: str | None = None  # tcp, udp, icmp, ospf, ...
    dports: list[str] = []  # "80", "1000-2000", "!22"
    sports: list[str] = []
    saddr: list[str] = []
    daddr: list[str] = []
    iif: str | None = None
    oif: str | None = None
    icmp_types: list[str] = []
    length: str | None = None  # "> 1400", "1400-65535"
    ct_state: list[str] = []
    share: float | None = None  # the share of matching packets it selects (random, nth), when known
    partial: bool = False  # applies to a share of the matching packets only (share known or not)
    rate: str | None = None  # a rate match: "10/sec", "100 kbytes/second"; "?" when the source hides it
    rate_over: bool = False  # matches the packets beyond the rate (a policer) rather than those within it
    unknown: list[str] = []  # matches/targets whose options this source does not show (iptables-nft `xt`)
    matches: list[str] = []  # readable match conditions
    text: str = ""  # the rule in one line
    packets: int | None = None
    bytes: int | None = None


class NftChain(Record):
    family: str
    table: str
    name: str
    hook: str | None = None
    type: str | None = None
    priority: int | None = None
    policy: str | None = None


class NftRuleset(Record):
    device: str
    tables: list[str]  # "family name"
    chains: list[NftChain]
    rules: list[NftRule]
    filters: list[FilterRule] = []  # the same rules as the kernel runs them
    error: str | None = None


class IptablesRules(Record):
    device: str
    table: str
    policies: dict[str, str]  # built-in chain -> ACCEPT/DROP
    rules: list[str]  # the `-A ...` lines verbatim
    filters: list[FilterRule] = []  # the same rules as the kernel runs them
    error: str | None = None


class QdiscStats(Record):
    dev: str
    kind: str
    handle: str | None = None
    parent: str | None = None
    root: bool = False
    bytes: int = 0
    packets: int = 0
    drops: int = 0
    overlimits: int = 0
    requeues: int = 0
    backlog: int = 0
    qlen: int = 0
    options: dict[str, Any] = {}


class QdiscTable(Record):
    device: str
    qdiscs: list[QdiscStats]
    error: str | None = None


class BgpPeer(Record):
    peer: str
    remote_as: int | None = None
    state: str  # Established, Idle, Active, Connect, ...
    prefixes_received: int | None = None
    uptime: str | None = None


class OspfNeighbor(Record):
    neighbor_id: str
    address: str | None = None
    interface: str | None = None
    state: str  # "Full/-", "Init/DROther", ...
    dead_time: str | None = None


class VtyshResult(Record):
    """`vtysh -N ns -c 'show ...'`; `data` is the parsed JSON when the command ends in `json`."""

    device: str
    command: str
    data: dict[str, Any] | list[Any] | None = None
    bgp_peers: list[BgpPeer] = []
    ospf_neighbors: list[OspfNeighbor] = []
    daemon_down: bool = False  # "bgpd is not running" and the like
    error: str | None = None


class SocketEntry(Record):
    netid: str
    state: str
    local: str
    peer: str
    process: str | None = None


class SocketTable(Record):
    device: str
    sockets: list[SocketEntry]
    error: str | None = None


class ProcessEntry(Record):
    pid: int
    ppid: int
    user: str
    cpu_pct: float
    mem_pct: float
    comm: str
    args: str


class ProcessTable(Record):
    device: str
    processes: list[ProcessEntry]
    error: str | None = None


class NstatCounters(Record):
    device: str
    counters: dict[str, int]
    error: str | None = None


class FdbEntry(Record):
    mac: str
    dev: str | None = None
    master: str | None = None
    vlan: int | None = None
    state: str | None = None
    flags: list[str] = []


class FdbTable(Record):
    device: str
    entries: list[FdbEntry]
    error: str | None = None


class DnsAnswer(Record):
    name: str
    ttl: int
    rtype: str
    data: str


class DnsResult(Record):
    """`dig`: `status` is the rcode (NOERROR, NXDOMAIN, ...) or timeout / refused / error."""

    src: str
    name: str
    server: str | None
    rtype: str
    status: str
    answers: list[DnsAnswer]
    query_time_ms: int | None = None
    error: str | None = None


class HttpTiming(Record):
    """`curl -w`: times in seconds from the start; status ok = 2xx/3xx."""

    src: str
    url: str
    status: Literal["ok", "http_error", "timeout", "refused", "dns_error", "error"]
    http_code: int | None = None
    time_namelookup_s: float | None = None
    time_connect_s: float | None = None
    time_starttransfer_s: float | None = None
    time_total_s: float | None = None
    remote_ip: str | None = None
    curl_exit: int | None = None
    error: str | None = None


class FileContent(Record):
    device: str
    path: str
    text: str
    truncated: bool = False
    error: str | None = None



class DhcpCheck(Record):
    """`busybox udhcpc -n -q` with a do-nothing script: does a DHCP server hand the device a lease?

    status ok = a lease was acknowledged; no_lease = no server answered (or every answer was a NAK);
    error = the client could not run (no such interface, killed on timeout).
    """

    src: str
    ifname: str
    status: Literal["ok", "no_lease", "error"]
    offered_ip: str | None = None  # the address the client selected from an offer
    acked_ip: str | None = None  # the address of the acknowledged lease
    server: str | None = None  # the server identifier that answered
    lease_s: int | None = None
    error: str | None = None


class CgroupCpuGroup(Record):
    """One cgroup v1 `cpu` group holding some of a device's processes; `path` "/" is the root group."""

    path: str
    pids: list[int]
    cfs_quota_us: int | None = None  # -1 = no cap
    cfs_period_us: int | None = None
    cpu_limit_pct: float | None = None  # quota / period in percent of one CPU; None = no cap
    nr_periods: int | None = None  # cpu.stat: enforcement periods that had runnable tasks
    nr_throttled: int | None = None  # periods in which the group used up its quota and was stopped
    throttled_time_ns: int | None = None  # total time the group's tasks spent throttled


class CgroupCpu(Record):
    """`cgroup_cpu`: the CPU caps and throttling of the groups holding a device's processes."""

    device: str
    hierarchy: str  # where the v1 cpu controller is mounted
    groups: list[CgroupCpuGroup]
    error: str | None = None


class ProcessCpu(Record):
    """One process's CPU use between the two samples of `cpu_usage`."""

    pid: int
    comm: str
    state: str  # R running, S sleeping, D waiting on I/O, Z zombie, ...
    cpu_pct: float  # percent of one CPU over the interval (two busy threads: up to 200)


class CpuUsage(Record):
    """`cpu_usage`: CPU time per process over an interval, from two samples of /proc, and the machine's load."""

    device: str
    interval_s: float
    cpus: int | None = None
    busy_pct: float | None = None  # the whole machine's CPUs, percent busy over the interval
    running: int | None = None  # runnable tasks at the second sample (procs_running)
    processes: list[ProcessCpu]
    error: str | None = None
