// Interoperability check of extentdb's TDS server with go-mssqldb.
//
// Usage: go run . HOST PORT PASSWORD EXAMPLE_SQL plain|tls
//
// It connects (encrypt=disable, or encrypt=true with TrustServerCertificate), runs the seed
// example end to end (batches split at GO lines), a parameterised query (sp_executesql), a
// transaction that rolls back, checks that an error carries SQL Server's number (208), and
// cancels a long batch through its context (go-mssqldb sends ATTENTION): the batch must stop
// on the server, not only in the client.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
)

func fail(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
	os.Exit(1)
}

func batches(path string) []string {
	text, err := os.ReadFile(path)
	if err != nil {
		fail("read %s: %v", path, err)
	}
	var out []string
	var batch []string
	for _, line := range strings.Split(string(text), "\n") {
		if strings.EqualFold(strings.TrimSpace(line), "GO") {
			if strings.TrimSpace(strings.Join(batch, "")) != "" {
				out = append(out, strings.Join(batch, "\n"))
			}
			batch = nil
		} else {
			batch = append(batch, line)
		}
	}
	if strings.TrimSpace(strings.Join(batch, "")) != "" {
		out = append(out, strings.Join(batch, "\n"))
	}
	return out
}

func main() {
	host, port, password, example, mode := os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5]
	encrypt := "disable"
	if mode == "tls" {
		encrypt = "true&TrustServerCertificate=true"
	}
	dsn := fmt.Sprintf("sqlserver://sa:%s@%s:%s?database=master&encrypt=%s", password, host, port, encrypt)
	db, err := sql.Open("sqlserver", dsn)
	if err != nil {
		fail("open: %v", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		fail("connect: %v", err)
	}
	fmt.Printf("go-mssqldb %s: connected\n", mode)
	rowsSeen := 0
	for _, batch := range batches(example) {
		rows, err := db.Query(batch)
		if err != nil {
			fail("example batch failed: %v\n%s", err, batch)
		}
		for {
			for rows.Next() {
				rowsSeen++
			}
			if !rows.NextResultSet() {
				break
			}
		}
		if err := rows.Err(); err != nil {
			fail("example rows: %v", err)
		}
		rows.Close()
	}
	if rowsSeen == 0 {
		fail("the example returned no rows")
	}
	fmt.Printf("go-mssqldb %s: example ran, %d result rows\n", mode, rowsSeen)
	var n int64
	var s string
	if err := db.QueryRow("SELECT @p1 + 1 AS n, @p2 AS s", 41, "abc").Scan(&n, &s); err != nil || n != 42 || s != "abc" {
		fail("parameterised query: %v %d %q", err, n, s)
	}
	fmt.Printf("go-mssqldb %s: parameterised query ok\n", mode)
	if _, err := db.Exec("USE master; IF OBJECT_ID('interop_go') IS NULL CREATE TABLE interop_go (id int PRIMARY KEY); DELETE FROM interop_go"); err != nil {
		fail("setup: %v", err)
	}
	tx, err := db.Begin()
	if err != nil {
		fail("begin: %v", err)
	}
	if _, err := tx.Exec("INSERT interop_go VALUES (@p1)", 1); err != nil {
		fail("insert: %v", err)
	}
	if err := tx.Rollback(); err != nil {
		fail("rollback: %v", err)
	}
	var count int
	if err := db.QueryRow("SELECT COUNT(*) FROM interop_go").Scan(&count); err != nil || count != 0 {
		fail("after rollback: %v %d", err, count)
	}
	fmt.Printf("go-mssqldb %s: rollback ok\n", mode)
	_, err = db.Exec("SELECT * FROM no_such_table")
	var sqlErr mssql.Error
	if !errors.As(err, &sqlErr) || sqlErr.Number != 208 {
		fail("error: %v", err)
	}
	fmt.Printf("go-mssqldb %s: error 208 ok\n", mode)
	cancelLongBatch(db, mode)
}

// cancelLongBatch runs a loop of minutes with a 300 ms context deadline, then checks on a
// fresh connection that no request of another session is still running on the server.
func cancelLongBatch(db *sql.DB, mode string) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, err := db.ExecContext(ctx, "DECLARE @i bigint = 0; WHILE @i < 99000000 SET @i += 1")
	if err == nil {
		fail("cancel: the loop finished")
	}
	// go-mssqldb returns once the server acknowledges the ATTENTION (DONE_ATTN), which it
	// sends after the batch stops: minutes if the ATTENTION did not stop it.
	if waited := time.Since(started); waited > 10*time.Second {
		fail("cancel: the server answered the ATTENTION after %v", waited)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var running int
		// User requests only: the system sessions' background requests (below 51) always run.
		query := "SELECT COUNT(*) FROM sys.dm_exec_requests WHERE session_id > 50 AND session_id <> @@SPID"
		if err := db.QueryRow(query).Scan(&running); err != nil {
			fail("after cancel: %v", err)
		}
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			fail("cancel: the batch still runs on the server %v after the ATTENTION", time.Since(started))
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("go-mssqldb %s: cancel ok (%v, stopped on the server after %v)\n", mode, err, time.Since(started))
}
