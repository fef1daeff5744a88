"""The workspace database, one module per group of tables.

`base.Storage` holds the connection, its lock and `transaction()`; `corpus`, `search`
and `queue` each add the methods over their tables. `curator.workspace.Workspace`
combines them; a feature with tables of its own (generate, logs, triage) keeps their
SQL in its own storage module, writing under `ws.lock` or in `ws.transaction()`.
"""
