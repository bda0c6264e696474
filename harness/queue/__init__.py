"""Runs past one machine: batches of a stored run (suite or matrix) queued as procrastinate
tasks on PostgreSQL, the workers that execute them and the sweep that recovers stalled
ones (``batches``).
"""
