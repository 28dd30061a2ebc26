"""Bytes in from a kept-alive connection, taken off as whole HTTP/1.1 requests (serve.py's loop answers them): a
head parsed once however many sends its body takes, a malformed or oversize one refused with DynamoDB's error
and the connection closed, "100 Continue" for a client that waits for it."""

from __future__ import annotations

import json
import socket
from typing import NamedTuple

from engine.server.faithful import limits


def _error_response(status: int, reason: str, code: str, message: str) -> bytes:
    body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/x-amz-json-1.0\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


_MAX_HEAD = 64 * 1024  # request line and headers
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_BAD_REQUEST = _error_response(400, "Bad Request", "SerializationException", "The HTTP request is malformed")
# Refused from its Content-Length alone, before the body is read (and then the connection is closed).
_TOO_LARGE = _error_response(
    413,
    "Request Entity Too Large",
    "ValidationException",
    f"Request size exceeds the limit of {limits.MAX_BODY_BYTES} bytes",
)


_Head = tuple[int, str, str, str, list[tuple[str, str]], int]  # (end of head, method, target, version, headers, length)


class Request(NamedTuple):
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes


class Conn:
    """One client connection: bytes in, bytes out, and whether a worker thread is answering it."""

    __slots__ = ("sock", "peer", "inbuf", "outbuf", "busy", "closing", "continued", "head")

    def __init__(self, sock: socket.socket, peer: str) -> None:
        self.sock = sock
        self.peer = peer
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.busy = False  # a worker thread answers its current request; later ones wait in inbuf
        self.closing = False  # close once outbuf is sent
        self.continued = False  # "100 Continue" already sent for the request at the front of inbuf
        # The parsed head of the request at the front of inbuf while its body is still arriving: urllib3 sends a
        # request's head and body in two sends, and the head was parsed again on the body's wake (62 % of
        # requests at 16 threads).
        self.head: _Head | None = None


def take_request(conn: Conn) -> Request | None:
    """Take one complete request off the front of conn.inbuf; None while it is incomplete or malformed."""
    buf = conn.inbuf
    head = conn.head
    if head is None:
        head = _parse_head(conn)
        if head is None:
            return None
    end, method, target, version, headers, length = head
    if len(buf) < end + 4 + length:
        conn.head = head
        return None
    conn.head = None
    body = bytes(buf[end + 4 : end + 4 + length])
    del buf[: end + 4 + length]
    conn.continued = False
    return Request(method, target, version, headers, body)


def _parse_head(conn: Conn) -> _Head | None:
    """The head of the request at the front of conn.inbuf; None while it is incomplete or when it is refused."""
    buf = conn.inbuf
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > _MAX_HEAD:
            _reject(conn)
        return None
    names: dict[str, str] = {}
    method = target = version = ""
    headers: list[tuple[str, str]] = []
    try:
        lines = buf[:end].decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        # Plain loops, not comprehensions over a generator: each header cost two Python calls that way.
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip(), value.strip()
            headers.append((name, value))
            names[name.lower()] = value
        length = int(names.get("content-length", 0))
    except ValueError:
        length = -1
    if length < 0 or "transfer-encoding" in names:  # botocore always sends Content-Length; so must others
        _reject(conn)
        return None
    if length > limits.MAX_BODY_BYTES:
        _reject(conn, _TOO_LARGE)
        return None
    if len(buf) < end + 4 + length and not conn.continued and names.get("expect", "").lower() == "100-continue":
        conn.outbuf += _CONTINUE  # the client waits for this before it sends the body
        conn.continued = True
    return end, method, target, version, headers, length


def _reject(conn: Conn, answer: bytes = _BAD_REQUEST) -> None:
    conn.inbuf.clear()  # nothing more is read from a connection that is closing
    conn.head = None
    conn.outbuf += answer
    conn.closing = True
