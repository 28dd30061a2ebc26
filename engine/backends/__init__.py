"""Where calls go: the embedded DynamoDB, an endpoint URL or AWS (guarded) (`backend`), the lab's tables (`tables`),
client-side faults (`faults`), and what stands between a user and a working client: the judge's patient client,
the AWS config files check and the credential errors. May import engine.errors and engine.server's process,
profile and control modules (to start and configure the embedded server); never a pattern, a run or a record.
"""
