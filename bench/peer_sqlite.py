"""The SQLite peer of `extentdb bench insert`, re-measured on this machine: seed 001's table
(a GUID clustered key, a datetime and a char(111)), 16 client processes, one INSERT per row
through Python's sqlite3 module, a commit every 1,000 rows, WAL with synchronous=NORMAL (the
configuration of the issue's peer figure, 32 k rows/s). The table is WITHOUT ROWID, so that
the GUID key is the clustered index, as in seed 001; writers take the database's write lock
with BEGIN IMMEDIATE and wait for it (busy timeout 60 s).

Usage: python3 bench/peer_sqlite.py [ROWS] [PROCESSES]   (defaults 160000 and 16; only the
standard library; the database goes in a fresh temporary directory under the current one)
"""
import datetime
import multiprocessing
import os
import sqlite3
import sys
import tempfile
import time
import uuid

BATCH_ROWS = 1000


def worker(args):
    path, rows = args
    conn = sqlite3.connect(path, timeout=60, isolation_level=None)
    conn.execute("PRAGMA synchronous=NORMAL")
    c3 = "a".ljust(111)
    conn.execute("BEGIN IMMEDIATE")
    for row in range(1, rows + 1):
        conn.execute(
            "INSERT INTO MyBigTable (c1, c2, c3) VALUES (?, ?, ?)",
            (uuid.uuid4().bytes, datetime.datetime.now().isoformat(sep=" "), c3),
        )
        if row % BATCH_ROWS == 0:
            conn.execute("COMMIT")
            conn.execute("BEGIN IMMEDIATE")
    conn.execute("COMMIT")
    conn.close()
    return rows


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 160_000
    processes = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    with tempfile.TemporaryDirectory(dir=".") as directory:
        path = os.path.join(directory, "peer.db")
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(
            "CREATE TABLE MyBigTable (c1 BLOB NOT NULL PRIMARY KEY, c2 TEXT NOT NULL, "
            "c3 TEXT NOT NULL) WITHOUT ROWID"
        )
        conn.close()
        started = time.perf_counter()
        with multiprocessing.Pool(processes) as pool:
            total = sum(pool.map(worker, [(path, rows // processes)] * processes))
        seconds = time.perf_counter() - started
    print(f"sqlite: {processes} processes, {total} rows in {seconds:.2f} s = {total / seconds:,.0f} rows/s")


if __name__ == "__main__":
    main()
