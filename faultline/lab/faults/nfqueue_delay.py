"""A userspace NFQUEUE delay impairer (the stand-in for `tc netem delay` on a kernel without netem).

Standard library only, run as a script (`python nfqueue_delay.py --queue N --delay-ms D [--jitter-ms J]`) in the
namespace whose queue it binds; how it binds, delays and lets go: docs/lab.md#dns-and-dhcp-faults.
"""

from __future__ import annotations

import argparse
import errno
import heapq
import os
import random
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
SOL_NETLINK = 270
NETLINK_NO_ENOBUFS = 5
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLMSG_ERROR = 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN, NFQA_CFG_MASK, NFQA_CFG_FLAGS = 1, 2, 3, 4, 5
NFQNL_CFG_CMD_BIND, NFQNL_CFG_CMD_UNBIND = 1, 2
NFQNL_COPY_META = 1
NFQA_CFG_F_FAIL_OPEN = 0x1
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NF_ACCEPT = 1
NLA_TYPE_MASK = 0x3FFF
_NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid (host order)


class NetlinkError(OSError):
    """The kernel refused a config message (e.g. EBUSY: the queue is bound by another process)."""


def _align(n: int) -> int:
    return (n + 3) & ~3


def nlattr(atype: int, payload: bytes) -> bytes:
    """One netlink attribute, padded to 4 bytes."""
    length = 4 + len(payload)
    return struct.pack("=HH", length, atype) + payload + b"\0" * (_align(length) - length)


def nfq_message(msg: int, queue: int, attrs: list[bytes], seq: int, flags: int = NLM_F_REQUEST) -> bytes:
    """An nfnetlink_queue message: nlmsghdr + nfgenmsg (AF_UNSPEC, v0, queue number big-endian) + attributes."""
    body = struct.pack("=BB", socket.AF_UNSPEC, 0) + struct.pack("!H", queue) + b"".join(attrs)
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg, flags, seq, 0) + body


def config_messages(queue: int, maxlen: int) -> list[bytes]:
    """BIND the queue, copy packet metadata only, set the queue length, fail open when it is full."""
    return [
        nfq_message(NFQNL_MSG_CONFIG, queue, [nlattr(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_BIND, 0))],
                    1, NLM_F_REQUEST | NLM_F_ACK),
        nfq_message(NFQNL_MSG_CONFIG, queue, [nlattr(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META))],
                    2, NLM_F_REQUEST | NLM_F_ACK),
        nfq_message(NFQNL_MSG_CONFIG, queue, [nlattr(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", maxlen))],
                    3, NLM_F_REQUEST | NLM_F_ACK),
        nfq_message(NFQNL_MSG_CONFIG, queue, [nlattr(NFQA_CFG_MASK, struct.pack("!I", NFQA_CFG_F_FAIL_OPEN)),
                                              nlattr(NFQA_CFG_FLAGS, struct.pack("!I", NFQA_CFG_F_FAIL_OPEN))],
                    4, NLM_F_REQUEST | NLM_F_ACK),
    ]


def verdict_message(queue: int, packet_id: int, verdict: int = NF_ACCEPT) -> bytes:
    """The verdict for one queued packet."""
    return nfq_message(NFQNL_MSG_VERDICT, queue, [nlattr(NFQA_VERDICT_HDR, struct.pack("!II", verdict, packet_id))], 0)


def unbind_message(queue: int) -> bytes:
    return nfq_message(NFQNL_MSG_CONFIG, queue, [nlattr(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_UNBIND, 0))], 5)


def parse(buf: bytes) -> tuple[list[int], list[tuple[int, int]]]:
    """(packet ids of queued packets, (seq, errno) of acks/errors) from one netlink datagram."""
    ids: list[int] = []
    acks: list[tuple[int, int]] = []
    off = 0
    while off + _NLMSGHDR.size <= len(buf):
        length, mtype, _flags, seq, _pid = _NLMSGHDR.unpack_from(buf, off)
        if length < _NLMSGHDR.size or off + length > len(buf):
            break
        if mtype == NLMSG_ERROR:
            acks.append((seq, -struct.unpack_from("=i", buf, off + _NLMSGHDR.size)[0]))
        elif mtype == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            attr = off + _NLMSGHDR.size + 4  # past nfgenmsg
            while attr + 4 <= off + length:
                alen, atype = struct.unpack_from("=HH", buf, attr)
                if alen < 4:
                    break
                if atype & NLA_TYPE_MASK == NFQA_PACKET_HDR:
                    ids.append(struct.unpack_from("!I", buf, attr + 4)[0])
                attr += _align(alen)
        off += _align(length)
    return ids, acks


def bind(queue: int, maxlen: int = 4096) -> socket.socket:
    """A NETLINK_NETFILTER socket bound to `queue`; NetlinkError when the kernel refuses."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.bind((0, 0))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    sock.setsockopt(SOL_NETLINK, NETLINK_NO_ENOBUFS, 1)
    for message in config_messages(queue, maxlen):
        seq = _NLMSGHDR.unpack_from(message)[3]
        sock.send(message)
        while True:
            _, acks = parse(sock.recv(65536))
            code = next((c for s, c in acks if s == seq), None)
            if code is not None:
                break
        if code:
            sock.close()
            raise NetlinkError(code, f"nfqueue config step {seq} for queue {queue}: {os.strerror(code)}")
    return sock


def run(queue: int, delay_ms: float, jitter_ms: float = 0.0) -> int:
    """Delay every packet of `queue` until SIGTERM; returns the number of packets delayed."""
    sock = bind(queue)
    pending: list[tuple[float, int, int]] = []  # (due, arrival order, packet id)
    count = 0
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    wake_r, wake_w = os.pipe()  # a signal wakes select at once (the handler itself only sets a flag)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    try:
        while not stop:
            timeout = 0.5 if not pending else max(0.0, pending[0][0] - time.monotonic())
            try:
                ready, _, _ = select.select([sock, wake_r], [], [], min(timeout, 0.5))
            except InterruptedError:
                continue
            if sock in ready:
                try:
                    data = sock.recv(65536)
                except OSError as exc:
                    if exc.errno == errno.ENOBUFS:
                        continue
                    raise
                ids, _ = parse(data)
                arrived = time.monotonic()
                for packet_id in ids:
                    extra = random.uniform(-jitter_ms, jitter_ms) if jitter_ms else 0.0
                    count += 1
                    heapq.heappush(pending, (arrived + max(0.0, delay_ms + extra) / 1000.0, count, packet_id))
            now = time.monotonic()
            while pending and pending[0][0] <= now:
                sock.send(verdict_message(queue, heapq.heappop(pending)[2]))
    finally:
        while pending:  # nothing is dropped on the way out
            sock.send(verdict_message(queue, heapq.heappop(pending)[2]))
        signal.set_wakeup_fd(-1)
        for fd in (wake_r, wake_w):
            os.close(fd)
        try:
            sock.send(unbind_message(queue))
        finally:
            sock.close()
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--queue", type=int, required=True, help="NFQUEUE number (0-65535)")
    parser.add_argument("--delay-ms", type=float, default=1000.0, help="delay added to every packet")
    parser.add_argument("--jitter-ms", type=float, default=0.0, help="uniform +- jitter around the delay")
    parser.add_argument("--tag", default="", help="a marker for the command line (finding the helper by PID)")
    args = parser.parse_args(argv)
    if not 0 <= args.queue <= 65535 or args.delay_ms < 0 or args.jitter_ms < 0:
        parser.error("queue must be 0-65535 and delays non-negative")
    try:
        run(args.queue, args.delay_ms, args.jitter_ms)
    except OSError as exc:
        print(f"nfqueue_delay: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
