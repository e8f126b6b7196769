"""Keep every process of one network namespace inside one cgroup (what a container's cgroup does).

A stdlib-only script run from the root namespace (`python -I cgroup_join.py --netns NS --cgroup GROUP --tag T
[--spare PID]`); why a namespace needs it and how it works: docs/lab.md#cpu-contention-faults.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import struct
import sys
import time

NETLINK_CONNECTOR = 11
CN_IDX_PROC, CN_VAL_PROC = 1, 1
PROC_CN_MCAST_LISTEN = 1
PROC_EVENT_EXEC = 0x00000002
NLMSG_DONE = 3
_NLMSGHDR = struct.Struct("=IHHII")
_CN_MSG = struct.Struct("=IIIIHH")  # idx, val, seq, ack, len, flags
_EVENT_HEAD = struct.Struct("=IIQ")  # what, cpu, timestamp_ns
SWEEP_S = 1.0


def listen_message() -> bytes:
    """nlmsghdr + cn_msg + proc_input: subscribe to exec events only.

    The 8-byte `proc_input` (op, event type) makes the kernel (6.6+) filter the events per socket;
    without it every fork, thread and exit of the machine arrives, and a busy machine floods us.
    """
    op = struct.pack("=II", PROC_CN_MCAST_LISTEN, PROC_EVENT_EXEC)
    cn = _CN_MSG.pack(CN_IDX_PROC, CN_VAL_PROC, 0, 0, len(op), 0) + op
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(cn), NLMSG_DONE, 0, 0, os.getpid()) + cn


def exec_pids(buf: bytes) -> list[int]:
    """The thread-group ids of PROC_EVENT_EXEC events in one datagram."""
    pids = []
    off = 0
    while off + _NLMSGHDR.size <= len(buf):
        length = _NLMSGHDR.unpack_from(buf, off)[0]
        if length < _NLMSGHDR.size:
            break
        event = off + _NLMSGHDR.size + _CN_MSG.size
        if event + _EVENT_HEAD.size + 8 <= off + length:
            what = _EVENT_HEAD.unpack_from(buf, event)[0]
            if what == PROC_EVENT_EXEC:
                pids.append(struct.unpack_from("=ii", buf, event + _EVENT_HEAD.size)[1])
        off += (length + 3) & ~3
    return pids


def netns_inode(pid: int | str) -> int | None:
    """The inode of a process's network namespace (None when it is gone)."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def namespace_pids(inode: int) -> list[int]:
    """Every process whose network namespace has `inode` (what `ip netns pids` does)."""
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and netns_inode(p) == inode]


def cpu_group(pid: int | str) -> str | None:
    """The process's v1 `cpu` cgroup path ("/" = root), None when it is gone."""
    try:
        with open(f"/proc/{pid}/cgroup") as fh:
            for line in fh:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if "cpu" in controllers.split(","):
                    return path
    except (OSError, ValueError):
        return None
    return None


def uncapped(pid: int | str) -> bool:
    """True for a process in the root cpu group: one this helper may move (another fault's capped
    helper living in the namespace keeps its own group)."""
    return cpu_group(pid) == "/"


def _comm_and_parent(pid: int | str) -> tuple[str, int] | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return None
    head, _, rest = stat.rpartition(")")  # the command name may hold spaces and parentheses
    fields = rest.split()
    return (head.split("(", 1)[1] if "(" in head else "", int(fields[1])) if len(fields) > 1 else None


def management(pid: int | str, spare: set[int]) -> bool:
    """Whether `pid` is the node's management sshd (a PID in `spare`) or anything a login through it started.

    A container's CPU quota holds its services, not the host's management plane: an operator's SSH login,
    and the commands it runs, are the host's.
    """
    if not spare:
        return False
    current, steps = int(pid), 0
    while current > 1 and steps < 64:
        if current in spare:
            return True
        info = _comm_and_parent(current)
        if info is None:
            return False
        current, steps = info[1], steps + 1
    return False


def join(cgroup: str, pid: int) -> bool:
    """Write `pid` into the cgroup; False when the process is gone (or the cgroup is)."""
    try:
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
            fh.write(str(pid))
        return True
    except OSError:
        return False


def hold_and_join(cgroup: str, pid: int) -> bool:
    """Stop a just-exec'd process, move it into the cgroup, let it go on.

    Moving a process between cgroups waits for an RCU grace period (~15 ms here); a short command
    (a probe's curl) would be done before it lands in the cgroup. SIGSTOP holds it at once, SIGCONT
    lets it continue inside the cgroup; a stop/continue pair is invisible to a parent waiting
    without WUNTRACED (the probe runner's waitpid).
    """
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        return False
    try:
        return join(cgroup, pid)
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass


def run(netns: str, cgroup: str, spare: set[int] | None = None) -> None:
    """Hold the namespace's processes in the cgroup until SIGTERM or until either one disappears."""
    inode = os.stat(f"/run/netns/{netns}").st_ino
    spare = spare or set()
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_CONNECTOR)
    sock.bind((0, CN_IDX_PROC))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    sock.send(listen_message())
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    wake_r, wake_w = os.pipe()  # a signal wakes select at once (the handler itself only sets a flag)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    next_sweep = 0.0
    try:
        while not stop:
            if time.monotonic() >= next_sweep:
                if not os.path.exists(f"/run/netns/{netns}") or not os.path.isdir(cgroup):
                    return
                for pid in namespace_pids(inode):
                    if uncapped(pid) and not management(pid, spare):
                        join(cgroup, pid)
                next_sweep = time.monotonic() + SWEEP_S
            try:
                ready, _, _ = select.select([sock, wake_r], [], [], SWEEP_S)
            except InterruptedError:
                continue
            if sock not in ready:
                continue
            try:
                data = sock.recv(65536)
            except OSError:  # ENOBUFS: events were lost; the next sweep catches up
                next_sweep = 0.0
                continue
            for pid in exec_pids(data):
                if netns_inode(pid) == inode and uncapped(pid) and not management(pid, spare):
                    hold_and_join(cgroup, pid)
    finally:
        signal.set_wakeup_fd(-1)
        for fd in (wake_r, wake_w):
            os.close(fd)
        sock.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--netns", required=True, help="network namespace name (/run/netns/NAME)")
    parser.add_argument("--cgroup", required=True, help="cgroup directory (v1), e.g. /sys/fs/cgroup/cpu/NAME")
    parser.add_argument("--tag", default="", help="a marker for the command line (finding the helper by PID)")
    parser.add_argument("--spare", type=int, action="append", default=[],
                        help="PID of the node's management sshd: it and what its logins start stay out of the group")
    args = parser.parse_args(argv)
    if "/" in args.netns or not os.path.isdir(args.cgroup):
        parser.error("--netns is a name under /run/netns and --cgroup an existing directory")
    try:
        run(args.netns, args.cgroup, set(args.spare))
    except OSError as exc:
        print(f"cgroup_join: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
