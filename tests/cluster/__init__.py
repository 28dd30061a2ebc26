"""The Dask cluster tests: ./test runs them in a pytest process of their own (Dask leaves event-loop threads)."""
