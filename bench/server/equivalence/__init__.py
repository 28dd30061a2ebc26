"""The embedded server's fast path answers with the bytes moto's Flask app would: a corpus of botocore requests
over many operations (successes, refusals, odd inputs, `corpus` with the calls of `short_way_refusals`,
`fast_item_calls` and `aws_like_calls` and the hand-written bodies of `raw_bodies`) replayed on a fast server and on
plain moto (`replay`). May import bench.shared and engine.

    python -m bench.server.throughput --equivalence
"""
