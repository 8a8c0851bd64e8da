"""Renderers turn reports into text, JSON or other formats. Checks never format text."""
