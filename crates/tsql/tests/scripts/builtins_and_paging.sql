-- OFFSET ... FETCH, the bitwise operators, TRIM, STRING_AGG, INSERT ... EXEC and the string,
-- date, math and session built-ins.
CREATE TABLE t (a int, g int, s varchar(10));
INSERT t VALUES (1, 1, 'b'), (2, 1, 'a'), (3, 2, NULL), (4, 1, 'c'), (5, 3, 'x');
GO
SELECT a FROM t ORDER BY a OFFSET 1 ROWS FETCH NEXT 2 ROWS ONLY;
SELECT a FROM t ORDER BY a DESC OFFSET 3 ROWS;
SELECT a FROM t ORDER BY a OFFSET 10 ROWS;
SELECT a FROM t UNION ALL SELECT a + 10 FROM t ORDER BY 1 DESC OFFSET 2 ROWS FETCH FIRST 3 ROWS ONLY;
SELECT x.a FROM (SELECT a FROM t ORDER BY a OFFSET 3 ROWS) AS x;
GO
DECLARE @page int = 2, @size int = 2;
SELECT a FROM t ORDER BY a OFFSET (@page - 1) * @size ROWS FETCH NEXT @size ROWS ONLY;
SELECT a FROM t ORDER BY a OFFSET 0 ROWS FETCH NEXT (@size + 1) ROWS ONLY;
GO
SELECT a FROM t OFFSET 1 ROWS;
GO
SELECT a FROM t ORDER BY a FETCH NEXT 1 ROWS ONLY;
GO
SELECT TOP (1) a FROM t ORDER BY a OFFSET 1 ROWS;
GO
SELECT a FROM t ORDER BY a OFFSET -1 ROWS;
GO
DECLARE @none int = 0;
SELECT a FROM t ORDER BY a OFFSET 0 ROWS FETCH NEXT @none ROWS ONLY;
GO
SELECT ~5 AS bnot, 5 & 3 AS band, 5 | 3 AS bor, 5 ^ 3 AS bxor, ~CAST(1 AS bit) AS nbit, ~CAST(5 AS tinyint) AS ntiny;
GO
-- & ^ | share + and -'s precedence and go left to right: (6 | 1) + 2, ((1 | 2) ^ 3) & 4;
-- * binds tighter, = looser.
SELECT 6 | 1 + 2 AS or_then_add, 1 | 2 ^ 3 & 4 AS left_to_right, 2 * 3 & 7 AS mul_first, 1 + 2 & 3 AS add_then_and;
SELECT CASE WHEN 6 & 4 = 4 THEN 'set' ELSE 'clear' END AS flag_test;
GO
SELECT 1.5 & 1;
GO
SELECT ~'a';
GO
SELECT '[' + TRIM('  a  ') + ']' AS t1, TRIM('x' FROM 'xxabcxx') AS t2, TRIM(LEADING 'x' FROM 'xxabcxx') AS t3, LTRIM('xxa', 'x') AS l, RTRIM('abyy', 'y') AS r, TRIM(NULL) AS n;
GO
SELECT g, STRING_AGG(s, ', ') AS list FROM t GROUP BY g ORDER BY g;
SELECT STRING_AGG(s, '-') WITHIN GROUP (ORDER BY s DESC) AS descending FROM t;
GO
SELECT CHAR(65) AS c, CHAR(128) AS euro, CHAR(300) AS none, NCHAR(66) AS n, ASCII('A') AS a, ASCII('') AS empty, UNICODE(N'B') AS u;
SELECT STUFF('abcdef', 2, 3, 'XY') AS s1, STUFF('abc', 5, 1, 'X') AS s2, STUFF('abc', 2, 10, NULL) AS s3;
SELECT CONCAT_WS(',', 'a', NULL, 'b') AS cw, CHOOSE(2, 'a', 'b', 'c') AS ch, CHOOSE(4, 'a', 'b', 'c') AS ch_none;
SELECT STR(123.456, 8, 2) AS s1, STR(123.456, 5, 2) AS s2, STR(1234.5, 3) AS s3, STR(-2.5) AS s4;
SELECT PATINDEX('%[0-9]%', 'abc1d2') AS p1, PATINDEX('%xyz%', 'abc') AS p2, PATINDEX('ab%', 'abc') AS p3;
SELECT ISNUMERIC('12.5') AS n1, ISNUMERIC('abc') AS n2, ISNUMERIC('$') AS n3, ISNUMERIC('1e5') AS n4, ISNUMERIC(NULL) AS n5;
SELECT QUOTENAME('a]b') AS q1, QUOTENAME('x', '''') AS q2, QUOTENAME('x', '{') AS q3, QUOTENAME('x', 'z') AS q4;
SELECT PARSENAME('srv.db.[dbo].[my.table]', 1) AS p1, PARSENAME('srv.db.[dbo].[my.table]', 4) AS p4, PARSENAME('dbo.t', 3) AS p3;
SELECT TRANSLATE('2*[3+4]/{7-2}', '[]{}', '()()') AS tr;
GO
SELECT CONCAT_WS(',', 'a');
GO
SELECT TRANSLATE('abc', 'ab', 'x');
GO
SELECT DATEPART(wk, '2024-01-06') AS w1, DATEPART(wk, '2024-01-07') AS w2, DATEPART(isowk, '2024-01-07') AS iso, DATEPART(wk, '2023-12-31') AS w53;
SELECT DATENAME(month, '2024-03-01') AS m, DATENAME(weekday, '2024-03-01') AS w, DATENAME(year, '2024-03-01') AS y;
SELECT DATEDIFF_BIG(ms, '2020-01-01', '2024-01-01') AS big, DATEFROMPARTS(2024, 2, 29) AS d, DATETIMEFROMPARTS(2024, 2, 29, 13, 5, 7, 123) AS dt;
SELECT EOMONTH('2024-01-31', 1) AS e1, EOMONTH('2023-12-15') AS e2, ISDATE('1752-01-01') AS old, ISDATE('2024-01-01') AS ok, ISDATE('nope') AS bad;
GO
SELECT DATEFROMPARTS(2023, 2, 29);
GO
SELECT LOG(8, 2) AS l, DEGREES(PI()) AS d, LOG10(1000) AS l10, SIN(0) AS s, ATN2(0, 1) AS a;
GO
SELECT SCHEMA_NAME() AS s, SCHEMA_ID('dbo') AS sid, SUSER_SNAME() AS login, USER_NAME() AS u, APP_NAME() AS app;
GO
CREATE TABLE #logspace (dbname sysname, log_size_mb float, log_used_pct float, status int);
INSERT #logspace EXEC ('DBCC SQLPERF(LOGSPACE)');
SELECT dbname FROM #logspace ORDER BY dbname;
GO
CREATE TABLE captured (a int, b varchar(10));
GO
CREATE PROCEDURE two_sets AS SELECT 1, 'x' UNION ALL SELECT 2, 'y'; SELECT 3, 'z';
GO
INSERT captured (a, b) EXEC two_sets;
SELECT * FROM captured ORDER BY a;
GO
INSERT captured EXECUTE sp_executesql N'SELECT @n, ''q''', N'@n int', @n = 9;
SELECT COUNT(*) AS n FROM captured;
GO
INSERT captured (a) EXEC two_sets;
GO
CREATE PROCEDURE nests AS INSERT captured EXEC two_sets;
GO
INSERT captured EXEC nests;
GO
INSERT nosuch EXEC two_sets;
GO
-- TOP WITH TIES and PERCENT; DISTINCT, UNION, EXCEPT and INTERSECT; WITH ... INSERT/UPDATE/DELETE.
CREATE TABLE ties (x int, g char(1));
INSERT ties VALUES (1, 'a'), (2, 'a'), (NULL, 'b'), (4, 'b'), (4, 'c');
SELECT TOP (1) WITH TIES x FROM ties ORDER BY x DESC;
SELECT TOP (40) PERCENT x FROM ties ORDER BY x;
SELECT TOP (2) WITH TIES g, x FROM ties ORDER BY g;
SELECT DISTINCT x FROM ties ORDER BY x;
SELECT x FROM ties EXCEPT SELECT 4;
SELECT x FROM ties INTERSECT SELECT 4 UNION SELECT 1;
GO
SELECT TOP (1) WITH TIES x FROM ties;
GO
SELECT TOP (101) PERCENT x FROM ties ORDER BY x;
GO
WITH n AS (SELECT 10 AS i UNION ALL SELECT i + 1 FROM n WHERE i < 14)
INSERT ties (x, g) SELECT i, 'n' FROM n;
WITH low AS (SELECT x FROM ties WHERE x < 3) UPDATE ties SET g = 'l' WHERE x IN (SELECT x FROM low);
WITH high AS (SELECT x FROM ties WHERE x > 12) DELETE FROM ties WHERE x IN (SELECT x FROM high);
SELECT g, COUNT(*) AS n FROM ties GROUP BY g ORDER BY g;
GO
WITH d AS (SELECT x FROM ties) DELETE FROM d WHERE x = 1;
GO
-- GROUP BY (): the grand total, one group even of no rows.
CREATE TABLE grand (a int);
SELECT COUNT(*) AS n FROM grand GROUP BY ();
INSERT grand VALUES (1), (2);
SELECT SUM(a) AS total FROM grand GROUP BY () HAVING SUM(a) > 1;
GO
-- ISNULL takes its first argument's type (the replacement is converted, so truncated or
-- padded); COALESCE takes the wider one.
DECLARE @v VARCHAR(3) = NULL, @i INT = NULL, @c CHAR(5) = NULL;
SELECT ISNULL(@v, 'abcdef') AS isn, LEN(ISNULL(@v, 'abcdef')) AS l, COALESCE(@v, 'abcdef') AS co, ISNULL(@i, 2.7) AS i, '[' + ISNULL(@c, 'x') + ']' AS padded;
CREATE TABLE #n (s VARCHAR(2) NULL);
INSERT #n VALUES (NULL), ('ok');
SELECT ISNULL(s, 'long') AS s FROM #n;
GO
DECLARE @i INT = NULL;
SELECT ISNULL(@i, 'abc');
GO
-- FORMAT: .NET's number and date formats in en-US; a format it cannot apply is NULL.
DECLARE @d DATETIME = '2024-03-05 14:07:09.123', @n DECIMAL(12,3) = 1234567.891;
SELECT FORMAT(@d, 'yyyy-MM-dd HH:mm:ss') AS iso, FORMAT(@d, 'dd/MM/yyyy') AS dmy, FORMAT(@d, 'MMM yyyy') AS month_year, FORMAT(@d, 'D') AS long_date, FORMAT(@d, 'h:mm tt') AS clock;
SELECT FORMAT(@n, 'N2') AS n2, FORMAT(@n, 'N0') AS n0, FORMAT(-12.5, 'C') AS money_neg, FORMAT(0.256, 'P1') AS pct, FORMAT(42, 'D5') AS d5, FORMAT(255, 'X') AS hex, FORMAT(@n, '#,##0.0') AS custom, FORMAT(1.5, 'D') AS bad_format, FORMAT(NULL, 'N2') AS null_value;
GO
SELECT FORMAT(1, 'N', 'de-DE');
GO
SELECT FORMAT('2024-01-01', 'yyyy');
GO
-- DATALENGTH counts the bytes SQL Server stores: two per character in nchar and nvarchar
-- (literals N'...' included), one in char and varchar, and a fixed type's size in the record.
CREATE TABLE #dl (n NVARCHAR(10), nc NCHAR(4), v VARCHAR(10), c CHAR(3), d DECIMAL(5,2), big DECIMAL(38,0), t TIME(2), dt2 DATETIME2(7), dd DATE, b BIT);
INSERT #dl VALUES (N'héllo', N'x', 'héllo', 'y', 1.5, 1, '10:00', '2024-01-01', '2024-01-01', 1);
SELECT DATALENGTH(n) AS n, DATALENGTH(nc) AS nc, DATALENGTH(v) AS v, DATALENGTH(c) AS c, DATALENGTH(d) AS d, DATALENGTH(big) AS big, DATALENGTH(t) AS t, DATALENGTH(dt2) AS dt2, DATALENGTH(dd) AS dd, DATALENGTH(b) AS b FROM #dl;
DECLARE @nv NVARCHAR(20) = N'abc';
SELECT DATALENGTH(N'abc') AS n_literal, DATALENGTH('abc') AS literal, DATALENGTH(@nv) AS n_variable, DATALENGTH(CAST(N'ab' AS NCHAR(5))) AS n_cast, DATALENGTH(CAST(NULL AS NVARCHAR(3))) AS null_value;
GO
