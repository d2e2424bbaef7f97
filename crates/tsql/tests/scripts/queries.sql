-- SELECT: joins, grouping, aggregates, DISTINCT, TOP, subqueries, CASE, LIKE, IN, BETWEEN,
-- UNION, and built-in functions.
CREATE TABLE dept (id INT PRIMARY KEY, name VARCHAR(20))
CREATE TABLE emp (id INT PRIMARY KEY, name VARCHAR(20), dept_id INT, salary INT)
INSERT INTO dept VALUES (1, 'Storage'), (2, 'Log'), (3, 'Empty')
INSERT INTO emp VALUES (1, 'Ann', 1, 100), (2, 'Bo', 1, 80), (3, 'Cy', 2, 90), (4, 'Di', NULL, 70)
GO
SELECT e.name, d.name AS dept FROM emp e INNER JOIN dept d ON d.id = e.dept_id ORDER BY e.id
SELECT d.name, COUNT(e.id) AS people FROM dept d LEFT JOIN emp e ON e.dept_id = d.id GROUP BY d.name ORDER BY d.name
SELECT dept_id, SUM(salary) AS total, AVG(salary) AS average, MIN(salary) AS low, MAX(salary) AS high
FROM emp WHERE dept_id IS NOT NULL GROUP BY dept_id HAVING SUM(salary) > 50 ORDER BY dept_id
SELECT DISTINCT dept_id FROM emp WHERE dept_id IS NOT NULL ORDER BY dept_id
SELECT TOP (2) name FROM emp ORDER BY salary DESC
SELECT name FROM emp WHERE salary > (SELECT AVG(salary) FROM emp) ORDER BY name
SELECT name FROM dept d WHERE EXISTS (SELECT 1 FROM emp e WHERE e.dept_id = d.id) ORDER BY name
SELECT name, CASE WHEN salary >= 90 THEN 'high' ELSE 'normal' END AS band FROM emp WHERE name LIKE '[A-C]%' ORDER BY name
SELECT name FROM emp WHERE id IN (1, 3) OR salary BETWEEN 60 AND 75 ORDER BY id
SELECT name FROM dept UNION SELECT name FROM emp WHERE id = 1 ORDER BY name
GO
SELECT LEN('abc  ') AS len, UPPER('x') AS up, SUBSTRING('storage', 2, 3) AS sub, REPLACE('aXbX', 'x', '-') AS rep,
       CHARINDEX('ra', 'storage') AS pos, LEFT('extent', 3) AS l, RIGHT('extent', 3) AS r, REPLICATE('ab', 3) AS rpt,
       LTRIM('  a') AS lt, REVERSE('abc') AS rev
SELECT ISNULL(NULL, 5) AS isn, COALESCE(NULL, NULL, 7) AS co, NULLIF(3, 3) AS ni, ABS(-4) AS a, ROUND(2.567, 2) AS rnd,
       CAST(7 AS DECIMAL(5,2)) AS dec, CONVERT(VARCHAR(10), 42) AS conv, 7 / 2 AS intdiv, 7 % 3 AS modulo
SELECT DATEADD(day, 10, '2024-01-25') AS later, DATEDIFF(month, '2024-01-31', '2024-03-01') AS months,
       DATEPART(year, '2024-05-06') AS y, DB_NAME() AS db, DB_ID('master') AS dbid
DECLARE @name VARCHAR(20), @n INT
SELECT @name = name, @n = salary FROM emp WHERE id = 2
PRINT @name + ' earns ' + CAST(@n AS VARCHAR(10))
RAISERROR('progress %d of %d', 0, 1, 3, 4) WITH NOWAIT
GO
-- Aggregates inside BETWEEN, IN and LIKE make the query an aggregate query.
SELECT CASE WHEN COUNT(*) BETWEEN 1 AND 100 THEN 'some' ELSE 'none' END AS how_many,
       CASE WHEN MAX(salary) IN (1, 2) THEN 'tiny' ELSE 'normal' END AS top_pay
FROM emp
GO
