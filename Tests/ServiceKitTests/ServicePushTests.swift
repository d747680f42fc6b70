import Bus
import Contracts
import Foundation
import ServiceCore
@testable import ServiceKit
import Storage
import Testing
import TestSupport

/// A service's pushes go out on its PUB socket once the work that made them committed, and
/// never for work that was undone.
@Suite(.serialized) struct ServicePushTests {
    final class State: ServiceState {
        let worker: ServiceWorker
        init(worker: ServiceWorker) { self.worker = worker }
    }

    struct Order: Codable, Sendable {
        var n: Int
        var fail: Bool?
    }

    static func push(_ n: Int) -> Push { Push(topic: "toy.done", id: "p\(n)", userId: 5, body: Data(#"{"n":\#(n)}"#.utf8)) }

    @Test func pushesLeaveAfterTheirCommitAndNotForWorkUndone() throws {
        let folder = TemporaryFolder("pushes")
        var config = ServiceConfig(service: "toy")
        config.dataDirectory = folder.path
        var table = HandlerTable<State>()
        // A write that pushes, then fails when asked: its savepoint and its push are undone.
        table.on("toy.write", .write) { (order: Order, _, state) -> Empty in
            try state.worker.db.run("INSERT INTO toys (n) VALUES (?)", Int64(order.n))
            state.worker.push(ServicePushTests.push(order.n))
            if order.fail == true { throw ServiceError(.conflict, "undone") }
            return Empty()
        }
        table.on("toy.read") { (order: Order, _, state) -> Empty in
            state.worker.push(ServicePushTests.push(order.n))
            if order.fail == true { throw ServiceError(.conflict, "undone") }
            return Empty()
        }
        let definition = ServiceDefinition<State>(name: "toy", migrations: [Migration(domain: "toy", version: 1, sql: "CREATE TABLE toys (n INTEGER)")],
                                                  handlers: table, publishes: true, makeState: { State(worker: $0) })
        let context = try ZMQContext()
        let runtime = try ServiceRuntime(definition: definition, config: config, context: context, logger: Logger(component: "toy", level: .error) { _ in })
        defer { runtime.stop() }
        let subscriber = try Socket(context, .sub)
        try subscriber.subscribe("push.")
        try subscriber.setReceiveTimeout(milliseconds: 50)
        for endpoint in runtime.endpoints.publish { try subscriber.connect(endpoint) }
        let client = try RPCClient(context: context, endpoints: runtime.endpoints.rpc, logger: Logger(component: "toy", level: .error) { _ in })
        defer { client.close() }
        // A subscriber joins late: push until one arrives (bounded), then start counting.
        var joined = false
        for n in 0..<100 where !joined {
            _ = try client.request(type: "toy.read", body: Data(#"{"n":\#(1_000 + n)}"#.utf8), timeoutMilliseconds: 2_000)
            joined = try subscriber.receive() != nil
        }
        #expect(joined)
        while try subscriber.receive() != nil {}

        _ = try? client.request(type: "toy.write", body: Data(#"{"n":1}"#.utf8), timeoutMilliseconds: 2_000)
        _ = try? client.request(type: "toy.write", body: Data(#"{"n":2,"fail":true}"#.utf8), timeoutMilliseconds: 2_000)
        _ = try? client.request(type: "toy.read", body: Data(#"{"n":3,"fail":true}"#.utf8), timeoutMilliseconds: 2_000)
        _ = try? client.request(type: "toy.write", body: Data(#"{"n":4}"#.utf8), timeoutMilliseconds: 2_000)
        var ids: [String] = []
        for _ in 0..<20 {
            guard let frames = try subscriber.receive() else { continue }
            ids.append((try? Push.read(frames))?.id ?? "unreadable")
        }
        #expect(ids == ["p1", "p4"])
    }
}
