"""Pooled suggestions: several retrievers' candidates for a query, fused by reciprocal rank.

`pool.suggest(ws, query)` is what `curator suggest` and the review card use; `dense.py`
makes and searches passage embeddings; `store.py` is the one module here that issues SQL.
"""
