"""A cluster address read as Dask writes it, and a Dask client of the scheduler there that either answers within a
bound or is refused in one line with nothing of it left running.

Why not `distributed.Client(address, timeout=...)` alone: its timeout bounds only the TCP connect. Once something
accepts the connection, Dask waits for its handshake with no bound, so a web server, the embedded DynamoDB or a
socket that never answers kept the CLI and the dashboard waiting for as long as anyone let them; a peer that answers
garbage failed with Dask's traceback (an error it does not map), and a Client that failed to start kept its event
loop thread. Here the client is made on an event loop in a thread of this module's own, under one deadline; on any
failure the client is closed and the loop and its thread end before the error is raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ipaddress
import logging
import re
import socket
import threading
from collections.abc import Iterator
from typing import Any

from engine.errors import BadInput, LabError, one_line

SCHEMES = ("tcp", "tls", "ws", "wss")  # Dask's transports that reach a scheduler in another process
TLS_SCHEMES = ("tls", "wss")
EXAMPLE = "tcp://127.0.0.1:8786"
FIX_UNREACHABLE = (
    "start a scheduler and its workers (`dask scheduler`, then `dask worker ADDRESS` on each machine, or "
    "`docker compose --profile cluster up`), check the address, or leave out --cluster to run here"
)
FIX_ADDRESS = "give the Dask scheduler's host and port, e.g. --cluster tcp://scheduler:8786"
FIX_NOT_SCHEDULER = (
    "give the Dask scheduler's own address (`dask scheduler` prints it; port 8786 unless set, and 8787 is its "
    "web dashboard, not it), or leave out --cluster to run here"
)
FIX_TLS = (
    "set Dask's TLS settings here (distributed.comm.tls.ca-file, .client.cert and .client.key, in Dask's config or "
    "as DASK_DISTRIBUTED__COMM__TLS__… variables), or give the scheduler's tcp:// address"
)
HANDSHAKE_S = 2.0  # beyond the connect timeout: a scheduler answers its handshake in milliseconds
PROBE_S = 2.0  # after a failure: does anything accept a TCP connection there (which message fits)
CLOSE_S = 2.0  # closing a client that failed to start, or whose scheduler is gone

_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")


def normalize_address(text: str) -> str:
    """`host:port` or `SCHEME://host:port` (tcp, tls, ws, wss; an IPv6 host in brackets) as Dask wants it; BadInput
    naming what is wrong, and the fix, otherwise. Nothing else reaches Dask: it raises its own errors for them."""
    raw = text.strip()
    scheme, sep, rest = raw.partition("://")
    if not sep:
        scheme, rest = "tcp", raw
    scheme = scheme.lower()
    if rest.endswith("/"):
        rest = rest[:-1]
    if scheme not in SCHEMES:
        _refuse(text, f"Dask's schedulers are reached over {', '.join(s + '://' for s in SCHEMES)}, not {scheme}://")
    if not rest:
        _refuse(text, "it names no host and port")
    if any(c.isspace() or not c.isprintable() or c in "/?#@\\" for c in rest):
        _refuse(text, "a scheduler address is only a host and a port: no path, query, user or spaces")
    if rest.startswith("["):
        inside, closed, after = rest[1:].partition("]")
        if not closed:
            _refuse(text, "its IPv6 host's bracket is not closed", ipv6=True)
        if not _is_ipv6(inside):
            _refuse(text, f"[{inside}] is not an IPv6 address", ipv6=True)
        if not after.startswith(":"):
            _refuse(text, "it has no port after the IPv6 host", ipv6=True)
        host, port = f"[{inside}]", after[1:]
    else:
        if rest.count(":") > 1:
            _refuse(text, "an IPv6 host is written in brackets", ipv6=True)
        host, colon, port = rest.rpartition(":")
        if not colon:
            _refuse(text, "it has no port (a scheduler listens on 8786 unless told otherwise)")
        if not _is_host(host):
            _refuse(text, f"{host!r} is not a host name or an IPv4 address" if host else "it names no host")
    if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        _refuse(text, f"its port {port!r} is not a number from 1 to 65535" if port else "it has no port")
    return f"{scheme}://{host}:{int(port)}"


def _refuse(text: str, why: str, *, ipv6: bool = False) -> None:
    fix = FIX_ADDRESS + (" (an IPv6 host in brackets: tcp://[::1]:8786)" if ipv6 else "")
    raise BadInput(f"cluster address {text!r} is not a scheduler address like {EXAMPLE}: {why}", fix)


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)  # a zone (fe80::1%eth0) included
    except ValueError:
        return False
    return True


def _is_host(host: str) -> bool:
    if host.replace(".", "").isdigit():  # all digits: only an IPv4 address, as 10.0.0.300 is no name either
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return False
        return True
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    return len(host) <= 253 and all(_LABEL.fullmatch(label) for label in labels)


@contextlib.contextmanager
def client_of(address: str, connect_s: float) -> Iterator[Any]:
    """A Dask client of the scheduler at `address` (normalized first) for the `with` block, closed after it along
    with its event loop thread. Connecting takes at most `connect_s` (Dask retries a refused connection until then)
    plus HANDSHAKE_S; a LabError with the fix when no Dask scheduler answers there by then, for any reason."""
    address = normalize_address(address)  # before Dask is imported: a malformed address is refused at once
    import dask
    from distributed.security import Security

    scheme = address.partition("://")[0]
    if scheme in TLS_SCHEMES and Security().get_connection_args("client").get("ssl_context") is None:
        raise BadInput(f"{scheme}:// ({address}) needs Dask's TLS settings, and none are set here", FIX_TLS)
    loop = _Loop()
    failure: BaseException | None = None
    with _quiet(loop.ident, threading.get_ident()):
        try:
            # The lab never reads the scheduler's description the client refreshes every 2 s by default (a request
            # and a reply each time, through the scheduler's event loop, for the whole run): once a minute is plenty.
            with dask.config.set({"distributed.client.scheduler-info-interval": "60s"}):
                client = loop.run(_open(address, connect_s), connect_s + HANDSHAKE_S + CLOSE_S + 1.0)
        except BaseException as e:
            failure = e if isinstance(e, LabError | KeyboardInterrupt | SystemExit) else _why_not(address, e, connect_s)
        if failure is not None:  # raised here, not in the except: the line holds no reference to Dask's error
            loop.stop()
            gc.collect()  # the failed attempt's comms are in reference cycles: closed now, not at a later collection
            raise failure
    try:
        yield client
    finally:
        try:
            client.close(timeout=5)  # from this thread, not the loop's: Dask closes it as a blocking call
        except Exception:
            pass  # the scheduler is gone: nothing of it is left to close but the loop
        loop.stop()


async def _open(address: str, connect_s: float) -> Any:
    """In the loop's thread: an asynchronous client (which acts as a blocking one from any other thread), started
    within the bound, or closed and the error raised."""
    from distributed import Client

    client = Client(address, asynchronous=True, timeout=connect_s, set_as_default=False)
    try:
        await asyncio.wait_for(_started(client), connect_s + HANDSHAKE_S)
    except BaseException:
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await client.close(timeout=CLOSE_S)
        raise
    return client


async def _started(client: Any) -> Any:
    return await client


def _why_not(address: str, e: BaseException, connect_s: float) -> LabError:
    """The one line for a failed connect: nothing there, something that is not a Dask scheduler, or one that
    refuses this client."""
    if isinstance(e, ImportError):  # the scheduler's own refusal of the client (Dask says why: versions)
        return LabError(
            f"the Dask scheduler at {address} refused this client ({one_line(e)})",
            "install the same dask and distributed versions here as on the scheduler and its workers",
        )
    refused = _nothing_listens(address)
    if refused is not None:
        return LabError(f"cannot reach the Dask scheduler at {address} ({refused})", FIX_UNREACHABLE)
    chain = _chain(e)
    if any(isinstance(c, TimeoutError) for c in chain):  # ours, or Dask's own connect gave up (ws://: its upgrade)
        what = f"it did not answer Dask's handshake within {connect_s + HANDSHAKE_S:.0f} s"
    elif isinstance(e, OSError):  # Dask's closed comm wraps the reason (a TLS handshake refused, a reset)
        detail = next((one_line(c) for c in chain if str(c).strip()), type(e).__name__)
        what = f"it closed the connection before answering as one ({detail})"
    else:  # Dask's reader fails in its own ways on another program's bytes (a frame of exabytes, msgpack, asserts)
        what = "it answered, but not as a Dask scheduler does (a Dask worker's address, or another program)"
    return BadInput(f"something listens at {address}, but no Dask scheduler: {what}", FIX_NOT_SCHEDULER)


def _chain(e: BaseException) -> list[BaseException]:
    """`e` and the exceptions it was raised from, outermost first."""
    chain = [e]
    while (cause := chain[-1].__cause__ or chain[-1].__context__) is not None and cause not in chain:
        chain.append(cause)
    return chain


def _nothing_listens(address: str) -> str | None:
    """Why no TCP connection can be made to `address`'s host and port, or None when one can."""
    host, _, port = address.partition("://")[2].rpartition(":")
    try:
        with socket.create_connection((host.strip("[]").split("%")[0], int(port)), timeout=PROBE_S):
            return None
    except TimeoutError:
        return f"no answer to a connection within {PROBE_S:.0f} s"
    except OSError as e:
        return e.strerror or one_line(e)


class _Quiet(logging.Filter):
    """Drops what Dask, Tornado and asyncio log in the threads of a connect attempt: the attempt's one line says what
    went wrong (Dask logs a peer's garbage as CRITICAL, with a traceback, and each comm it leaves as a warning)."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int | None] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread not in self.threads


_QUIET = _Quiet()


@contextlib.contextmanager
def _quiet(*threads: int | None) -> Iterator[None]:
    # On each of their loggers: a filter on a logger sees only what is logged on that very logger.
    for name in ["distributed", "tornado", "asyncio", *logging.root.manager.loggerDict]:
        if name.partition(".")[0] in ("distributed", "tornado", "asyncio"):
            logger = logging.getLogger(name)
            if _QUIET not in logger.filters:
                logger.addFilter(_QUIET)
    _QUIET.threads.update(threads)
    try:
        yield
    finally:
        _QUIET.threads.difference_update(threads)


class _Loop:
    """An asyncio event loop in a thread of its own, for one Dask client: the client's callbacks run there, and
    stop() ends it (its tasks cancelled, its executor's threads joined) and the thread with it."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), name="ddblab-dask-client")
        self._thread.daemon = True  # a process that exits mid-run is not held by it
        self._thread.start()
        if not self._ready.wait(10.0):  # asyncio.run creates the loop at once: only a starved machine waits
            raise LabError("could not start an event loop for the Dask client", "run again")

    @property
    def ident(self) -> int | None:
        return self._thread.ident

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        self._ready.set()
        await self._stop.wait()

    def run(self, coro: Any, timeout: float) -> Any:
        """Run `coro` on the loop and wait for its result; TimeoutError after `timeout` (it bounds itself sooner)."""
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except BaseException:
            future.cancel()
            raise

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=CLOSE_S + 3.0)
