"""The probe API's runner over SSH (asyncssh): the same commands as the local runner, run on the device.

Every command is checked against the allowlist before it is sent; a pool bounds the connections, and a device
that cannot be reached gives a failure result, never a crash. Why asyncssh, and the pool's rules:
docs/ssh.md#transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from faultline.network import allowlist
from faultline.network.runner import CommandResult, Runner
from faultline.network.ssh_credentials import Credentials
from faultline.network.ssh_inventory import SshTarget

SSH_FAILED = 255  # OpenSSH's exit status when the connection itself failed
_BACKOFF_S = 0.5


@dataclass
class PoolOptions:
    """Bounds of the connection pool (settings ssh_pool_size, ssh_per_device, ssh_connect_timeout_s, ssh_retries)."""

    pool_size: int = 4
    per_device: int = 2
    connect_timeout_s: float = 5.0
    retries: int = 2
    # after a device failed every attempt, its next commands fail at once for this long: a crashed device
    # would otherwise cost every probe the full connect timeouts and back-offs again
    hold_down_s: float = 30.0


@dataclass
class SshStats:
    """What the runner did, for benchmarks and run records."""

    connections_opened: int = 0
    max_open: int = 0  # the most connections open at one time
    commands: int = 0
    failures: int = 0
    refused: int = 0
    seconds: list[float] = field(default_factory=list)


class _Permanent(Exception):
    """A failure retrying cannot fix: unknown host key, login refused."""


class SshRunner(Runner):
    """Runs probe commands on inventory devices over SSH; thread-safe, one event loop thread of its own."""

    def __init__(self, targets: dict[str, SshTarget], credentials: Credentials, options: PoolOptions | None = None,
                 *, timeout_s: float = 10.0, output_cap: int | None = None) -> None:
        super().__init__(timeout_s=timeout_s, **({"output_cap": output_cap} if output_cap else {}))
        self.targets = targets
        self.credentials = credentials
        self.options = options or PoolOptions()
        self.stats = SshStats()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="faultline-ssh", daemon=True)
        self._thread.start()
        self._conns: OrderedDict[str, object] = OrderedDict()  # device -> open connection (LRU order)
        self._busy: dict[str, int] = {}
        self._dead: dict[str, str] = {}  # device -> permanent failure reason
        self._down: dict[str, tuple[float, str]] = {}  # device -> (retry after, monotonic; why it failed)
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._pool_changed: asyncio.Condition | None = None
        self._opening: dict[str, asyncio.Future] = {}
        self._closed = False

    # --- the Runner interface -------------------------------------------------------------------------
    def run(self, device: str, argv: Sequence[str], *, namespace: str | None, timeout_s: float | None = None,
            output_cap: int | None = None) -> CommandResult:
        """Run `argv` on `device` over SSH (Refused, before any traffic, for a command outside the allowlist)."""
        vector = list(argv)
        local = ["ip", "netns", "exec", namespace, *vector] if namespace is not None else vector
        target = self.targets.get(device)
        if target is None:
            return self._failed(device, namespace, local, f"{device} is not in the SSH inventory", 0.0)
        remote = self.remote_argv(target, vector)
        try:
            allowlist.check(remote, target.read_roots)
        except allowlist.Refused:
            self.stats.refused += 1
            raise
        timeout = self.timeout_s if timeout_s is None else timeout_s
        cap = self.output_cap if output_cap is None else output_cap
        future = asyncio.run_coroutine_threadsafe(self._run(target, shlex.join(remote), timeout, cap), self._loop)
        exit_code, out, err, timed_out, truncated, took, problem = future.result()
        self.stats.commands += 1
        self.stats.seconds.append(took)
        if problem is not None:
            return self._failed(device, namespace, local, problem, took)
        return CommandResult(device=device, namespace=namespace, argv=local, exit_code=exit_code, stdout=out,
                             stderr=err, duration_s=round(took, 4), timed_out=timed_out, truncated=truncated)

    @staticmethod
    def remote_argv(target: SshTarget, argv: list[str]) -> list[str]:
        """What the device runs: the vector itself; on a whole machine (no namespace) the namespace-scoped
        forms become their machine-wide ones (all processes; FRR's default vty socket)."""
        if target.namespace is not None:
            return argv
        if argv[:3] == ["ip", "netns", "pids"]:
            return ["ps", "-e", "-o", "pid="]
        if argv[:2] == ["vtysh", "-N"] and len(argv) > 2:
            return ["vtysh", *argv[3:]]
        return argv

    def close(self) -> None:
        """Close every connection and stop the event loop thread."""
        if self._closed:
            return
        self._closed = True
        asyncio.run_coroutine_threadsafe(self._close_all(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def __del__(self) -> None:  # a forgotten runner must not keep connections open
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - at interpreter shutdown the loop (and module globals) may be gone
            pass

    def _failed(self, device: str, namespace: str | None, local: list[str], problem: str, took: float
                ) -> CommandResult:
        self.stats.failures += 1
        return CommandResult(device=device, namespace=namespace, argv=local, exit_code=SSH_FAILED, stdout="",
                             stderr=f"ssh: {problem}\n", duration_s=round(took, 4), transport_error=problem)

    # --- the event loop side --------------------------------------------------------------------------
    async def _run(self, target: SshTarget, command: str, timeout: float, cap: int
                   ) -> tuple[int | None, str, str, bool, bool, float, str | None]:
        start = time.monotonic()
        slot = self._slots.setdefault(target.device, asyncio.Semaphore(self.options.per_device))
        async with slot:
            held = self._down.get(target.device)
            if held is not None and held[0] > time.monotonic():
                return None, "", "", False, False, time.monotonic() - start, f"{held[1]} (not retried for now)"
            attempt = 0
            while True:
                try:
                    conn = await self._connection(target)
                except _Permanent as exc:
                    return None, "", "", False, False, time.monotonic() - start, str(exc)
                except Exception as exc:  # noqa: BLE001 - any transport failure is a result
                    problem = _describe(target, exc)
                else:
                    try:
                        answer = await self._exec(conn, command, timeout, cap)
                        self._down.pop(target.device, None)
                        return (*answer, time.monotonic() - start, None)
                    except Exception as exc:  # noqa: BLE001 - the connection dropped under the command
                        problem = _describe(target, exc)
                        await self._drop(target.device, conn)
                    finally:
                        self._release(target.device)
                if attempt >= self.options.retries:
                    self._down[target.device] = (time.monotonic() + self.options.hold_down_s, problem)
                    return None, "", "", False, False, time.monotonic() - start, problem
                await asyncio.sleep(_BACKOFF_S * 2 ** attempt)
                attempt += 1

    async def _exec(self, conn, command: str, timeout: float, cap: int) -> tuple[int | None, str, str, bool, bool]:
        import asyncssh

        proc = await conn.create_process(command, encoding=None, stdin=asyncssh.DEVNULL)
        flags = {"truncated": False}

        async def drain(stream) -> bytes:
            kept = bytearray()
            while True:
                chunk = await stream.read(65536)
                if not chunk:
                    return bytes(kept)
                room = cap - len(kept)
                if room > 0:
                    kept.extend(chunk[:room])
                if len(chunk) > max(room, 0):
                    flags["truncated"] = True

        reading = asyncio.gather(drain(proc.stdout), drain(proc.stderr))
        try:
            out, err = await asyncio.wait_for(reading, timeout)
            await asyncio.wait_for(proc.wait_closed(), 5)
        except TimeoutError:
            proc.close()  # closing the channel ends the remote command's output; sshd reaps it
            return None, "", "", True, flags["truncated"]
        return (proc.exit_status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), False,
                flags["truncated"])

    async def _connection(self, target: SshTarget):
        device = target.device
        if device in self._dead:
            raise _Permanent(self._dead[device])
        if self._pool_changed is None:
            self._pool_changed = asyncio.Condition()
        async with self._pool_changed:
            while True:
                if device in self._conns:
                    self._conns.move_to_end(device)
                    self._busy[device] = self._busy.get(device, 0) + 1
                    return self._conns[device]
                if device in self._opening:
                    pending = self._opening[device]
                    self._pool_changed.release()
                    try:  # the opener reports its own failure; this waiter only looks again
                        with contextlib.suppress(Exception):
                            await asyncio.shield(pending)
                    finally:
                        await self._pool_changed.acquire()
                    if device in self._dead:
                        raise _Permanent(self._dead[device])
                    if device not in self._conns:
                        raise ConnectionError(f"connecting to {device} failed")
                    continue
                if len(self._conns) + len(self._opening) < self.options.pool_size:
                    break
                idle = next((d for d in self._conns if not self._busy.get(d)), None)
                if idle is not None:
                    conn = self._conns.pop(idle)
                    conn.close()
                    continue
                await self._pool_changed.wait()
            opening = asyncio.get_running_loop().create_future()
            self._opening[device] = opening
        try:
            conn = await self._open(target)
        except BaseException as exc:
            async with self._pool_changed:
                self._opening.pop(device, None)
                opening.set_exception(exc) if not opening.done() else None
                opening.exception()  # retrieved: no "never retrieved" warning when nobody waited
                self._pool_changed.notify_all()
            raise
        async with self._pool_changed:
            self._opening.pop(device, None)
            self._conns[device] = conn
            self.stats.max_open = max(self.stats.max_open, len(self._conns))
            self._busy[device] = self._busy.get(device, 0) + 1
            opening.set_result(None)
            self._pool_changed.notify_all()
        return conn

    async def _open(self, target: SshTarget):
        import asyncssh

        creds = self.credentials
        known = str(creds.known_hosts)
        if creds.accept_new:
            await self._learn_host_key(target, known)
        key_file = creds.key_file or (target.key_file and _existing(target.key_file))
        password = creds.password(target.device)
        try:
            conn = await asyncssh.connect(
                target.hostname, port=target.port, username=target.username, known_hosts=known,
                client_keys=[str(key_file)] if key_file else (), agent_path=() if not key_file else None,
                password=password, connect_timeout=self.options.connect_timeout_s, config=None,
                preferred_auth="publickey,password" if password else "publickey", keepalive_interval=15)
        except asyncssh.HostKeyNotVerifiable as exc:
            reason = (f"the host key of {target.device} ({target.hostname}:{target.port}) is not trusted by {known} "
                      f"({exc.reason}); fix: check the device's key fingerprint and add it to that file "
                      "(ssh-keyscan), or for a lab run `faultline lab inventory` again")
            self._dead[target.device] = reason
            raise _Permanent(reason) from None
        except asyncssh.PermissionDenied as exc:
            reason = (f"login to {target.device} ({target.username or 'default user'}@{target.hostname}) was refused "
                      f"({exc.reason}); fix: check ssh_key_file / ssh-agent, or the password source")
            self._dead[target.device] = reason
            raise _Permanent(reason) from None
        self.stats.connections_opened += 1
        return conn

    async def _learn_host_key(self, target: SshTarget, known: str) -> None:
        import asyncssh

        listed = asyncssh.read_known_hosts(known).match(target.hostname, "", target.port)
        if listed[0] or listed[1] or listed[2]:
            return  # already listed (trusted or revoked): the strict check decides
        key = await asyncssh.get_server_host_key(target.hostname, target.port)
        if key is None:
            return
        name = target.hostname if target.port == 22 else f"[{target.hostname}]:{target.port}"
        line = f"{name} {key.export_public_key().decode().strip()}\n"
        await asyncio.to_thread(_append, known, line)

    def _release(self, device: str) -> None:
        self._busy[device] = max(0, self._busy.get(device, 0) - 1)
        if self._pool_changed is not None:
            asyncio.ensure_future(self._notify())

    async def _notify(self) -> None:
        assert self._pool_changed is not None
        async with self._pool_changed:
            self._pool_changed.notify_all()

    async def _drop(self, device: str, conn) -> None:
        if self._conns.get(device) is conn:
            self._conns.pop(device, None)
        conn.close()

    async def _close_all(self) -> None:
        for conn in list(self._conns.values()):
            conn.close()
        for conn in list(self._conns.values()):
            with contextlib.suppress(Exception):  # closing is best effort
                await asyncio.wait_for(conn.wait_closed(), 2)
        self._conns.clear()


def _append(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)


def _existing(path: str) -> str | None:
    from pathlib import Path

    return path if Path(path).is_file() else None


def _describe(target: SshTarget, exc: BaseException) -> str:
    what = type(exc).__name__
    detail = getattr(exc, "reason", None) or str(exc) or what
    return f"cannot reach {target.device} at {target.hostname}:{target.port} ({what}: {detail})"
