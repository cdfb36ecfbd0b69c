"""The Diagnostics view: explain the gap to a reference with ranked findings."""
