"""DynamoDB's rules that moto lacks or breaks, applied to every request in both profiles: `app` (the WSGI
middleware that runs them, under one lock), request shapes and limits, key and attribute value checks,
expression grammar checked before moto reads it, moto's own behaviour patched where DynamoDB's differs
(`moto_fixes/`: number arithmetic, transactions undone by item, UPDATED_NEW/OLD answers, an UpdateItem applied
whole or not at all, the item-size limit), and moto's crashes on a client's mistake answered as DynamoDB's
400 (`mistakes`). May import fast/ and simulated/ (which it calls) and wire; fast/ and simulated/ never import app.
"""
