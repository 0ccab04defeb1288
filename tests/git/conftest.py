"""Fixtures for the git tests; helpers live in gitkit so test modules can import them."""

from gitkit import gapp

__all__ = ["gapp"]
