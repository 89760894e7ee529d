"""Shared fixtures: a throwaway PostgreSQL cluster, started once per test session."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count

import pytest
from pg_cluster import MISSING, PostgresCluster, find_bindir

_databases = count()


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A running cluster; tests are skipped, saying why, only when PostgreSQL is not installed."""
    bindir = find_bindir()
    if bindir is None:
        pytest.skip(MISSING)
    cluster = PostgresCluster(bindir).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """The URL of a new, empty database for this test."""
    return postgres_cluster.create_database(f"test_{next(_databases)}")
