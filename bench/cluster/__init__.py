"""Clients past one process: 1 process, client processes and a Dask cluster side by side (`scaling`), and what
quieting Dask saves (`quiet`). May import bench.shared and engine.
"""
