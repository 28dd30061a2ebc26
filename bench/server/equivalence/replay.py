"""The corpus replayed, one request a fresh connection, on a plain-moto server and on a fast one; the answers
compared but for what is random or timed."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys

from bench.server.equivalence.corpus import corpus
from engine.server.host.process import EmbeddedServer

REFERENCE_SERVER = """
from engine.server.host import serve
server = serve.make_http_server("127.0.0.1", 0, serve.build_app(fast=False))
print("LISTENING", server.server_port, flush=True)
server.serve_forever()
"""


def raw_exchange(port: int, path: str, headers: dict[str, str], body: bytes) -> tuple[str, str]:
    """One request on a fresh connection; the response head and body as text."""
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() not in ("host", "content-length")]
    lines.append(f"Content-Length: {len(body)}")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        data = b""
        while True:
            head, sep, rest = data.partition(b"\r\n\r\n")
            found = re.search(rb"(?im)^content-length: *(\d+)", head) if sep else None
            if found and len(rest) >= int(found.group(1)):
                return head.decode("latin-1"), rest[: int(found.group(1))].decode()
            chunk = sock.recv(65536)
            if not chunk:
                return data.decode("latin-1"), ""
            data += chunk


def _comparable(head: str, body: str) -> tuple[str, str]:
    # Request ids are random; table descriptions carry creation times (which change their length and CRC).
    head = re.sub(r"(?im)^(x-amzn-requestid): .*$", r"\1: *", head)
    timeless = re.sub(r'"(CreationDateTime|LastIncreaseDateTime|LastDecreaseDateTime)": [0-9.e+]+', r'"\1": *', body)
    timeless = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+", "*", timeless)  # a stream's label and ARN
    if timeless != body:
        head = re.sub(r"(?im)^(x-amz-crc32|content-length): .*$", r"\1: *", head)
    return head, timeless


def equivalence() -> list[str]:
    """Replay the corpus on a fresh fast server and a fresh plain-moto one; return the differences."""
    requests = corpus()
    answers: list[list[tuple[str, str]]] = []
    reference = subprocess.Popen(
        [sys.executable, "-c", REFERENCE_SERVER], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )  # moto logs a traceback for each 500
    try:
        assert reference.stdout is not None
        ref_port = int(reference.stdout.readline().split()[1])
        with EmbeddedServer() as server:
            assert server.port is not None
            for port in (ref_port, server.port):
                answers.append(
                    [_comparable(*raw_exchange(port, path, headers, body)) for _, path, headers, body in requests]
                )
    finally:
        reference.terminate()
        reference.wait(10)
    differences = []
    for (label, *_), plain, fast in zip(requests, *answers, strict=True):
        if plain != fast:
            differences.append(f"{label}:\n    plain moto: {json.dumps(plain)}\n    fast path:  {json.dumps(fast)}")
    print(f"equivalence: {len(requests)} requests, {len(differences)} differences")
    return differences
