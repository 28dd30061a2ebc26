"""Every expected block below is copied verbatim from the seed; the params are the boto3 keyword arguments the
seed's code would pass to produce it."""

from decimal import Decimal

T22, T23, T24 = "p22-conditional-writes", "p23-optimistic-locking", "p24-atomic-counters"
T25, T26, T27 = "p25-transactions", "p26-unique-constraints", "p27-idempotency-keys"
T28, T29 = "p28-gsi-consistency", "p29-distributed-locking"

ALICE = {"PK": "USER#alice", "SK": "PROFILE"}
LOCK = {"PK": "LOCK#invoice-run", "SK": "LOCK"}


def spend(amount):
    # the seed's `spend` lambda (pattern 22)
    return dict(
        TableName=T22,
        Key=ALICE,
        UpdateExpression="SET credits = credits - :a",
        ConditionExpression="credits >= :a AND #s = :active",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":a": amount, ":active": "active"},
    )


def place_order(order_id, qty):
    # pattern 25; ClientRequestToken is passed by the seed's code but not shown in its log
    return dict(
        TransactItems=[
            {
                "Put": {
                    "TableName": T25,
                    "Item": {"PK": "USER#alice", "SK": f"ORDER#{order_id}", "qty": qty},
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            },
            {
                "Update": {
                    "TableName": T25,
                    "Key": {"PK": "PRODUCT#widget", "SK": "STOCK"},
                    "UpdateExpression": "SET stock = stock - :q",
                    "ConditionExpression": "stock >= :q",
                    "ExpressionAttributeValues": {":q": qty},
                }
            },
            {
                "Update": {
                    "TableName": T25,
                    "Key": ALICE,
                    "UpdateExpression": "ADD orderCount :one",
                    "ExpressionAttributeValues": {":one": 1},
                }
            },
        ],
        ClientRequestToken=f"place-order-{order_id}",
    )


def place_order_block(order_id, qty):
    # the seed's block for place_order(order_id, qty), both orders of pattern 25 in one
    return f"""\
>>> TransactWriteItems
    - Put p25-transactions
        item:       {{PK: 'USER#alice', SK: 'ORDER#{order_id}', qty: {qty}}}
        condition:  attribute_not_exists(PK)
    - Update p25-transactions
        key:        {{PK: 'PRODUCT#widget', SK: 'STOCK'}}
        condition:  stock >= {qty}
        update:     SET stock = stock - {qty}
    - Update p25-transactions
        key:        {{PK: 'USER#alice', SK: 'PROFILE'}}
        update:     ADD orderCount 1"""


def change_email(old, new):
    # pattern 26: drop the old sentinel, claim the new one, and move the profile only if it still has `old`
    return dict(
        TransactItems=[
            {"Delete": {"TableName": T26, "Key": {"PK": f"EMAIL#{old}", "SK": "EMAIL"}}},
            {
                "Put": {
                    "TableName": T26,
                    "Item": {"PK": f"EMAIL#{new}", "SK": "EMAIL", "user_id": "bob"},
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            },
            {
                "Update": {
                    "TableName": T26,
                    "Key": {"PK": "USER#bob", "SK": "PROFILE"},
                    "UpdateExpression": "SET email = :new",
                    "ConditionExpression": "email = :old",
                    "ExpressionAttributeValues": {":new": new, ":old": old},
                }
            },
        ]
    )


def change_email_block(old, new):
    # the seed's block for change_email(old, new), both changes of pattern 26 in one
    return f"""\
>>> TransactWriteItems
    - Delete p26-unique-constraints
        key:        {{PK: 'EMAIL#{old}', SK: 'EMAIL'}}
    - Put p26-unique-constraints
        item:       {{PK: 'EMAIL#{new}', SK: 'EMAIL', user_id: 'bob'}}
        condition:  attribute_not_exists(PK)
    - Update p26-unique-constraints
        key:        {{PK: 'USER#bob', SK: 'PROFILE'}}
        condition:  email = '{old}'
        update:     SET email = '{new}'"""


def acquire(owner, expires, now):
    return dict(
        TableName=T29,
        Item={**LOCK, "owner": owner, "expiresAt": expires},
        ConditionExpression="attribute_not_exists(PK) OR expiresAt < :now",
        ExpressionAttributeValues={":now": now},
    )


def release(owner):
    return dict(
        TableName=T29,
        Key=LOCK,
        ConditionExpression="#o = :me",
        ExpressionAttributeNames={"#o": "owner"},
        ExpressionAttributeValues={":me": owner},
    )


def claim(request_id):
    return dict(
        TableName=T27,
        Item={"PK": f"IDEMPOTENCY#{request_id}", "SK": "RECORD", "status": "IN_PROGRESS", "expiresAt": 1792583312},
        ConditionExpression="attribute_not_exists(PK)",
    )


CASES = {
    "22-create": (
        "PutItem",
        dict(
            TableName=T22,
            Item={**ALICE, "name": "Alice", "credits": 10, "status": "active"},
            ConditionExpression="attribute_not_exists(PK)",
        ),
        """\
>>> PutItem p22-conditional-writes
    item:       {PK: 'USER#alice', SK: 'PROFILE', name: 'Alice', credits: 10, status: 'active'}
    condition:  attribute_not_exists(PK)""",
    ),
    "22-update-missing": (
        "UpdateItem",
        dict(
            TableName=T22,
            Key={"PK": "USER#bob", "SK": "PROFILE"},
            UpdateExpression="SET #n = :n",
            ConditionExpression="attribute_exists(PK)",
            ExpressionAttributeNames={"#n": "name"},
            ExpressionAttributeValues={":n": "Bob"},
        ),
        """\
>>> UpdateItem p22-conditional-writes
    key:        {PK: 'USER#bob', SK: 'PROFILE'}
    condition:  attribute_exists(PK)
    update:     SET name = 'Bob'""",
    ),
    "22-spend": (
        "UpdateItem",
        spend(7),
        """\
>>> UpdateItem p22-conditional-writes
    key:        {PK: 'USER#alice', SK: 'PROFILE'}
    condition:  credits >= 7 AND status = 'active'
    update:     SET credits = credits - 7""",
    ),
    "22-all-old": (
        "UpdateItem",
        dict(
            TableName=T22,
            Key=ALICE,
            UpdateExpression="SET credits = credits - :a",
            ConditionExpression="credits >= :a",
            ExpressionAttributeValues={":a": 7},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
        """\
>>> UpdateItem p22-conditional-writes
    key:        {PK: 'USER#alice', SK: 'PROFILE'}
    condition:  credits >= 7
    update:     SET credits = credits - 7
    ReturnValuesOnConditionCheckFailure: ALL_OLD""",
    ),
    # the item comes back from get_item, so its numbers are Decimals and SK comes first
    "23-put-version": (
        "PutItem",
        dict(
            TableName=T23,
            Item={"SK": "META", "PK": "ACCOUNT#a1", "balance": Decimal("150"), "version": Decimal("2")},
            ConditionExpression="version = :v",
            ExpressionAttributeValues={":v": Decimal("1")},
        ),
        """\
>>> PutItem p23-optimistic-locking
    item:       {SK: 'META', PK: 'ACCOUNT#a1', balance: 150, version: 2}
    condition:  version = 1""",
    ),
    "23-get": (
        "GetItem",
        dict(TableName=T23, Key={"PK": "ACCOUNT#a1", "SK": "META"}, ConsistentRead=False),
        """\
>>> GetItem p23-optimistic-locking
    key:        {PK: 'ACCOUNT#a1', SK: 'META'}""",
    ),
    "23-get-consistent": (
        "GetItem",
        dict(TableName=T23, Key={"PK": "ACCOUNT#a1", "SK": "META"}, ConsistentRead=True),
        """\
>>> GetItem p23-optimistic-locking
    key:        {PK: 'ACCOUNT#a1', SK: 'META'}
    ConsistentRead: True""",
    ),
    "24-add": (
        "UpdateItem",
        dict(
            TableName=T24,
            Key={"PK": "POST#hello-world", "SK": "STATS"},
            UpdateExpression="ADD #v :one",
            ExpressionAttributeNames={"#v": "views"},
            ExpressionAttributeValues={":one": 1},
        ),
        """\
>>> UpdateItem p24-atomic-counters
    key:        {PK: 'POST#hello-world', SK: 'STATS'}
    update:     ADD views 1""",
    ),
    "24-racy-put": (
        "PutItem",
        dict(TableName=T24, Item={"PK": "POST#hello-world", "SK": "STATS", "views": Decimal("5") + 1}),
        """\
>>> PutItem p24-atomic-counters
    item:       {PK: 'POST#hello-world', SK: 'STATS', views: 6}""",
    ),
    "24-sequence": (
        "UpdateItem",
        dict(
            TableName=T24,
            Key={"PK": "SEQUENCE#invoice", "SK": "COUNTER"},
            UpdateExpression="ADD #n :one",
            ExpressionAttributeNames={"#n": "next"},
            ExpressionAttributeValues={":one": 1},
            ReturnValues="UPDATED_NEW",
        ),
        """\
>>> UpdateItem p24-atomic-counters
    key:        {PK: 'SEQUENCE#invoice', SK: 'COUNTER'}
    update:     ADD next 1
    ReturnValues: UPDATED_NEW""",
    ),
    "24-ticket-floor": (
        "UpdateItem",
        dict(
            TableName=T24,
            Key={"PK": "TICKETS#gig", "SK": "COUNTER"},
            UpdateExpression="ADD remaining :neg",
            ConditionExpression="remaining > :zero",
            ExpressionAttributeValues={":neg": -1, ":zero": 0},
        ),
        """\
>>> UpdateItem p24-atomic-counters
    key:        {PK: 'TICKETS#gig', SK: 'COUNTER'}
    condition:  remaining > 0
    update:     ADD remaining -1""",
    ),
    "25-order-o1": (
        "TransactWriteItems",
        place_order("o1", 2),
        place_order_block("o1", 2),
    ),
    "25-order-o2": (
        "TransactWriteItems",
        place_order("o2", 5),
        place_order_block("o2", 5),
    ),
    "25-transact-get": (
        "TransactGetItems",
        dict(
            TransactItems=[
                {"Get": {"TableName": T25, "Key": {"PK": "PRODUCT#widget", "SK": "STOCK"}}},
                {"Get": {"TableName": T25, "Key": ALICE}},
                {"Get": {"TableName": T25, "Key": {"PK": "USER#alice", "SK": "ORDER#o2"}}},
            ]
        ),
        """\
>>> TransactGetItems
    - Get p25-transactions
        key:        {PK: 'PRODUCT#widget', SK: 'STOCK'}
    - Get p25-transactions
        key:        {PK: 'USER#alice', SK: 'PROFILE'}
    - Get p25-transactions
        key:        {PK: 'USER#alice', SK: 'ORDER#o2'}""",
    ),
    "26-signup-collision": (
        "TransactWriteItems",
        dict(
            TransactItems=[
                {
                    "Put": {
                        "TableName": T26,
                        "Item": {"PK": "USER#bob", "SK": "PROFILE", "email": "A@x.com"},
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                },
                {
                    "Put": {
                        "TableName": T26,
                        "Item": {"PK": f"EMAIL#{'A@x.com'.lower()}", "SK": "EMAIL", "user_id": "bob"},
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                },
            ]
        ),
        """\
>>> TransactWriteItems
    - Put p26-unique-constraints
        item:       {PK: 'USER#bob', SK: 'PROFILE', email: 'A@x.com'}
        condition:  attribute_not_exists(PK)
    - Put p26-unique-constraints
        item:       {PK: 'EMAIL#a@x.com', SK: 'EMAIL', user_id: 'bob'}
        condition:  attribute_not_exists(PK)""",
    ),
    "26-change-email-taken": (
        "TransactWriteItems",
        change_email("b@x.com", "a@x.com"),
        change_email_block("b@x.com", "a@x.com"),
    ),
    "26-change-email": (
        "TransactWriteItems",
        change_email("b@x.com", "bob@x.com"),
        change_email_block("b@x.com", "bob@x.com"),
    ),
    "26-scan": ("Scan", dict(TableName=T26), ">>> Scan p26-unique-constraints"),
    "27-claim": (
        "PutItem",
        claim("req-123"),
        """\
>>> PutItem p27-idempotency-keys
    item:       {PK: 'IDEMPOTENCY#req-123', SK: 'RECORD', status: 'IN_PROGRESS', expiresAt: 1792583312}
    condition:  attribute_not_exists(PK)""",
    ),
    "27-complete": (
        "UpdateItem",
        dict(
            TableName=T27,
            Key={"PK": "IDEMPOTENCY#req-123", "SK": "RECORD"},
            UpdateExpression="SET #s = :done, #r = :resp",
            ExpressionAttributeNames={"#s": "status", "#r": "response"},
            ExpressionAttributeValues={":done": "COMPLETED", ":resp": {"chargeId": "ch_1", "amount": 50}},
        ),
        """\
>>> UpdateItem p27-idempotency-keys
    key:        {PK: 'IDEMPOTENCY#req-123', SK: 'RECORD'}
    update:     SET status = 'COMPLETED', response = {chargeId: 'ch_1', amount: 50}""",
    ),
    "28-query-consistent-gsi": (
        "Query",
        dict(
            TableName=T28,
            ConsistentRead=True,
            IndexName="GSI1",
            KeyConditionExpression="GSI1PK = :v",
            ExpressionAttributeValues={":v": "EMAIL#a@x.com"},
        ),
        """\
>>> Query p28-gsi-consistency
    key:        GSI1PK = 'EMAIL#a@x.com'
    IndexName:  GSI1
    ConsistentRead: True""",
    ),
    "28-query-gsi": (
        "Query",
        dict(
            TableName=T28,
            IndexName="GSI1",
            KeyConditionExpression="#pk = :v",
            ExpressionAttributeNames={"#pk": "GSI1PK"},
            ExpressionAttributeValues={":v": "EMAIL#a@x.com"},
        ),
        """\
>>> Query p28-gsi-consistency
    key:        GSI1PK = 'EMAIL#a@x.com'
    IndexName:  GSI1""",
    ),
    "29-acquire": (
        "PutItem",
        acquire("worker-A", 1792496915, 1792496913),
        """\
>>> PutItem p29-distributed-locking
    item:       {PK: 'LOCK#invoice-run', SK: 'LOCK', owner: 'worker-A', expiresAt: 1792496915}
    condition:  attribute_not_exists(PK) OR expiresAt < 1792496913""",
    ),
    "29-heartbeat": (
        "UpdateItem",
        dict(
            TableName=T29,
            Key=LOCK,
            UpdateExpression="SET expiresAt = :later",
            ConditionExpression="#o = :me",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":later": 1792496915, ":me": "worker-A"},
        ),
        """\
>>> UpdateItem p29-distributed-locking
    key:        {PK: 'LOCK#invoice-run', SK: 'LOCK'}
    condition:  owner = 'worker-A'
    update:     SET expiresAt = 1792496915""",
    ),
    "29-zombie-release": (
        "DeleteItem",
        release("worker-B"),
        """\
>>> DeleteItem p29-distributed-locking
    key:        {PK: 'LOCK#invoice-run', SK: 'LOCK'}
    condition:  owner = 'worker-B'""",
    ),
}
