"""The peer harness of the TDS issue: the buffer-pool issue's insert load from Python with
pymssql (a C driver), 16 client processes, one INSERT per row, a commit every 1,000 rows,
against a running `extentdb serve`. It prints rows per second over all processes, and, as
the same-run baseline, the rate of one process doing `SELECT 1` round trips.

Usage: python bench/peer_pymssql.py HOST PORT PASSWORD [ROWS_PER_PROCESS] [PROCESSES]
(pip install pymssql==2.4.6; start the server with
 EXTENTDB_SA_PASSWORD=... cargo run --release -p extentdb -- serve --port PORT --dir DIR)
"""
import multiprocessing
import sys
import time

import pymssql


def connect(host, port, password):
    return pymssql.connect(server=host, port=str(port), user="sa", password=password,
                           database="master", autocommit=False, encryption="off")


def worker(args):
    host, port, password, rows = args
    conn = connect(host, port, password)
    cursor = conn.cursor()
    for row in range(1, rows + 1):
        cursor.execute("INSERT dbo.MyBigTable (c1, c2, c3) VALUES (NEWID(), GETDATE(), 'a')")
        if row % 1000 == 0:
            conn.commit()
    conn.commit()
    conn.close()
    return rows


def main():
    host, port, password = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rows = int(sys.argv[4]) if len(sys.argv) > 4 else 2000
    processes = int(sys.argv[5]) if len(sys.argv) > 5 else 16
    conn = connect(host, port, password)
    conn.autocommit(True)
    cursor = conn.cursor()
    cursor.execute("IF OBJECT_ID('dbo.MyBigTable') IS NOT NULL DROP TABLE dbo.MyBigTable")
    cursor.execute("CREATE TABLE dbo.MyBigTable (c1 uniqueidentifier NOT NULL PRIMARY KEY, "
                   "c2 datetime NOT NULL, c3 char(400) NOT NULL)")
    started = time.perf_counter()
    count = 0
    while time.perf_counter() - started < 3:
        cursor.execute("SELECT 1")
        cursor.fetchall()
        count += 1
    select_rate = count / (time.perf_counter() - started)
    conn.close()
    started = time.perf_counter()
    with multiprocessing.Pool(processes) as pool:
        total = sum(pool.map(worker, [(host, port, password, rows)] * processes))
    seconds = time.perf_counter() - started
    print(f"SELECT 1, 1 connection: {select_rate:,.0f}/s")
    print(f"INSERT, {processes} processes, {total} rows: {total / seconds:,.0f} rows/s ({seconds:.1f} s)")


if __name__ == "__main__":
    main()
