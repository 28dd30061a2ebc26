"""One call and a run's record: `calls` (a recorded boto3 call and its outcome), `history` (Call, Outcome, the
run's History and its files), `calllog` (a call as the seed prints it), `schema` (an imported history file checked).
May import: engine.errors, engine.options and engine.backends.faults (a call's injected fault); never a run, a
pattern or the server.
"""
