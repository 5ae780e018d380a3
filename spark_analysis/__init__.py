"""PySpark jobs over run directories (arrives with the analysis issue)."""
