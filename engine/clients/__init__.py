"""Where a run's clients run, three siblings behind one interface (`placement`): threads in this process
(`threads`), client processes on this machine (`processes`), and the workers of a Dask cluster (`cluster/`).
`work` is what each of them runs per client. May import record, backends and patterns; never engine.run
(a run hands itself in as the `placement.Run` protocol).
"""
