-- Results past a type's range are SQL Server's errors, never a wrapped number, a NaN or an
-- infinity (each of these gave one, or panicked, before 2026-11-26).
SELECT ABS(CAST(-2147483648 AS INT)) AS abs_int_min
GO
SELECT ABS(CAST(-9223372036854775808 AS BIGINT)) AS abs_bigint_min
GO
SELECT SQRT(-1) AS sqrt_negative
GO
SELECT LOG(0) AS log_zero
GO
SELECT EXP(1000) AS exp_large
GO
SELECT CAST(1e308 AS FLOAT) * 10 AS float_past_range
GO
SELECT CAST('99999999999999999999999999999999999999' AS DECIMAL(38,0)) * 10 AS numeric_times_10
GO
SELECT CAST('99999999999999999999999999999999999999' AS DECIMAL(38,0)) + 1 AS numeric_plus_1
GO
-- Within range, numerics keep their value and scale.
SELECT CAST(12.5 AS DECIMAL(10,2)) + 3 AS sum_value, CAST(12.5 AS DECIMAL(10,2)) - 20 AS difference
GO
-- Numerics of very different scales compare exactly (10^37 at scale 38 does not fit 128 bits).
SELECT CASE WHEN CAST('10000000000000000000000000000000000000' AS DECIMAL(38,0))
                 > CAST(0.5 AS DECIMAL(38,37)) THEN 'bigger' ELSE 'smaller' END AS compared
GO
SELECT TOP (-1) 1 AS negative_top
GO
DECLARE @n INT = -5
SELECT TOP (@n) name FROM sys.databases
GO
SELECT TOP (0) 1 AS zero_rows
GO
-- SPACE: NULL for a negative count, at most 8,000 spaces.
SELECT SPACE(-3) AS space_negative, DATALENGTH(SPACE(9000)) AS space_9000_bytes
GO
-- DATEADD past 9999-12-31 (or before a type's first day) is 517, named by type; a time wraps.
SELECT DATEADD(day, 2147483647, '2000-01-01') AS day_max_int
GO
SELECT DATEADD(year, -1, CAST('0001-06-01' AS DATE)) AS before_year_1
GO
SELECT DATEADD(month, 1, CAST('9999-12-15' AS DATETIME2)) AS past_9999
GO
SELECT CAST('9999-12-31' AS DATETIME) + 1 AS datetime_plus_day
GO
SELECT DATEADD(hour, 25, CAST('10:00' AS TIME)) AS time_wraps
GO
SELECT CAST(5 AS FLOAT) % 0 AS float_modulo_zero
GO
-- ROUND's third argument truncates; UPPER and LOWER keep a string's length.
SELECT ROUND(123.456, 1, 1) AS truncated, ROUND(123.456, 1) AS rounded,
       ROUND(-123.456, 1, 1) AS truncated_negative, ROUND(1250, -2) AS int_rounded,
       ROUND(CAST(1.5 AS FLOAT), -400) AS far_left
GO
SELECT UPPER(N'ßaé') AS upper_keeps_length, LOWER(N'ÀB') AS lower_text
GO
-- 60 nested parentheses parse; 120 are past the parser's recursion limit (100), 191
-- (deviation: SQL Server's limit is its stack).
SELECT ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))) AS deep
GO
SELECT ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))) AS too_deep
GO
-- A number too long for a string type: an integer is '*' in char and varchar (CAST's
-- documented truncation), error 8115 in nvarchar; a decimal or float is 8115 in any string.
SELECT CAST(345 AS VARCHAR(2)) AS int_to_varchar, CAST(345 AS CHAR(2)) AS int_to_char,
       CONVERT(VARCHAR(1), 10) AS convert_int, CAST(12 AS VARCHAR(2)) AS fits,
       CAST('abcdef' AS VARCHAR(3)) AS string_cut
GO
SELECT CAST(12345 AS NVARCHAR(3)) AS int_to_nvarchar
GO
SELECT CAST(1.5 AS VARCHAR(2)) AS decimal_to_varchar
GO
SELECT CAST(CAST(123.0 AS FLOAT) AS VARCHAR(2)) AS float_to_varchar
GO
