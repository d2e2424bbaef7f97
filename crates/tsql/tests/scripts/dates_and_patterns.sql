-- datetime keeps 1/300 s, rounded as SQL Server rounds it (to .000, .003 or .007; .999 into the
-- next day: .123 was shown .120 before 2026-11-26, since the ticks were truncated).
SELECT CAST('2024-02-09 13:45:10.123' AS DATETIME) AS a, CAST('2024-02-09 13:45:10.002' AS DATETIME) AS b,
       CAST('2024-02-09 13:45:10.005' AS DATETIME) AS c, CAST('2024-02-09 13:45:10.998' AS DATETIME) AS d,
       CAST('2024-02-09 23:59:59.999' AS DATETIME) AS next_day
GO
-- CONVERT's date and time styles (they were ignored).
DECLARE @dt DATETIME = '2024-02-09 13:45:10.123', @d DATE = '2024-02-09', @d2 DATETIME2 = '2024-02-09 08:05:03.1234567'
SELECT CONVERT(VARCHAR(30), @dt, 120) AS s120, CONVERT(VARCHAR(30), @dt, 121) AS s121,
       CONVERT(VARCHAR(10), @d, 103) AS s103, CONVERT(CHAR(8), @d, 112) AS s112,
       CONVERT(VARCHAR(8), @dt, 108) AS s108, CONVERT(VARCHAR(10), @d, 1) AS s1,
       CONVERT(VARCHAR(10), @d, 101) AS s101, CONVERT(VARCHAR(30), @d2, 126) AS s126,
       CONVERT(VARCHAR(30), @d, 23) AS s23
SELECT CONVERT(VARCHAR(30), @dt, 999) AS bad_style
GO
-- LIKE ... ESCAPE: the escaped character is literal (the clause was ignored).
SELECT CASE WHEN 'a%' LIKE 'a!%' ESCAPE '!' THEN 1 ELSE 0 END AS percent_literal,
       CASE WHEN 'ab' LIKE 'a!%' ESCAPE '!' THEN 1 ELSE 0 END AS not_a_wildcard,
       CASE WHEN 'a_b' LIKE '%!_%' ESCAPE '!' THEN 1 ELSE 0 END AS underscore_literal,
       CASE WHEN 'a[b' LIKE 'a![b' ESCAPE '!' THEN 1 ELSE 0 END AS bracket_literal
GO
SELECT CASE WHEN 'a' LIKE 'a' ESCAPE '!!' THEN 1 END AS two_character_escape
GO
