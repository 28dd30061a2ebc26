"""Before a cluster run: is the address a scheduler's, does it answer, has it workers, can they load the lab and
reach the run's backend, and where their clocks stand against ours. engine/clients/cluster/home.py runs the run itself."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from engine.backends.backend import Backend, BackendKind
from engine.clients.contract import RunConfig
from engine.errors import BadInput, LabError, one_line
from engine.patterns.base import Pattern

CONNECT_TIMEOUT_S = 5.0  # reaching the scheduler (Dask retries a refused connection until then)
LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0")
FIX_INSTALL = "install the lab on every worker (pip install the same version as here), restart them, and run again"
FIX_UNREACHABLE = (
    "start a scheduler and its workers (`dask scheduler`, then `dask worker ADDRESS` on each machine, or "
    "`docker compose --profile cluster up`), check the address, or leave out --cluster to run here"
)


def normalize_address(text: str) -> str:
    """`host:port` or `tcp://host:port` (also tls://) as Dask wants it; BadInput with the fix otherwise."""
    raw = text.strip()
    url = urlparse(raw if "://" in raw else f"tcp://{raw}")
    try:
        port = url.port
    except ValueError:
        port = None
    if url.scheme not in ("tcp", "tls") or not url.hostname or port is None or url.path not in ("", "/"):
        raise BadInput(
            f"cluster address {text!r} is not a scheduler address like tcp://127.0.0.1:8786",
            "give the Dask scheduler's host and port, e.g. --cluster tcp://scheduler:8786",
        )
    host = f"[{url.hostname}]" if ":" in url.hostname else url.hostname
    return f"{url.scheme}://{host}:{port}"


def check_config(pattern: type[Pattern], config: RunConfig) -> None:
    """What RunConfig.validated asks of a run with a cluster address, before anything starts."""
    normalize_address(config.cluster or "")
    if config.processes > 1:
        raise BadInput(
            "--cluster and --processes were both given",
            "use --processes N to spread the clients on this machine, or --cluster ADDRESS for a cluster's workers",
        )
    if not pattern.process_pool:
        raise BadInput(
            f"{pattern.name}'s clients meet in memory (shared state), so they cannot be spread over a cluster's workers",
            "leave out --cluster for this pattern",
        )


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    address: str
    id: str
    same_machine: bool  # same kernel and host name: this machine's loopback is its loopback (not a container's)
    clock_offset_ns: int


def connect(address: str) -> Any:
    """A Dask client of the scheduler at `address`; LabError with the fix when nobody answers there."""
    import dask
    from distributed import Client

    address = normalize_address(address)
    try:
        # The lab never reads the scheduler's description the client refreshes every 2 s by default (a request and
        # a reply each time, through the scheduler's event loop, for the whole run): once a minute is plenty.
        with dask.config.set({"distributed.client.scheduler-info-interval": "60s"}):
            return Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise LabError(f"cannot reach the Dask scheduler at {address} ({one_line(e)})", FIX_UNREACHABLE) from None


def check_cluster(address: str, backend: Backend) -> int:
    """Before a run (CLI, dashboard): the scheduler answers, has workers, and they can reach `backend`'s
    endpoint (check it after the backend is open: the embedded server's URL is known then). Returns how many
    workers there are."""
    client = connect(address)
    try:
        workers = workers_of(client)
        check_reach(backend, workers)
        return len(workers)
    finally:
        client.close(timeout=5)


def workers_of(client: Any) -> list[WorkerInfo]:
    """The cluster's workers, with whether each is on this machine and its clock's offset from ours."""
    if not present(client):
        raise LabError(
            f"the Dask scheduler at {client.scheduler.address} has no workers",
            "start some (`dask worker SCHEDULER-ADDRESS`) and run again",
        )
    sent = time.monotonic_ns()
    probes = client.run(_probe_worker, on_error="return")
    back = time.monotonic_ns()
    here = _probe()
    found = []
    for address in sorted(probes):
        probe = probes[address]
        if _cannot_import(probe):  # the probe is the lab's own function: it cannot load without the lab
            raise LabError(f"cluster worker {address} cannot load the lab ({one_line(probe)})", FIX_INSTALL)
        if isinstance(probe, BaseException):
            continue  # a worker that left meanwhile is left out
        boot, host, mono, worker_id = probe
        # One kernel, one monotonic clock (containers included): nothing to estimate. Another machine's clock
        # has another origin: estimated from the round trip, to within half of it (milliseconds).
        offset = 0 if boot and boot == here[0] else mono - (sent + back) // 2
        found.append(WorkerInfo(address, worker_id, (boot, host) == here[:2], offset))
    if not found:
        raise LabError(f"no worker of the Dask scheduler at {client.scheduler.address} answered", FIX_UNREACHABLE)
    return found


def _cannot_import(result: Any) -> bool:
    """A worker's answer is an import failure: raised as such, or (a function that would not unpickle) wrapped by
    Dask in a plain Exception that names it."""
    if isinstance(result, ImportError):
        return True
    return isinstance(result, Exception) and any(
        name in str(result) for name in ("ModuleNotFoundError", "ImportError", "No module named")
    )


def present(client: Any) -> set[str]:
    """The addresses of the scheduler's workers now. Not Client.scheduler_info(): the client's own periodic
    refresh overwrites the dict it returns with one that lists no workers, so a read can land on that one; and
    `ncores` (address: threads) is the lightest question that lists them."""
    try:
        return set(client.sync(client.scheduler.ncores))
    except Exception as e:
        raise scheduler_lost(e) from None


def _probe() -> tuple[str, str, int]:
    """(boot id, host name, monotonic ns): one kernel's processes share the monotonic clock."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    return boot, socket.gethostname(), time.monotonic_ns()


def _probe_worker(dask_worker: Any) -> tuple[str, str, int, str]:
    """_probe on a worker, with the id of its process (a restarted worker keeps its name and maybe its address)."""
    return (*_probe(), str(dask_worker.id))


def check_reach(backend: Backend, workers: list[WorkerInfo]) -> None:
    """A loopback endpoint (the embedded server, or a URL on 127.0.0.1) is reachable from this machine only."""
    far = [w.address for w in workers if not w.same_machine]
    host = urlparse(backend.endpoint_url or "").hostname
    if not far or backend.kind is BackendKind.AWS or host not in LOOPBACK:
        return
    what = "the embedded DynamoDB" if backend.kind is BackendKind.EMBEDDED else f"{backend.endpoint_url}"
    raise LabError(
        f"{what} listens on this machine's loopback, which the cluster's workers on other machines "
        f"({', '.join(far[:3])}) cannot reach",
        "serve DynamoDB where they can reach it (`python -m engine serve --host 0.0.0.0`, DynamoDB Local) and "
        "pass --endpoint-url http://THIS-HOST:8000, or use --aws",
    )


def scheduler_lost(e: BaseException) -> LabError:
    return LabError(
        f"lost the connection to the Dask scheduler ({one_line(e)})",
        "the calls recorded so far are kept; check the scheduler and start a new run",
    )
