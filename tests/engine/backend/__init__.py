"""The backend: where calls go and the guard in front of real AWS (`test_where_calls_go`), and what each kind of
wrong credentials is told, before any request reaches AWS (`test_credentials`)."""
