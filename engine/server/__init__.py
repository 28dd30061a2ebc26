"""The embedded DynamoDB: moto's app in its own process, made faithful. `host/` serves it (process start and
watch, the HTTP loop), `faithful/` adds DynamoDB's rules that moto lacks, `fast/` answers the hot calls with less
machinery and the same bytes, `simulated/` holds what is SIMULATED (the aws-like contention model, GSI lag).
`profile` and `control` are the settings a client may change; `moto_store` reads and writes moto's stores directly
(tables, items by key, interned key values) for all four.
The server's side imports nothing of the engine but engine.errors; host/process (the client's side, which starts
it) also checks the AWS files through engine.backends.
"""
