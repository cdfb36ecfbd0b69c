"""Shipped data (resources/ and profiles/) as they appear inside an installed wheel."""
