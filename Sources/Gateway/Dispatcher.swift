import Bus
import Foundation
import ServiceKit

/// The answer to one gateway command, before either framing formats it.
enum Outcome: Sendable {
    /// A JSON result, as bytes.
    case result(Data)
    /// The answer to `ping` (`+PONG` in RESP, `"pong"` in JSON-RPC).
    case pong
    /// An error from the closed set.
    case failure(ServiceError)
}

/// One command model for both framings: a method and a params object, answered by an `Outcome`.
///
/// Built-ins (`ping`, `help`, `gateway.status`) are answered here; any other method goes
/// to the service its prefix names (`catalog.get` → `catalog`).
final class Dispatcher: Sendable {
    let backends: Backends
    let defaultDeadlineMilliseconds: Int
    let connections: ConnectionCount
    let maxConnections: Int

    init(backends: Backends, defaultDeadlineMilliseconds: Int, connections: ConnectionCount, maxConnections: Int) {
        self.backends = backends
        self.defaultDeadlineMilliseconds = defaultDeadlineMilliseconds
        self.connections = connections
        self.maxConnections = maxConnections
    }

    /// The gateway's own methods and what they do.
    static let builtIns: [(method: String, description: String)] = [
        ("ping", "liveness of the gateway itself"),
        ("help", "every method with a one-line description"),
        ("gateway.status", "each backend: up or down, latency, last error; open client connections"),
    ]

    /// Answers a command: at once (returns the outcome) or later (returns nil and calls `completion`
    /// exactly once, on another thread).
    func dispatch(method: String, params: Data, deadlineMilliseconds: Int?,
                  completion: @escaping @Sendable (Outcome) -> Void) -> Outcome? {
        if let requested = deadlineMilliseconds, requested <= 0 {
            return .failure(ServiceError.invalid("deadline_ms", "must be a positive number of milliseconds"))
        }
        switch method {
        case "ping": return .pong
        case "help": return encoded(help())
        case "gateway.status": return encoded(Status(backends: backends.status(), connections: .init(open: connections.value, limit: maxConnections)))
        default: break
        }
        guard let dot = method.firstIndex(of: "."), dot != method.startIndex,
              !method.hasPrefix("sys."), let client = backends.client(for: String(method[..<dot])) else {
            return .failure(Dispatcher.unknownMethod(method))
        }
        let service = String(method[..<dot])
        let deadline = min(deadlineMilliseconds ?? defaultDeadlineMilliseconds, defaultDeadlineMilliseconds)
        let ownDeadline = deadline < defaultDeadlineMilliseconds
        let backends = self.backends
        client.send(type: method, body: params, timeoutMilliseconds: deadline) { result in
            switch result {
            case .success(let reply):
                completion(.result(reply.bodyJSON))
            case .failure(let error):
                // A deadline the client shortened says nothing about the backend.
                if !(ownDeadline && error.code == .deadlineExceeded) { backends.noteFailure(service, error) }
                // The backend does not know the type: to the client it is an unknown method.
                if error.code == .notFound && error.field == "type" {
                    completion(.failure(Dispatcher.unknownMethod(method)))
                } else {
                    completion(.failure(error))
                }
            }
        }
        return nil
    }

    static func unknownMethod(_ method: String) -> ServiceError {
        ServiceError(.notFound, "unknown method '\(method)'; try help", field: "method")
    }

    struct Status: Encodable {
        struct Connections: Encodable {
            var open: Int
            var limit: Int
        }
        var backends: [BackendHealth]
        var connections: Connections
    }

    struct Help: Encodable {
        struct Entry: Encodable {
            var method: String
            var description: String
        }
        var methods: [Entry]
        /// Services that are configured but whose methods are not known yet (down since start).
        var unavailable: [String]
    }

    private func help() -> Help {
        let known = backends.knownMethods()
        var entries = Dispatcher.builtIns.map { Help.Entry(method: $0.method, description: $0.description) }
        for service in known.keys.sorted() {
            entries += (known[service]?.methods ?? []).map { Help.Entry(method: $0.type, description: $0.description) }
        }
        let missing = backends.status().map(\.service).filter { known[$0] == nil }
        return Help(methods: entries, unavailable: missing)
    }

    private func encoded<T: Encodable>(_ value: T) -> Outcome {
        do {
            return .result(try JSONCoding.encoder.encode(value))
        } catch {
            return .failure(ServiceError(.internal, "could not encode the answer"))
        }
    }
}
