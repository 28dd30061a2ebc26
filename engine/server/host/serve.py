"""Run the faithful DynamoDB in this process: build the WSGI app and serve it over HTTP/1.1 keep-alive.

The HTTP server is one thread with one selector. FaithfulDynamoDB answers every request under one lock, so
threads buy it no concurrency, only costs: a wake-up, a GIL hand-over and a lock convoy per request (with a
thread per connection, 16 clients ran slower than one). The loop reads whatever the kept-alive connections
have sent, answers the complete requests one after another, then sends each answer in one piece.

An answer the aws-like profile holds back (its simulated network time, a transaction's commit window) waits
in a heap of timers, not in a thread: the loop goes on answering other connections and sends it when due.

Two kinds of request still get a thread of their own, so that nothing slow holds up the loop: every request
while a latency fault is set (FaithfulDynamoDB sleeps outside its lock, as network time passes, and other
clients' calls go on meanwhile), and every request to an app other than FaithfulDynamoDB, which may need to
run concurrently (the plain-moto negative control of the race tests does).
"""

from __future__ import annotations

import heapq
import io
import itertools
import os
import selectors
import socket
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any

from engine.server.control import plain_moto_wanted
from engine.server.faithful.app import FaithfulDynamoDB
from engine.server.host.http_in import Conn, Request, take_request
from engine.server.profile import EXACT, ProfileSpec

_SERVER_ERROR = b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_OWN_HEADERS = frozenset({"content-length", "connection"})  # the server writes these itself
# Names of the app's headers passed on as they are, once per spelling: a set lookup, not a lower() per header
_PASSED_NAMES: set[str] = set()
_ENVIRON_NAMES: dict[str, str] = {}  # a header's name -> its WSGI name (less the HTTP_ prefix), once per name


class LoopServer:
    """HTTP/1.1 keep-alive server for one WSGI app on one selector thread (see the module docstring).

    The life cycle is socketserver's: serve_forever(poll_interval), shutdown() from another thread, server_close().
    """

    def __init__(self, host: str, port: int, app: Callable[..., Any]) -> None:
        self.app = app
        self._listener = socket.create_server((host, port), backlog=512)
        self._listener.setblocking(False)
        self.server_address: tuple[str, int] = self._listener.getsockname()[:2]
        self.server_port = self.server_address[1]
        self._selector = selectors.DefaultSelector()
        self._recv_buffer = bytearray(256 * 1024)  # only the loop thread reads into it
        self._recv_view = memoryview(self._recv_buffer)
        self._selector.register(self._listener, selectors.EVENT_READ)
        # Worker threads hand their answers back through this queue and wake the loop through this socket pair.
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._answered: deque[tuple[Conn, bytes, bool]] = deque()
        # Answers held back (network time, a transaction's commit window): (due, order, conn, payload, close).
        self._later: list[tuple[float, int, Conn, bytes, bool]] = []
        self._order = itertools.count()
        self._conns: set[Conn] = set()
        self._unsent: set[Conn] = set()  # connections with answers not yet handed to the kernel
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._stopped.clear()
        try:
            while not self._stop.is_set():
                timeout = poll_interval
                if self._later:
                    timeout = max(0.0, min(poll_interval, self._later[0][0] - time.monotonic()))
                for key, events in self._selector.select(timeout):
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj is self._wake_r:
                        self._take_answers()
                    else:
                        if events & selectors.EVENT_WRITE:
                            self._unsent.add(key.data)
                        if events & selectors.EVENT_READ:
                            self._read(key.data)
                if self._later:
                    self._release_due()
                # Send once every ready request is answered: each send wakes a client, which then competes with
                # this loop for a CPU (there may be only two), so the requests already waiting go first.
                for conn in list(self._unsent):
                    self._flush(conn)
        finally:
            self._stop.clear()
            self._stopped.set()

    def shutdown(self) -> None:
        self._stop.set()
        self._wake_w.send(b"x")
        self._stopped.wait()

    def server_close(self) -> None:
        for conn in list(self._conns):
            self._close(conn)
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()
        self._selector.close()

    # -- the loop -------------------------------------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            try:
                sock, addr = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # e.g. out of file descriptors: refuse this one, keep serving the others
                time.sleep(0.05)
                return
            sock.setblocking(False)
            # Each answer goes out in one send; Nagle would only hold a small one back waiting for an ACK.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Conn(sock, addr[0])
            self._conns.add(conn)
            self._selector.register(sock, selectors.EVENT_READ, conn)

    def _read(self, conn: Conn) -> None:
        # Into one reused buffer: recv(256 KiB) would allocate (mmap) and free (munmap) 256 KiB per request.
        try:
            size = conn.sock.recv_into(self._recv_buffer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            size = 0
        if not size:
            self._close(conn)
            return
        if conn.closing:
            return  # refused (e.g. a body over the limit): what follows is never read into memory
        conn.inbuf += self._recv_view[:size]
        self._answer_buffered(conn)

    def _answer_buffered(self, conn: Conn) -> None:
        """Answer the complete requests in conn's buffer, in order, until one goes to a worker thread."""
        while not conn.busy and not conn.closing and conn in self._conns:
            request = take_request(conn)
            if request is None:
                break
            if self._inline():
                payload, close, delay = self._answer(request, conn.peer, multithread=False)
                if delay > 0:  # held back without a thread: the loop answers others meanwhile
                    conn.busy = True
                    heapq.heappush(self._later, (time.monotonic() + delay, next(self._order), conn, payload, close))
                else:
                    self._queue(conn, payload, close)
            else:
                conn.busy = True
                threading.Thread(target=self._answer_in_thread, args=(conn, request), daemon=True).start()
        if conn.outbuf or conn.closing:  # also a 400 or a "100 Continue" from _parse
            self._unsent.add(conn)

    def _inline(self) -> bool:
        app = self.app
        return isinstance(app, FaithfulDynamoDB) and app.state.faults.latency_ms <= 0

    def _answer(self, request: Request, peer: str, *, multithread: bool) -> tuple[bytes, bool, float]:
        try:
            return _call(self.app, request, peer, self.server_address, multithread=multithread)
        except Exception:
            traceback.print_exc()
            return _SERVER_ERROR, True, 0.0

    def _answer_in_thread(self, conn: Conn, request: Request) -> None:
        payload, close, delay = self._answer(request, conn.peer, multithread=True)
        if delay > 0:
            time.sleep(delay)
        self._answered.append((conn, payload, close))
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass  # the server was closed meanwhile

    def _take_answers(self) -> None:
        try:
            self._wake_r.recv(4096)
        except (BlockingIOError, InterruptedError):
            pass
        while self._answered:
            conn, payload, close = self._answered.popleft()
            conn.busy = False
            if conn in self._conns:
                self._queue(conn, payload, close)
                self._answer_buffered(conn)

    def _release_due(self) -> None:
        now = time.monotonic()
        while self._later and self._later[0][0] <= now:
            _, _, conn, payload, close = heapq.heappop(self._later)
            conn.busy = False
            if conn in self._conns:
                self._queue(conn, payload, close)
                self._unsent.add(conn)
                self._answer_buffered(conn)

    @staticmethod
    def _queue(conn: Conn, payload: bytes, close: bool) -> None:
        conn.outbuf += payload
        conn.closing = conn.closing or close

    def _flush(self, conn: Conn) -> None:
        """Hand conn's output to the kernel; what it does not take now goes when the socket is writable."""
        self._unsent.discard(conn)
        if conn not in self._conns:
            return
        if conn.outbuf:
            try:
                sent = conn.sock.send(conn.outbuf)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self._close(conn)
                return
            del conn.outbuf[:sent]
        if conn.outbuf:
            self._selector.modify(conn.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, conn)
        elif conn.closing:
            self._close(conn)
        else:
            self._selector.modify(conn.sock, selectors.EVENT_READ, conn)  # no syscall when unchanged

    def _close(self, conn: Conn) -> None:
        self._unsent.discard(conn)
        if conn in self._conns:
            self._conns.discard(conn)
            self._selector.unregister(conn.sock)
            conn.sock.close()


def _call(
    app: Callable[..., Any], request: Request, peer: str, address: tuple[str, int], *, multithread: bool
) -> tuple[bytes, bool, float]:
    """Run the WSGI app on one request; return the whole HTTP response, whether to close afterwards, and how
    long to hold it back before sending."""
    path, _, query = request.target.partition("?")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": request.method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SCRIPT_NAME": "",
        "SERVER_NAME": address[0],
        "SERVER_PORT": str(address[1]),
        "SERVER_PROTOCOL": request.version,
        "REMOTE_ADDR": peer,
        "CONTENT_TYPE": "",
        "CONTENT_LENGTH": str(len(request.body)),
        "wsgi.input": io.BytesIO(request.body),
        "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.multithread": multithread,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for name, value in request.headers:
        key = _ENVIRON_NAMES.get(name)
        if key is None:
            key = name.upper().replace("-", "_")
            if len(_ENVIRON_NAMES) < 1024:  # names come from clients: bounded
                _ENVIRON_NAMES[name] = key
        if key == "CONTENT_TYPE":
            environ[key] = value
        elif key != "CONTENT_LENGTH":
            environ["HTTP_" + key] = value
    connection = environ.get("HTTP_CONNECTION", "").lower()
    close = connection == "close" or (request.version != "HTTP/1.1" and connection != "keep-alive")
    box: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
        box[:] = [status, headers]
        return lambda _data: None

    chunks = app(environ, start_response)
    try:
        payload = b"".join(chunks)
    finally:
        if hasattr(chunks, "close"):
            chunks.close()
    status, headers = box
    head = [f"HTTP/1.1 {status}"]
    for k, v in headers:  # a loop, not a generator: a Python call less per header
        if k not in _PASSED_NAMES:
            if k.lower() in _OWN_HEADERS:
                continue
            if len(_PASSED_NAMES) < 64:  # the app's own names, a handful: bounded all the same
                _PASSED_NAMES.add(k)
        head.append(f"{k}: {v}")
    head.append(f"Content-Length: {len(payload)}")
    if close:
        head.append("Connection: close")
    delay = float(environ.get("ddblab.delay_s", 0.0))  # the aws-like profile's network time (contention/model.py)
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload, close, delay


def build_app(
    *, ttl_interval_s: float = 1.0, fast: bool | None = None, lab_token: str = "", profile: ProfileSpec = EXACT
) -> FaithfulDynamoDB:
    """moto's DynamoDB behind FaithfulDynamoDB; /_lab/config takes changes only with `lab_token`; `profile` is
    the default of tables without a ddblab:profile tag.

    fast (the default when the installed moto is the verified one, see fastpath.py): DynamoDB calls go to
    moto's handler directly rather than through its Flask app, with moto's repeated work cached; the answers
    are the same bytes. DDBLAB_PLAIN_MOTO=1 in the environment turns it off, to rule it out when in doubt.
    """
    from moto.server import create_backend_app

    from engine.server.faithful import untracked
    from engine.server.fast import handler as fastpath

    if fast is None:
        fast = not plain_moto_wanted() and fastpath.verified()
    # Any region a client signs for is a region here, as on DynamoDB Local ("local", "localhost"): moto answers
    # one outside boto3's list with a KeyError, a 500 on every request.
    os.environ["MOTO_ALLOW_NONEXISTENT_REGION"] = "true"
    moto_app = create_backend_app("dynamodb")
    untracked.stop_tracking()  # on both paths: moto kept every item version ever written (untracked.py)
    moto_app.debug = False  # no tracebacks in responses
    # A crash reaches FaithfulDynamoDB, which answers it as DynamoDB would (fastpath.crash_answer), on both paths.
    moto_app.config["PROPAGATE_EXCEPTIONS"] = True
    if not fast:
        return FaithfulDynamoDB(moto_app, ttl_interval_s=ttl_interval_s, lab_token=lab_token, profile=profile)
    fastpath.tune_moto()
    return FaithfulDynamoDB(
        fastpath.DirectDynamo(moto_app), ttl_interval_s=ttl_interval_s, lab_token=lab_token, profile=profile
    )


def make_http_server(host: str, port: int, app: Callable[..., Any]) -> LoopServer:
    return LoopServer(host, port, app)
