"""The history of benchmark results (SQLite), and comparisons between them."""
