"""The embedded DynamoDB measured: throughput beside dynalite (`throughput`), its CPU per request without the wire
(`app_cpu`), a call's cost to the client (`client_cost`), the aws-like profile's behaviour and CPU share
(`aws_like`), and the fast path's equivalence with moto's app (`equivalence`). May import bench.shared and engine.
"""
