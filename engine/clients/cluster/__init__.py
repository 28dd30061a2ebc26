"""A run's clients on the workers of a Dask cluster: `home` (this process's side of a run), `share` (a worker's
side), `check` (the address and the cluster before a run), `local` (a cluster the lab starts itself), and the
Dask preloads `calm` and `session` plus `forget`, which a scheduler runs by value. Kept import-free: Dask loads
`calm` and `session` by name into processes that need nothing else of the lab.
"""
