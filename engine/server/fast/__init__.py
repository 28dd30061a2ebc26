"""The fast path: moto's handler called directly (`handler`, `short_way`), and the hot calls (plain GetItem,
PutItem, counters' UpdateItem ADD) answered with fewer Python calls and the same bytes. Its correctness guard is
tests/server's equivalence check (both paths give the same answers). May import faithful's leaf checks and wire.
"""
