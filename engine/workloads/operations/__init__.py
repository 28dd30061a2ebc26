"""Each operation of a workload's mix, as written and in its racy form, every call through `ctx.call`.

Every item carries `version`, `changes` (how many counted changes were applied to it: the invariants' ground
truth), `balance` (what transfers move), `counter` (what ADD adds to), `data` and a `pad` bringing it to the
declared size. Every counted write raises `version` too, so a version-checked write sees any change in between. A counted write adds 1 to `changes` in the same request; its racy form reads the item and puts it
back with `changes` + 1 and no condition, so two clients that read the same item lose one change.

Each call's detail says which operation it belongs to (`o`, per client), its step (read or write), its try, the
capacity units it consumed (`wcu`/`rcu`), the item keys it changed (`items`) and, on the operation's first call,
how late it started after its scheduled arrival (`late_ms`).

What lives here: `layout` (where a key rank lives and what its item holds, the mix's weighted choice), `op_run`
(one operation of one client, and the opening round's barrier), `reads`, `writes` (single-item writes, counted or
not), `transfers` (TransactWriteItems and its racy form) and `dispatch` (`run_operation`, to the right one)."""
