import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Structured log lines (logfmt) on stderr, filtered by level.
///
/// The level comes from `LOG_LEVEL` (`debug`, `info`, `warn`, `error`; default `info`).
public struct Logger: Sendable {
    /// Severity, lowest first.
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warn, error

        /// Parses `debug`/`info`/`warn`/`warning`/`error`, any case.
        public init?(name: String) {
            switch name.lowercased() {
            case "debug": self = .debug
            case "info": self = .info
            case "warn", "warning": self = .warn
            case "error": self = .error
            default: return nil
            }
        }

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var name: String { ["debug", "info", "warn", "error"][rawValue] }
    }

    /// The component named in every line (`catalog`, `gateway`).
    public let component: String
    /// Lines below this level are skipped.
    public let minimum: Level
    private let sink: @Sendable (String) -> Void

    /// A logger writing to stderr at `level`, by default the one `LOG_LEVEL` names.
    public init(component: String, level: Level? = nil) {
        self.init(
            component: component, level: level,
            sink: { line in
                var bytes = Array(line.utf8)
                _ = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            })
    }

    /// A logger writing each finished line (with its newline) to `sink`; tests capture logs this way.
    public init(component: String, level: Level? = nil, sink: @escaping @Sendable (String) -> Void) {
        self.component = component
        self.minimum = level ?? ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Level.init(name:)) ?? .info
        self.sink = sink
    }

    /// The same sink and level for another component.
    public func named(_ component: String) -> Logger { Logger(component: component, level: minimum, sink: sink) }

    public func debug(_ message: String, _ fields: KeyValuePairs<String, Any> = [:]) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: KeyValuePairs<String, Any> = [:]) { log(.info, message, fields) }
    public func warn(_ message: String, _ fields: KeyValuePairs<String, Any> = [:]) { log(.warn, message, fields) }
    public func error(_ message: String, _ fields: KeyValuePairs<String, Any> = [:]) { log(.error, message, fields) }

    /// Writes one line if `level` passes the filter.
    public func log(_ level: Level, _ message: String, _ fields: KeyValuePairs<String, Any>) {
        log(level, message, fields: fields.map { (key: $0.key, value: $0.value) })
    }

    /// Writes one line if `level` passes the filter, with fields chosen at run time (a key
    /// that depends on the case, such as `status` or `signal`), in the order given.
    public func log(_ level: Level, _ message: String, fields: [(key: String, value: Any)]) {
        guard level >= minimum else { return }
        var line = "ts=\(Logger.timestamp()) level=\(level.name) component=\(component) msg=\(Logger.quote(message))"
        for (key, value) in fields { line += " \(key)=\(Logger.quote(String(describing: value)))" }
        sink(line + "\n")
    }

    static func quote(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { $0.value > 32 && $0.value < 127 && $0 != "\"" && $0 != "=" && $0 != "\\" }
        if plain { return value }
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 32 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }

    /// ISO-8601 UTC with milliseconds (`2026-11-29T17:33:42.123Z`), the format of every
    /// timestamp Tourbus writes.
    public static func timestamp(_ date: Date = Date()) -> String {
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(millis / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // By hand, not String(format:): every write stamps its row and its event, and
        // Foundation's formatting cost ~20,000 instructions a call (callgrind-create).
        var text = ""
        text.reserveCapacity(24)
        func append(_ value: Int, width: Int, then separator: String) {
            let digits = String(value)
            if digits.utf8.count < width { text += String(repeating: "0", count: width - digits.utf8.count) }
            text += digits
            text += separator
        }
        append(Int(parts.tm_year) + 1900, width: 4, then: "-")
        append(Int(parts.tm_mon) + 1, width: 2, then: "-")
        append(Int(parts.tm_mday), width: 2, then: "T")
        append(Int(parts.tm_hour), width: 2, then: ":")
        append(Int(parts.tm_min), width: 2, then: ":")
        append(Int(parts.tm_sec), width: 2, then: ".")
        append(Int(millis % 1000), width: 3, then: "Z")
        return text
    }
}
