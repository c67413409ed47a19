"""Shared storage back ends for team deployments: the S3-compatible object store and the PostgreSQL
writer lease.

Owns: remote storage clients. May import: core.
"""
