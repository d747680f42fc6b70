import Bus
import Contracts
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Three real `tourbus-catalog` replicas on loopback (issue 34): writes only through the
/// leader, on every replica once acknowledged, nothing lost when the leader is killed, and a
/// killed replica back from its own Raft log.
@Suite(.serialized) struct ReplicatedCatalogTests {
    let scratch = TemporaryFolder("replicated")
    let context: ZMQContext
    let logger = Logger(component: "test", level: .error)
    let raft: [String]

    init() throws {
        context = try ZMQContext()
        raft = try (1...3).map { _ in "127.0.0.1:\(try HTTPProbe.freePort())" }
    }

    /// Replica `n` (1 to 3) on its own folder. A replica is ready once a leader has the schema,
    /// so several start together.
    func start(_ replicas: [Int]) throws -> [Int: ChildProcess] {
        let started = Locked<[Int: Result<UncheckedChild, ServiceError>]>([:])
        DispatchQueue.concurrentPerform(iterations: replicas.count) { index in
            let n = replicas[index]
            do {
                let child = try ChildProcess(
                    "tourbus-catalog", folder: "\(scratch.path)/replica-\(n)",
                    arguments: ["--bind", "tcp://127.0.0.1:0", "--raft", raft.joined(separator: ","), "--replica", String(n)])
                started.withLock { $0[n] = .success(UncheckedChild(child)) }
            } catch {
                started.withLock { $0[n] = .failure(ServiceError(.unavailable, "replica \(n): \(error)")) }
            }
        }
        return try started.value.mapValues { try $0.get().child }
    }

    func stats(_ replica: ChildProcess) -> ServiceStats.Replication? {
        guard let client = try? RPCClient(context: context, endpoints: [replica.rpc], logger: logger) else { return nil }
        defer { client.close() }
        return (try? client.call("sys.stats", Empty(), as: ServiceStats.self, timeoutMilliseconds: 1_000))?.replication
    }

    /// The replica that leads and takes writes, within 20 s.
    func leader(of replicas: [Int: ChildProcess]) -> Int? {
        var found: Int?
        _ = eventually(seconds: 20) {
            found = replicas.first { stats($0.value)?.ready == true }?.key
            return found != nil
        }
        return found
    }

    func client(_ replica: ChildProcess) throws -> RPCClient {
        try RPCClient(context: context, endpoints: [replica.rpc], logger: logger)
    }

    @Test func writesGoThroughTheLeaderAndSurviveItsDeath() throws {
        var replicas = try start([1, 2, 3])
        let first = try #require(leader(of: replicas))
        let writer = try client(replicas[first]!)
        var ids: [Int64] = []
        for n in 0..<20 {
            ids.append(try writer.call("catalog.create", PlaceInput(name: "Replicated \(n)", category: "cafe", lat: 60.17, lon: 24.94), as: Place.self).id)
        }
        writer.close()
        let roles = replicas.mapValues { stats($0)?.role }
        #expect(roles.values.filter { $0 == "leader" }.count == 1 && roles.values.filter { $0 == "follower" }.count == 2, "\(roles)")

        for (n, replica) in replicas where n != first {
            let follower = try client(replica)
            defer { follower.close() }
            // Acknowledged means held by a majority; this follower has it once it has applied it.
            #expect(eventually { (try? follower.call("catalog.get", ["id": ids.last!], as: LocalizedPlace.self)) != nil }, "replica \(n)")
            for id in ids { #expect((try? follower.call("catalog.get", ["id": id], as: LocalizedPlace.self))?.place.name == "Replicated \(id - ids[0])") }
            var refusal: ServiceError?
            do {
                _ = try follower.call("catalog.create", PlaceInput(name: "Alone", category: "cafe", lat: 0, lon: 0), as: Place.self)
            } catch {
                refusal = error
            }
            let said = refusal.map { "\($0)" } ?? "took the write"
            #expect(refusal?.code == .unavailable && said.contains("not the leader") && said.contains("replica \(first)"), "replica \(n): \(said)")
        }

        // The leader is killed: another takes writes, with every acknowledged one (how soon is
        // bench/replication's figure, not a test's).
        #expect(replicas[first]!.stop(with: SIGKILL) == .signal(SIGKILL))
        let survivors = replicas.filter { $0.key != first }
        let second = try #require(leader(of: survivors))
        let resumed = try client(replicas[second]!)
        var next: Place?
        _ = eventually(seconds: 20) {
            next = try? resumed.call("catalog.create", PlaceInput(name: "After", category: "cafe", lat: 60.17, lon: 24.94), as: Place.self)
            return next != nil
        }
        #expect(next != nil, "no write taken after the leader was killed")
        for id in ids { #expect((try? resumed.call("catalog.get", ["id": id], as: LocalizedPlace.self)) != nil, "place \(id)") }
        resumed.close()

        // The killed replica comes back from its own Raft log, and catches up.
        replicas[first] = try start([first])[first]
        let back = try client(replicas[first]!)
        defer { back.close() }
        #expect(eventually { (try? back.call("catalog.get", ["id": next?.id ?? -1], as: LocalizedPlace.self)) != nil })
        #expect(stats(replicas[first]!)?.role == "follower")
        for replica in replicas.values { #expect(replica.terminate() == 0) }
    }
}

/// A child handed from the thread that started it to the test's.
struct UncheckedChild: @unchecked Sendable {
    let child: ChildProcess
    init(_ child: ChildProcess) { self.child = child }
}
