"""Requests a hostile or careless client sends: each kind gets DynamoDB's 400 and one-line message, never a 500
or silence, nothing of it is stored, and the server answers the next request.

Raw HTTP (boto3 would refuse most of these before sending them). The expression kinds are also tried with
random expressions (hypothesis, derandomized: the same examples on every run).

What lives here: `raw` (one request sent as raw HTTP, and the checks every test makes of the answer and of the
server after it), the fixtures (conftest: the session's embedded server, and a table with one item), and a test
module for each kind: expressions, bodies (invalid Unicode, deep nesting), the HTTP head, DynamoDB's own rules,
requests broken or past DynamoDB's limits (`test_bad_requests`, with helpers of its own), and every top-level
member of every operation's input shape given a wrong value (`test_request_shapes`).
"""
