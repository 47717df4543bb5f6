"""The derived SQLite index of a store: the file, its rows, the queries readers ask of it
and the vocabulary of the values it holds. Derived data, never trusted without a check."""
