"""Serving the faithful DynamoDB: `process` starts, watches and stops it in its own process, `serve` runs the
HTTP/1.1 keep-alive loop, `http_in` takes whole requests off a connection's bytes, `orphan` ends the server when
its parent is gone. May import faithful/, fast/, simulated/ and the server's top-level modules.
"""
