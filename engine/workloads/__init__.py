"""A team's own workload: a YAML file describing its table and traffic, run by the engine like a pattern.

What lives here:
- schema: the file's pydantic models, its caps, and `parse`/`load`, which refuse a bad file with one message
  per problem naming the field path and the fix (YAML syntax errors with line and column);
- keys: key popularity (uniform, Zipf, hot set) as pure samplers over a seeded random.Random;
- capacity: item sizes and capacity units as DynamoDB counts them;
- operations: each operation of the mix, as written and in its racy read-then-put form;
- load: closed loop (clients, think time) and open loop (Poisson arrivals at a target rate, wrk2's
  coordinated-omission correction);
- pattern: `WorkloadPattern`, the Pattern a workload runs as (variants "as-written" and "racy"), with its spec
  carried in the run's options as JSON so client processes and cluster workers rebuild it;
- invariants: the generic invariants a workload may declare;
- report: per-operation figures, hottest keys and capacity units from a run's History;
- sweep: a workload at several client counts or rates in both forms, for `workload sweep` and the dashboard;
- docs: `python -m engine.workloads.docs` writes docs/workloads.md from the schema.

It may import engine's shared modules (calls, history, patterns.base, options, tables, errors, run_config) but
nothing imports it except `engine.patterns.get_pattern` (lazily, for the name "workload"), the workload
command, the dashboard's "Your workload" page and their tests, so the engine runs the same without it.
"""
