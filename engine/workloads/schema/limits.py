"""The workload file's caps: DynamoDB's own limits, and what one machine runs in reasonable time."""

MAX_ITEM_BYTES = 400 * 1024  # DynamoDB's item size limit, names and values together
MAX_TRANSACT_ITEMS = 100  # TransactWriteItems / TransactGetItems
MAX_BATCH_ITEMS = 25  # BatchWriteItem
MAX_ITEMS = 100_000  # items written at the start: set-up time grows with them
MAX_CLIENTS = 256  # as the run's default thread cap
MAX_RATE = 20_000.0  # requests per second: far past what one machine's Python sends
MAX_OPS_PER_CLIENT = 1_000_000
MAX_DURATION_S = 3600.0
MAX_THINK_MS = 60_000.0
MAX_ATTEMPTS = 50
MAX_BACKOFF_MS = 10_000.0
MAX_FILE_CHARS = 64 * 1024  # a workload file is a page of YAML: a dashboard editor's paste is refused past it
