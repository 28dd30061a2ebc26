"""A stand-in for a far-away DynamoDB: answers every request with `{}` after a fixed delay, in parallel.

Run in its own process (`python -m bench.engine.standin_server --latency-ms 10`, it prints its port), so the
benchmark's client process has its cores to itself. One asyncio loop holds every connection open
(HTTP/1.1 keep-alive) and sleeps without a thread per request, so 64 callers wait 10 ms each at the same
time, as they would on AWS. It is not DynamoDB and is used only to measure the engine's own call path.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 2\r\n\r\n{}"


async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            if delay_s:
                await asyncio.sleep(delay_s)
            writer.write(ANSWER)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _main(delay_s: float) -> None:
    server = await asyncio.start_server(lambda r, w: _serve_connection(r, w, delay_s), "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        # The parent holds our stdin: when it goes, for any reason, so do we.
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


def start(latency_ms: float) -> tuple[subprocess.Popen[str], int]:
    """Start the stand-in in its own process; returns it and its port. Stop it with `.kill()`."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.engine.standin_server", "--latency-ms", str(latency_ms)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=10.0)
    asyncio.run(_main(parser.parse_args().latency_ms / 1000))
