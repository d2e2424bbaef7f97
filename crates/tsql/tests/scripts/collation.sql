-- The default collation (SQL_Latin1_General_CP1_CI_AS) as users meet it: strings compare
-- case-insensitively and ignore trailing spaces, in expressions and in indexes alike, so a
-- unique key holds one of 'apple' and 'APPLE', and a seek for either finds the other.
SELECT SERVERPROPERTY('Collation') AS server_collation,
       DATABASEPROPERTYEX(DB_NAME(), 'Collation') AS database_collation;
SELECT CASE WHEN 'abc' = 'ABC' THEN 'equal' ELSE 'different' END AS case_blind,
       CASE WHEN 'abc' = 'abc   ' THEN 'equal' ELSE 'different' END AS trailing_blind,
       CASE WHEN ' abc' = 'abc' THEN 'equal' ELSE 'different' END AS leading_counts;
GO
CREATE TABLE fruit (name varchar(20) PRIMARY KEY, colour varchar(10));
INSERT fruit VALUES ('apple', 'green'), ('Banana', 'yellow'), ('cherry', 'red');
INSERT fruit VALUES ('APPLE', 'red');
GO
INSERT fruit VALUES ('cherry  ', 'dark');
GO
SELECT name FROM fruit WHERE name = 'APPLE';
SELECT name FROM fruit WHERE name = 'banana  ';
SELECT name FROM fruit WHERE name BETWEEN 'B' AND 'CZ' ORDER BY name;
SELECT name FROM fruit ORDER BY name DESC;
GO
CREATE TABLE basket (fruit_name varchar(20), qty int);
CREATE INDEX ix_fruit_name ON basket (fruit_name);
INSERT basket VALUES ('Apple', 3), ('APPLE', 2), ('banana', 1), ('Cherry', 5);
SELECT fruit_name, qty FROM basket WHERE fruit_name = 'apple' ORDER BY qty;
SELECT f.name, SUM(b.qty) AS total FROM fruit AS f JOIN basket AS b ON b.fruit_name = f.name
GROUP BY f.name ORDER BY f.name;
SELECT COUNT(DISTINCT fruit_name) AS distinct_names FROM basket;
SELECT UPPER(fruit_name) AS name, COUNT(*) AS n FROM basket GROUP BY UPPER(fruit_name) ORDER BY name;
CREATE UNIQUE INDEX ux_colour ON fruit (colour);
UPDATE fruit SET colour = 'RED' WHERE name = 'apple';
GO
DBCC CHECKTABLE ('basket') WITH NO_INFOMSGS;
DROP TABLE basket;
DROP TABLE fruit;
GO
