"""Traffic generators for the web faults, run as helper processes inside a lab host's namespace.

Stdlib only, started as a script (`python -I loadgen.py MODE ...`) and never imported: `http` stands in for
`ab -k -c N`, `udp` for `iperf3 -u -b`. The modes, their bounds and `--tag`: docs/lab.md#traffic-and-load-faults.
"""

from __future__ import annotations

import argparse
import selectors
import socket
import time
from urllib.parse import urlsplit

RETRY_S = 0.2  # a connection that failed is reopened after this long (no busy loop when the server is gone)


class _Conn:
    """One keep-alive connection: the bytes received so far and the length of the response being read."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.need: int | None = None  # header + body length of the response in progress, once headers are in
        self.connected = False
        self.closed = False


def http_flood(url: str, conns: int, max_rate: float, max_seconds: float) -> int:
    """GET `url` over `conns` keep-alive connections as fast as allowed; returns the responses received."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 80
    request = (f"GET {parts.path or '/'} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
               "User-Agent: Wget/1.21.3\r\nAccept: */*\r\n\r\n").encode()
    sel = selectors.DefaultSelector()
    retry: list[float] = []  # when each closed connection may be reopened
    done, start = 0, time.monotonic()
    tokens, last = float(conns), start
    waiting: list[_Conn] = []  # connected, waiting for a rate token before the next request

    def open_one() -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.connect_ex((host, port))
        sel.register(sock, selectors.EVENT_WRITE, _Conn(sock))

    def close(conn: _Conn) -> None:
        if conn.closed:
            return
        conn.closed = True
        sel.unregister(conn.sock)
        conn.sock.close()
        retry.append(time.monotonic() + RETRY_S)

    def send(conn: _Conn) -> None:
        if conn.closed:
            return
        try:
            if conn.sock.send(request) != len(request):
                close(conn)
        except OSError:
            close(conn)

    for _ in range(conns):
        open_one()
    while time.monotonic() - start < max_seconds:
        now = time.monotonic()
        if max_rate > 0:
            tokens = min(float(conns), tokens + (now - last) * max_rate)
            last = now
            while waiting and tokens >= 1:
                tokens -= 1
                send(waiting.pop())
        due = [t for t in retry if t <= now]
        if due:
            retry = [t for t in retry if t > now]
            for _ in due:
                open_one()
        for key, _events in sel.select(timeout=0.05):
            conn: _Conn = key.data
            if not conn.connected:
                if conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    close(conn)
                    continue
                conn.connected = True
                sel.modify(conn.sock, selectors.EVENT_READ, conn)
                send(conn)
                continue
            try:
                chunk = conn.sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                close(conn)
                continue
            conn.buf += chunk
            finished = False
            while True:
                if conn.need is None:
                    end = conn.buf.find(b"\r\n\r\n")
                    if end < 0:
                        break
                    head = bytes(conn.buf[:end]).lower()
                    length = 0
                    for line in head.split(b"\r\n"):
                        if line.startswith(b"content-length:"):
                            length = int(line.split(b":", 1)[1].strip() or 0)
                    conn.need = end + 4 + length
                if len(conn.buf) < conn.need:
                    break
                del conn.buf[:conn.need]
                conn.need = None
                done += 1
                finished = True
            if finished and not conn.buf:
                if max_rate > 0 and tokens < 1:
                    waiting.append(conn)
                else:
                    tokens -= 1
                    send(conn)
    return done


def udp_flood(dst: str, port: int, kbps: float, size: int, max_seconds: float) -> int:
    """Send `size`-byte datagrams to dst:port at `kbps` kbit/s, paced every 10 ms; returns datagrams sent."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = bytes(size)
    pps = kbps * 1000 / 8 / size
    sent, start = 0, time.monotonic()
    while True:
        elapsed = time.monotonic() - start
        if elapsed >= max_seconds:
            return sent
        for _ in range(int(elapsed * pps) - sent):
            try:
                sock.sendto(payload, (dst, port))
            except OSError:
                pass  # ENOBUFS, unreachable: a flood keeps going
            sent += 1
        time.sleep(0.01)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="faultline traffic generators (helper processes)")
    parser.add_argument("--tag", default="", help="the fault's marker, for finding this process")
    parser.add_argument("--max-seconds", type=float, default=3 * 3600, help="stop after this long")
    modes = parser.add_subparsers(dest="mode", required=True)
    http = modes.add_parser("http", help="keep-alive HTTP GET flood")
    http.add_argument("--url", required=True)
    http.add_argument("--conns", type=int, default=100)
    http.add_argument("--max-rate", type=float, default=0, help="requests/s over all connections (0: no cap)")
    udp = modes.add_parser("udp", help="paced UDP sender")
    udp.add_argument("--dst", required=True)
    udp.add_argument("--port", type=int, default=5201)
    udp.add_argument("--kbps", type=float, required=True)
    udp.add_argument("--size", type=int, default=1200)
    args = parser.parse_args(argv)
    try:
        if args.mode == "http":
            http_flood(args.url, args.conns, args.max_rate, args.max_seconds)
        else:
            udp_flood(args.dst, args.port, args.kbps, args.size, args.max_seconds)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
