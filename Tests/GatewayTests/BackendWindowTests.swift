import Bus
import Foundation
@testable import Gateway
import ServiceCore
import Testing

/// How many requests the gateway keeps in flight to a backend: a window per server that
/// answers, so per endpoint when requests are spread, and one for a replicated backend, whose
/// leader alone answers.
@Suite struct BackendWindowTests {
    @Test func aReplicatedBackendGetsOneWindowAndASpreadOneAWindowPerEndpoint() throws {
        let endpoints = ["tcp://127.0.0.1:1", "tcp://127.0.0.1:2", "tcp://127.0.0.1:3"]
        let backends = try Backends(
            context: try ZMQContext(),
            peers: ["catalog": PeerEndpoints(rpc: endpoints, followsLeader: true), "search": PeerEndpoints(rpc: endpoints)], window: 16,
            logger: Logger(component: "test", level: .error), checkIntervalMilliseconds: nil)
        defer { backends.close() }
        #expect(backends.fairQueues.map(\.window).sorted() == [16, 48])
        #expect(backends.client(for: "catalog")?.replicaCount == 3 && backends.client(for: "search")?.replicaCount == 0)
    }
}
