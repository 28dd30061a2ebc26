"""The workload file's schema: pydantic models with every field's meaning, its caps, and the parser that turns
YAML text into a `Workload` or a list of problems, one per field, each naming the field and the fix.

What lives here: `limits` (the caps), `base` (the models' strict base and the field-path message of a model-level
check), `table`, `operations` (the mix's operation types, their key popularity and retry policy), `workload` (the
load, the whole file, and which invariants a mix allows) and `parsing` (`parse`, `load`, `from_json`, and
`WorkloadInvalid` with one message per problem)."""
