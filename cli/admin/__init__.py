"""``trawl`` commands that call the scheduler's admin API, one module per group.

Each command takes ``--admin ADDRESS`` (or ``TRAWL_ADMIN_ADDRESS``) to reach a scheduler
anywhere (compose, Kubernetes through a port-forward); without it, the local stack's. The
token and TLS come from :mod:`cli.admin.target`. Each prints a table, or one JSON object
with ``--json``.
"""
