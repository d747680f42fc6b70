import Bus
import Foundation
@testable import Gateway
import ServiceCore
import Testing

/// How many requests the gateway keeps in flight to a backend: a window per endpoint, for a
/// replicated backend too, whose leader alone answers but whose writes also wait for a majority.
@Suite struct BackendWindowTests {
    @Test func aReplicatedBackendGetsAWindowPerReplicaAsASpreadOneDoesPerEndpoint() throws {
        let endpoints = ["tcp://127.0.0.1:1", "tcp://127.0.0.1:2", "tcp://127.0.0.1:3"]
        let backends = try Backends(
            context: try ZMQContext(),
            peers: ["catalog": PeerEndpoints(rpc: endpoints, followsLeader: true), "search": PeerEndpoints(rpc: endpoints)], window: 16,
            logger: Logger(component: "test", level: .error), checkIntervalMilliseconds: nil)
        defer { backends.close() }
        #expect(backends.fairQueues.map(\.window).sorted() == [48, 48])
        #expect(backends.client(for: "catalog")?.replicaCount == 3 && backends.client(for: "search")?.replicaCount == 0)
    }
}
