"""The bench's Parquet baseline: DuckDB's own PostgreSQL scanner (the postgres extension, loaded
from its PyPI package's folder, no download) writes one table to one Parquet file with zstd, on
the given number of threads.

    duckdb-postgres-scanner.py PG_URL SCHEMA.TABLE OUT.parquet THREADS
"""
import glob
import os
import sys

import duckdb
import duckdb_extension_postgres_scanner

url, table, out, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
extension = glob.glob(os.path.join(os.path.dirname(duckdb_extension_postgres_scanner.__file__), 'extensions', '*', 'postgres_scanner.duckdb_extension'))[0]
con = duckdb.connect(config={'autoinstall_known_extensions': False, 'autoload_known_extensions': False})
con.execute(f"LOAD '{extension}'")
con.execute(f'SET threads = {threads}')
con.execute(f"ATTACH '{url}' AS pg (TYPE postgres, READ_ONLY)")
con.execute(f"COPY (SELECT * FROM pg.{table}) TO '{out}' (FORMAT parquet, COMPRESSION zstd)")
