"""Result exports: one registry of the formats a benchmark, a tune or the dashboard is written in."""
