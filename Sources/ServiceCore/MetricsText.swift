import Bus
import Contracts
import Foundation

/// Prometheus text exposition (format 0.0.4) written by hand: each family's `# HELP` and
/// `# TYPE` lines, then its samples, one family after another.
///
/// Label values are escaped as the format says (`\\`, `\"`, `\n`). Every label value a Tourbus
/// process writes comes from a closed set (its own request types, the error codes, its peers'
/// names), so the number of series is bounded.
public struct MetricsText: Sendable {
    /// The content type of the format, for the HTTP reply.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The text so far.
    public private(set) var text = ""

    public init() {}

    /// Starts a family: its name, type (`counter`, `gauge`, `histogram`) and one line of help.
    public mutating func family(_ name: String, _ type: String, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    /// One sample of the current family.
    public mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: String) {
        sample(name, Array(labels).map { ($0.key, $0.value) }, value)
    }

    /// One sample of the current family, labels as pairs.
    public mutating func sample(_ name: String, _ labels: [(String, String)], _ value: String) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(MetricsText.escape($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " \(value)\n"
    }

    /// A label value escaped for the text format.
    static func escape(_ value: String) -> String {
        var out = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A float as the format writes it (`+Inf` for infinity).
    static func number(_ value: Double) -> String {
        value.isInfinite ? (value > 0 ? "+Inf" : "-Inf") : "\(value)"
    }

    // MARK: What Tourbus processes expose

    /// A request server's counters: `tourbus_requests_total`, `tourbus_request_errors_total`,
    /// `tourbus_request_duration_seconds` (a histogram) by method, and
    /// `tourbus_requests_in_flight`.
    public mutating func requests(service: String, _ methods: [String: MethodMetrics], inFlight: Int?) {
        let sorted = methods.sorted { $0.key < $1.key }
        family("tourbus_requests_total", "counter", "Requests answered, by method (request type; unknown for one not in the table).")
        for (method, m) in sorted {
            sample("tourbus_requests_total", ["service": service, "method": method], "\(m.count)")
        }
        family("tourbus_request_errors_total", "counter", "Requests answered with an error, by method and error code.")
        for (method, m) in sorted {
            for (code, count) in m.errors.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                sample("tourbus_request_errors_total", ["service": service, "method": method, "code": code.rawValue], "\(count)")
            }
        }
        family("tourbus_request_duration_seconds", "histogram", "Time from receiving a request to its answer, by method.")
        for (method, m) in sorted {
            var cumulative = 0
            for (i, bound) in (MethodMetrics.bounds + [Double.infinity]).enumerated() {
                cumulative += m.buckets[i]
                sample("tourbus_request_duration_seconds_bucket", ["service": service, "method": method, "le": MetricsText.number(bound)], "\(cumulative)")
            }
            sample(
                "tourbus_request_duration_seconds_sum", ["service": service, "method": method],
                MetricsText.number(Double(m.sumNanoseconds) / 1e9))
            sample("tourbus_request_duration_seconds_count", ["service": service, "method": method], "\(m.count)")
        }
        if let inFlight {
            family("tourbus_requests_in_flight", "gauge", "Requests accepted and not yet answered.")
            sample("tourbus_requests_in_flight", ["service": service], "\(inFlight)")
        }
    }

    /// Where each event subscriber is: `tourbus_subscriber_cursor`, the publisher's head it
    /// last heard (`tourbus_subscriber_head`) and the difference (`tourbus_subscriber_lag`), by source.
    public mutating func subscribers(service: String, _ statuses: [SubscriberStatus]) {
        guard !statuses.isEmpty else { return }
        let sorted = statuses.sorted { $0.source < $1.source }
        family("tourbus_subscriber_cursor", "gauge", "Last event seq applied from a source.")
        for s in sorted { sample("tourbus_subscriber_cursor", ["service": service, "source": s.source], "\(s.seq)") }
        family("tourbus_subscriber_head", "gauge", "The source's outbox head as last heard (event, heartbeat or replay).")
        for s in sorted { sample("tourbus_subscriber_head", ["service": service, "source": s.source], "\(s.head)") }
        family("tourbus_subscriber_lag", "gauge", "Events the subscriber is behind the head it last heard.")
        for s in sorted { sample("tourbus_subscriber_lag", ["service": service, "source": s.source], "\(s.lag)") }
    }

    /// `tourbus_curve_handshakes_total` by decision (`admitted`, `refused`), on a secured bus.
    public mutating func curve(service: String, admitted: Int, refused: Int) {
        family("tourbus_curve_handshakes_total", "counter", "CURVE handshakes the ZAP handler decided, by decision.")
        sample("tourbus_curve_handshakes_total", ["service": service, "decision": "admitted"], "\(admitted)")
        sample("tourbus_curve_handshakes_total", ["service": service, "decision": "refused"], "\(refused)")
    }
}
