"""Tests that talk to real parts (HTTP servers) on loopback."""
