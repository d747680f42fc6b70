import Storage

/// What of user `id` is left in the SQLite file at `path`: each table and column, with a
/// count, where a row holds one of `texts` (case-insensitive, anywhere in the value), a JSON
/// `"user_id":id`, or `id` itself in a column of `userColumns` (`column` or `table.column`).
/// `except` keeps rows out of a table's count by an SQL condition on them.
public func rowsNaming(_ id: Int64, texts: [String], userColumns: Set<String>, except: [String: String] = [:], path: String) throws -> [String] {
    let db = try Database(path: path)
    var found: [String] = []
    // sqlite_sequence holds counters, not rows of anyone.
    let tables = try db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .decode("name", as: String.self)
    for table in tables {
        for column in try db.query("SELECT name FROM pragma_table_info(?)", table).decode("name", as: String.self) {
            let value = "CAST(\"\(column)\" AS TEXT)"
            var conditions = texts.map { _ in "instr(lower(\(value)), ?) > 0" } + ["\(value) LIKE ?", "\(value) LIKE ?"]
            var arguments: [(any SQLBindable)?] = texts.map { $0.lowercased() } + [#"%"user_id":\#(id),%"#, #"%"user_id":\#(id)}%"#]
            if userColumns.contains(column) || userColumns.contains("\(table).\(column)") {
                conditions.append("\"\(column)\" = ?")
                arguments.append(id)
            }
            var sql = "SELECT count(*) FROM \"\(table)\" WHERE (\(conditions.joined(separator: " OR ")))"
            if let excluded = except[table] { sql += " AND NOT (\(excluded))" }
            if let count = try db.scalarInt(sql, arguments), count > 0 { found.append("\(table).\(column): \(count)") }
        }
    }
    return found
}

/// How SQLite would run the erasure of a user's outbox events (`Outbox.redact`) with `types`
/// many types, in the database at `path`: the lines of its query plan.
public func outboxRedactionPlan(types: Int, path: String) throws -> [String] {
    let db = try Database(path: path, readOnly: true)
    let arguments: [(any SQLBindable)?] = ["redacted", Int64(1)] + (0..<types).map { "type \($0)" }
    return try db.query("EXPLAIN QUERY PLAN " + Outbox.redaction(types: types), arguments).decode("detail", as: String.self)
}
