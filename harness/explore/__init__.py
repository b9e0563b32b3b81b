"""Explore: combinations of a fault space past the certificate, run within a budget, kept in a coverage store."""
