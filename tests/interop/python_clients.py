"""Interoperability check of extentdb's TDS server with real Python SQL Server clients.

Usage: python_clients.py HOST PORT PASSWORD EXAMPLE_SQL CLIENT TLS
  CLIENT: pytds | pymssql;  TLS: plain | tls

For the client it: connects; runs the seed example EXAMPLE_SQL end to end (batches split at
GO lines, as sqlcmd splits them); runs a parameterised query; runs a transaction that rolls
back and checks nothing stayed; and checks that an error carries SQL Server's number (208).
Prints one line per check; exits non-zero at the first failure.
"""
import sys


def batches(path):
    text = open(path, encoding="utf-8").read()
    batch = []
    for line in text.splitlines():
        if line.strip().upper() == "GO":
            if "".join(batch).strip():
                yield "\n".join(batch)
            batch = []
        else:
            batch.append(line)
    if "".join(batch).strip():
        yield "\n".join(batch)


def connect(client, host, port, password, tls):
    if client == "pytds":
        import pytds
        kwargs = {}
        if tls == "tls":
            kwargs = {"cafile": CERT, "validate_host": False}
        return pytds.connect(dsn=host, port=port, user="sa", password=password,
                             database="master", autocommit=False, **kwargs)
    import pymssql
    return pymssql.connect(server=host, port=str(port), user="sa", password=password,
                           database="master", autocommit=False,
                           encryption="require" if tls == "tls" else "off")


def set_autocommit(conn, flag):
    if callable(getattr(conn, "autocommit", None)):
        conn.autocommit(flag)  # pymssql
    else:
        conn.autocommit = flag  # pytds


def error_number(error):
    for name in ("msg_no", "number"):
        if hasattr(error, name):
            return getattr(error, name)
    return error.args[0] if error.args else None


def main():
    global CERT
    host, port, password, example, client, tls = sys.argv[1:7]
    CERT = sys.argv[7] if len(sys.argv) > 7 else None
    port = int(port)
    conn = connect(client, host, port, password, tls)
    print(f"{client} {tls}: connected")
    set_autocommit(conn, True)
    cursor = conn.cursor()
    rows_seen = 0
    for batch in batches(example):
        cursor.execute(batch)
        while True:
            if cursor.description:
                rows_seen += len(cursor.fetchall())
            if not cursor.nextset():
                break
    print(f"{client} {tls}: example ran, {rows_seen} result rows")
    if rows_seen == 0:
        raise SystemExit("the example returned no rows")
    cursor.execute("USE master")
    cursor.execute("SELECT %s + 1 AS n, %s AS s", (41, "abc"))
    row = cursor.fetchone()
    if tuple(row) != (42, "abc"):
        raise SystemExit(f"parameterised query returned {row!r}")
    print(f"{client} {tls}: parameterised query ok")
    cursor.execute("IF OBJECT_ID('interop_t') IS NULL CREATE TABLE interop_t (id int PRIMARY KEY)")
    cursor.execute("DELETE FROM interop_t")
    set_autocommit(conn, False)
    cursor = conn.cursor()
    cursor.execute("INSERT interop_t VALUES (1)")
    cursor.execute("INSERT interop_t VALUES (2)")
    conn.rollback()
    cursor.execute("SELECT COUNT(*) FROM interop_t")
    count = cursor.fetchone()[0]
    conn.commit()
    if count != 0:
        raise SystemExit(f"{count} rows after ROLLBACK")
    print(f"{client} {tls}: rollback ok")
    set_autocommit(conn, True)
    cursor = conn.cursor()
    try:
        cursor.execute("SELECT * FROM no_such_table")
        cursor.fetchall()
        raise SystemExit("no error for a missing table")
    except SystemExit:
        raise
    except Exception as error:  # the client's own error class
        number = error_number(error)
        if number != 208:
            raise SystemExit(f"error number {number!r}: {error}")
    print(f"{client} {tls}: error 208 ok")
    conn.close()


if __name__ == "__main__":
    main()
