// Interoperability check of extentdb's TDS server with Microsoft's JDBC driver (mssql-jdbc).
//
// Usage: java -cp target/classes:target/dependency/* Interop HOST PORT PASSWORD EXAMPLE_SQL plain|tls
//
// It connects (encrypt=false, or encrypt=true;trustServerCertificate=true), runs the seed
// example end to end (batches split at GO lines), a parameterised query (PreparedStatement),
// a transaction that rolls back, and checks that an error carries SQL Server's number (208).

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

public class Interop {
    static void fail(String message) {
        System.out.println(message);
        System.exit(1);
    }

    static List<String> batches(String path) throws Exception {
        List<String> out = new ArrayList<>();
        StringBuilder batch = new StringBuilder();
        for (String line : Files.readAllLines(Path.of(path))) {
            if (line.trim().equalsIgnoreCase("GO")) {
                if (!batch.toString().isBlank()) out.add(batch.toString());
                batch.setLength(0);
            } else {
                batch.append(line).append('\n');
            }
        }
        if (!batch.toString().isBlank()) out.add(batch.toString());
        return out;
    }

    public static void main(String[] args) throws Exception {
        String host = args[0], port = args[1], password = args[2], example = args[3], mode = args[4];
        String encrypt = mode.equals("tls") ? "encrypt=true;trustServerCertificate=true" : "encrypt=false";
        String url = "jdbc:sqlserver://" + host + ":" + port + ";databaseName=master;user=sa;password=" + password + ";" + encrypt;
        try (Connection conn = DriverManager.getConnection(url)) {
            System.out.println("jdbc " + mode + ": connected");
            int rowsSeen = 0;
            try (Statement statement = conn.createStatement()) {
                for (String batch : batches(example)) {
                    boolean isResult = statement.execute(batch);
                    while (true) {
                        if (isResult) {
                            try (ResultSet rs = statement.getResultSet()) {
                                while (rs.next()) rowsSeen++;
                            }
                        } else if (statement.getUpdateCount() == -1) {
                            break;
                        }
                        isResult = statement.getMoreResults();
                    }
                }
            }
            if (rowsSeen == 0) fail("the example returned no rows");
            System.out.println("jdbc " + mode + ": example ran, " + rowsSeen + " result rows");
            try (PreparedStatement query = conn.prepareStatement("SELECT ? + 1 AS n, ? AS s")) {
                query.setInt(1, 41);
                query.setString(2, "abc");
                try (ResultSet rs = query.executeQuery()) {
                    if (!rs.next() || rs.getInt(1) != 42 || !"abc".equals(rs.getString(2))) fail("parameterised query");
                }
            }
            System.out.println("jdbc " + mode + ": parameterised query ok");
            try (Statement statement = conn.createStatement()) {
                statement.execute("USE master; IF OBJECT_ID('interop_jdbc') IS NULL CREATE TABLE interop_jdbc (id int PRIMARY KEY); DELETE FROM interop_jdbc");
            }
            conn.setAutoCommit(false);
            try (PreparedStatement insert = conn.prepareStatement("INSERT interop_jdbc VALUES (?)")) {
                insert.setInt(1, 1);
                insert.executeUpdate();
            }
            conn.rollback();
            conn.setAutoCommit(true);
            try (Statement statement = conn.createStatement(); ResultSet rs = statement.executeQuery("SELECT COUNT(*) FROM interop_jdbc")) {
                if (!rs.next() || rs.getInt(1) != 0) fail("rows after rollback");
            }
            System.out.println("jdbc " + mode + ": rollback ok");
            try (Statement statement = conn.createStatement()) {
                statement.executeQuery("SELECT * FROM no_such_table");
                fail("no error for a missing table");
            } catch (SQLException error) {
                if (error.getErrorCode() != 208) fail("error " + error.getErrorCode() + ": " + error.getMessage());
            }
            System.out.println("jdbc " + mode + ": error 208 ok");
        }
    }
}
