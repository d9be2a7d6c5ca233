"""Widgets: each takes its model and subscribes to its signals."""
