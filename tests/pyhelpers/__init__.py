"""Helpers shared by the Python test suites under tests/ (imported by their conftest.py)."""
