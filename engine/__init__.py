"""The laboratory: pools of real boto3 clients against DynamoDB, every call recorded, invariants judged.

Sub-packages by role, lowest first: `record` (one call and a run's record), `backends` (where calls go), `patterns`
(the seed's eight patterns), `clients` (where a run's clients run), `run` (configure, run, judge, summarise),
`commands` (the CLI's commands), `server` (the embedded DynamoDB, its own process). Top-level modules are the CLI's
entry and the few helpers every layer shares (errors, options, digits, the CLI process's signal and stdout guards).
Nothing here imports streamlit or the dashboard.
"""
