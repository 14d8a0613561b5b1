"""Moved to clients/spark/ (`from kraft.spark import register`); this name still works."""

from clients.spark import register

__all__ = ["register"]
