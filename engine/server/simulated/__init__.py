"""The aws-like profile's model of DynamoDB under contention. Everything here is SIMULATED; profile.py has the
knobs, and docs/aws-like-model.md every default's source and what the model leaves out. Tables of the exact
profile never reach it.

What it adds, on top of the server's one request lock (which keeps every request atomic in both profiles), one
module each; model.py runs a request through them:
1. Transaction conflicts (holds.py). Every TransactWriteItems marks its items from prepare until commit or
   release: a committed one for its commit window, a cancelled one (the items it had prepared) for its abort
   window, each drawn per request; its answer leaves after that window. While held, another transaction naming
   the item is cancelled with reason TransactionConflict, and a PutItem, UpdateItem or DeleteItem on it fails
   with TransactionConflictException. A TransactGetItems that overlaps a write on one of its items is cancelled
   when its answer is due. Nothing is half-applied: a refused request is refused before moto sees it.
2. Eventually consistent reads (stale_reads.py). Each write leaves the item's previous image on a lagging copy
   for a lag drawn per write (median `stale_ms`, capped at `stale_cap_ms`); a read without ConsistentRead
   reaches that copy with probability `stale_share`. GSI reads keep their own lag (gsi_lag.py), on by default.
3. Hot partition keys (buckets.py, index_capacity.py). A token bucket per partition key for writes and reads,
   and per index key for the writes a base-table write makes to its indexes: past one, the table mode's
   throttling error with its ThrottlingReasons (refusals.py; in a transaction, reason ThrottlingError).
4. Network time (model.py). Each answer is held back for a lognormal time, outside the lock: the server's loop
   answers others meanwhile (serve.py), so requests overlap as they do on AWS.

BatchWriteItem is not atomic on DynamoDB (batch.py): each put or delete in it is an item-level write of its own,
left out and returned in UnprocessedItems when its item is held or its key is throttled.
"""

from engine.server.simulated.batch import Modelled
from engine.server.simulated.model import AwsLike

__all__ = ["AwsLike", "Modelled"]
