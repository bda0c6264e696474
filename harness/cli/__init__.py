"""The ``mindledger`` command line: one click group per package, loaded lazily."""
