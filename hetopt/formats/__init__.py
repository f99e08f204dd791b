"""Readers of standard benchmark formats (FJSP, Gavel traces, ...)."""
