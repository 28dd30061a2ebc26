"""Run the faithful DynamoDB in this process: build the WSGI app and serve it over HTTP/1.1 keep-alive."""

from __future__ import annotations

import ctypes
import io
import os
import signal
import sys
import threading
from typing import Any

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from engine.server.app import FaithfulDynamoDB


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive, one write per response.

    werkzeug's development server closes every connection and waits 10 ms per request for stray bytes;
    botocore keeps pooled connections open, so a keep-alive server is several times faster here.
    """

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: "_Server"

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path, _, query = self.path.partition("?")
        environ: dict[str, Any] = {
            "REQUEST_METHOD": self.command, "PATH_INFO": path, "QUERY_STRING": query, "SCRIPT_NAME": "",
            "SERVER_NAME": self.server.server_address[0], "SERVER_PORT": str(self.server.server_address[1]),
            "SERVER_PROTOCOL": self.request_version, "REMOTE_ADDR": self.client_address[0],
            "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr, "wsgi.url_scheme": "http",
            "wsgi.version": (1, 0), "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.run_once": False,
        }
        for name, value in self.headers.items():
            key = "HTTP_" + name.upper().replace("-", "_")
            if key not in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"):
                environ[key] = value
        box: dict[str, Any] = {}

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            box["status"], box["headers"] = status, headers
            return lambda _data: None

        chunks = self.server.app(environ, start_response)
        try:
            payload = b"".join(chunks)
        finally:
            if hasattr(chunks, "close"):
                chunks.close()
        head = [f"HTTP/1.1 {box['status']}"]
        head += [f"{k}: {v}" for k, v in box["headers"] if k.lower() not in ("content-length", "connection")]
        head += [f"Content-Length: {len(payload)}", "", ""]
        self.wfile.write("\r\n".join(head).encode("latin-1") + payload)

    do_GET = do_POST = do_PUT = do_DELETE = _handle

    def log_message(self, format: str, *args: Any) -> None:  # one line per call would drown the terminal
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512
    app: Any


def build_app(*, ttl_interval_s: float = 1.0) -> FaithfulDynamoDB:
    from moto.server import create_backend_app

    from engine.server.fastpath import DirectDynamo, memoize_moto

    moto_app = create_backend_app("dynamodb")
    moto_app.debug = False  # no tracebacks in responses
    memoize_moto()
    return FaithfulDynamoDB(DirectDynamo(moto_app), ttl_interval_s=ttl_interval_s)


def make_http_server(host: str, port: int, app: FaithfulDynamoDB) -> ThreadingHTTPServer:
    server = _Server((host, port), _Handler)
    server.app = app
    return server


def die_with_parent(parent_pid: int) -> None:
    """Leave no orphan: the kernel signals us when the parent dies, and a watchdog checks as a fallback."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass

    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(0)
            threading.Event().wait(0.5)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()
