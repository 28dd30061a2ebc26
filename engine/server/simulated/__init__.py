"""The aws-like profile's model of DynamoDB under contention. Everything here is SIMULATED (profile.py has the
knobs, their defaults and where those come from); tables of the exact profile never reach it.

What it adds, on top of the server's one request lock (which keeps every request atomic in both profiles), one
module each; model.py runs a request through them:
1. Transaction conflicts (holds.py). A committed TransactWriteItems holds every item it names for `commit_ms`,
   and its answer leaves only after that window (DynamoDB's prepare and commit phases). While held, another
   TransactWriteItems or TransactGetItems naming the item is cancelled with reason TransactionConflict, and a
   PutItem, UpdateItem or DeleteItem on it fails with TransactionConflictException. Nothing is half-applied:
   a refused request is refused before moto sees it.
2. Eventually consistent reads (stale_reads.py). Each write remembers the item's previous image for `stale_ms`.
   A GetItem, BatchGetItem, Query or Scan without ConsistentRead is served, with probability `stale_share`, by
   the lagging copy: every item written in the last `stale_ms` shows its image from before those writes. A read
   with ConsistentRead=True never is. (GSI reads keep their own lag, gsi_lag.py.)
3. Hot partition keys (buckets.py). A token bucket per partition key for writes (`write_units`/s) and reads
   (`read_units`/s), holding a tenth of a second's worth (at least a unit; a larger request passes when the
   bucket is full and leaves it in debt): a request past it is answered with
   ProvisionedThroughputExceededException (in a transaction: cancelled with reason ThrottlingError), which
   botocore retries per the run's retry policy. Units: 1 per item written (2 in a transaction), 1 per item
   read with ConsistentRead (0.5 without, 2 in a transaction), as for items up to 1 KB / 4 KB. A Query reads
   one partition: it takes one read's units from its partition key's bucket (as a query reading up to 4 KB
   does; on a global secondary index, from that index's bucket for the key). A Scan is not charged to any key:
   DynamoDB reads a scan's pages partition after partition against the table's capacity, and the model has no
   table-wide ceiling.
4. Network time (model.py). Each request's answer is held back for a time drawn from a lognormal distribution
   (median `latency_ms`, 99th percentile `latency_p99_ms`), outside the lock: the server's loop answers others
   meanwhile (serve.py), so requests overlap as they do on AWS.

BatchWriteItem is not atomic on DynamoDB (batch.py): each put or delete in it is an item-level write of its own.
So each one on an item a transaction holds (TransactionConflict), or past its key's bucket (throttled), is left
out and returned in UnprocessedItems, and the rest are applied; when none could be processed and all for
throughput, the whole request is refused with ProvisionedThroughputExceededException, as DynamoDB documents.

Not modelled: capacity does not depend on item size, a Scan is not throttled, a partition is one partition
key (DynamoDB splits and merges partitions), and only the first table of a request that names several
(a BatchWriteItem or a transaction across tables) gets the model.
"""

from engine.server.simulated.batch import Modelled
from engine.server.simulated.model import AwsLike
from engine.server.simulated.refusals import encode_error

__all__ = ["AwsLike", "Modelled", "encode_error"]
