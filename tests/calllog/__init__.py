"""The call-log format against the DynamoDB patterns guide (seed 000), byte for byte: `seed_blocks` holds every
block copied verbatim from the seed with the boto3 keyword arguments that produce it; `test_calllog` checks them."""
