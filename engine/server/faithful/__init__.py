"""DynamoDB's rules that moto lacks or breaks, applied to every request in both profiles: `app` (the WSGI
middleware that runs them, under one lock), request shapes and limits, key and attribute value checks, number
arithmetic, transactions undone by item, UPDATED_NEW/OLD answers. May import fast/ and simulated/ (which it
calls) and wire; fast/ and simulated/ never import app.
"""
