"""The engine measured: its overhead against a bare boto3 loop (`overhead`), a History's memory and snapshot time
(`history_scale`), and throughput against a far-away stand-in server (`latency_scaling`, `standin_server`).
May import bench.shared and engine.
"""
